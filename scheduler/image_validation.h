// Validation of a worker pool's container image fields (WorkerPool.image, imagePullPolicy,
// imagePullSecret, mounts) and of an OCI image reference on its own (PrepullImageRequest.image
// too). Pure functions; every error is INVALID_ARGUMENT naming the field in JSON-mapping names,
// as job_validation.h's are:
//
//   workerPools[1].mounts[0].path must be absolute, got "data"
//
// Whether the project holds the imagePullSecret is the server's check at submit
// (Api::CheckSecretRefs), as for secretRefs; where such a pool may run is node_selection.h's.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// The longest image reference accepted.
inline constexpr size_t kMaxImageReferenceLength = 512;
// The most mounts a pool may have.
inline constexpr int kMaxImageMounts = 16;
// The longest hostPath or path of a mount.
inline constexpr size_t kMaxMountPathLength = 4096;

// OK when `image` is an OCI image reference: an optional registry host[:port]/ (a first
// component with a '.' or a ':', or "localhost"), then path components of lowercase letters and
// digits joined by '.', '_', '__' or dashes and separated by '/', then an optional
// :tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}) and/or @sha256:<64 lowercase hex digits>; at most
// kMaxImageReferenceLength characters. Else INVALID_ARGUMENT "<path> must be an OCI image
// reference ...: <what is wrong>; got \"...\"". REQUIRES: !image.empty().
absl::Status ValidateImageReference(const std::string& path, const std::string& image);

// OK when the image fields of `pool` (at `path`, e.g. "workerPools[1]") are valid: the image's
// syntax, a known imagePullPolicy, imagePullSecret and mounts only with an image, the secret's
// name, at most kMaxImageMounts mounts whose hostPath and path are absolute and lexically
// normal, path neither "/" nor under /proc, /sys or /dev, no two with the same path.
absl::Status ValidatePoolImage(const std::string& path, const v1::WorkerPool& pool);

}  // namespace trainctl::sched
