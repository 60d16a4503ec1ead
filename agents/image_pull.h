// The stateless parts of the agent's image cache (image_cache.h): reading an image reference,
// what a failed skopeo run means for the scheduler, the JSON the cache reads (manifests, image
// configs, an OCI layout's index) and writes (registry credentials for skopeo, the cache's state
// file), and the disk usage of a tree.
//
//   absl::StatusOr<ImageRef> ref = ParseImageRef("127.0.0.1:5000/team/app:1");
//   // ref->registry "127.0.0.1:5000", ref->repository "127.0.0.1:5000/team/app", ref->tag "1"
//   absl::StatusCode code = ClassifyPullFailure(skopeo_stderr);  // kInvalidArgument, ...
//   std::string answer = RegistryAnswer(skopeo_stderr);  // "reading manifest 2 in ...: manifest
//                                                         //  unknown: manifest unknown"
//
// Thread-safe: no state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace trainctl::agent {

// An image reference as skopeo's docker:// transport takes it: [REGISTRY/]PATH[:TAG][@DIGEST].
struct ImageRef {
  // What the user wrote.
  std::string text;
  // The registry's host[:port]: the first path component when it has a '.' or ':' or is
  // "localhost", else "docker.io" (where skopeo goes for "ubuntu:22.04").
  std::string registry;
  // Everything before the tag and digest: "127.0.0.1:5000/team/app", "ubuntu".
  std::string repository;
  // "" for a reference by digest alone; "latest" when neither tag nor digest is given.
  std::string tag;
  // "sha256:<64 hex digits>", or "".
  std::string digest;

  // The name the cache records: repository:tag, or repository@digest for a reference by digest
  // (the tag of "app:1@sha256:..." is dropped: the digest decides).
  std::string Key() const {
    return digest.empty() ? repository + ":" + tag : repository + "@" + digest;
  }
};

// INVALID_ARGUMENT naming `text` when it is empty, has characters no reference has (spaces,
// control characters, quotes), starts with '-', or has a digest that is not sha256:<64 hex>.
// Anything else skopeo judges ("invalid reference format").
absl::StatusOr<ImageRef> ParseImageRef(absl::string_view text);

// What a failed skopeo run says for the scheduler, from the last line of its stderr:
//   kUnavailable      the registry could not be reached or answered with a server error:
//                     connection refused or reset, no such host, timeouts, TLS and certificate
//                     errors (a plain-HTTP registry not listed as insecure), HTTP 5xx and 429;
//   kInvalidArgument  the registry answered and refused: the image, tag or digest is not there
//                     ("manifest unknown", "name unknown", "not found", 404), the credentials are
//                     missing or wrong ("unauthorized", "authentication required", "denied", 401,
//                     403), or the reference is malformed ("invalid reference format");
//   kInternal         anything else (local errors: no space left, permission denied on a path).
// The first matching group in that order wins.
absl::StatusCode ClassifyPullFailure(absl::string_view skopeo_stderr);

// The registry's answer as skopeo reports it: the msg="..." of the last line of its stderr
// (logrus format), unescaped; else that line. Trimmed, valid UTF-8, at most 512 bytes.
std::string RegistryAnswer(absl::string_view skopeo_stderr);

// An image's settings from its config blob (the "config" object of an OCI or Docker image
// config): what a container of it runs and how.
struct ImageConfig {
  std::vector<std::string> env;  // "K=V"
  std::string working_dir;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string user;
};

// An image manifest, or an image index / Docker manifest list, as a registry serves it.
struct ManifestInfo {
  // An index (several platforms): skopeo picks the host's; blobs and total_bytes are unknown.
  bool is_index = false;
  // The config and layers' digests ("sha256:...") of an image manifest.
  std::vector<std::string> blobs;
  // The sum of their sizes as the manifest declares them: what a pull downloads at most.
  int64_t total_bytes = 0;
};
absl::StatusOr<ManifestInfo> ParseManifest(absl::string_view json);

// INTERNAL when `json` is not an image config.
absl::StatusOr<ImageConfig> ParseImageConfig(absl::string_view json);

// An image in an OCI image layout whose blobs lie under `blob_dir` (blob_dir/sha256/<hex>).
struct LayoutImage {
  // The digest of the manifest the layout holds (skopeo may have converted a Docker manifest,
  // so this can differ from the registry's).
  std::string manifest_digest;
  // Every blob the image needs: its manifest, config and layers.
  std::vector<std::string> blobs;
  ImageConfig config;
};
// Reads the image that the layout's index.json (`index_path`) names `tag`. INTERNAL when it is
// not there or its blobs cannot be read or parsed.
absl::StatusOr<LayoutImage> ReadLayoutImage(const std::string& index_path,
                                            const std::string& blob_dir, const std::string& tag);

// The path of blob `digest` ("sha256:...") under `blob_dir`.
std::string BlobPath(const std::string& blob_dir, absl::string_view digest);

// The content of a containers-auth.json file (skopeo --authfile) for `credentials`: a Docker
// config JSON ({"auths": {...}}) as it is, or "USER:PASSWORD" as {"auths": {registry: {"auth":
// base64}}}. INVALID_ARGUMENT (never quoting the credentials) when it is neither.
absl::StatusOr<std::string> AuthFileJson(absl::string_view credentials, absl::string_view registry);

// One image in the cache's state file.
struct StoredImage {
  std::string digest;             // the registry's manifest digest, "sha256:..."
  std::vector<std::string> refs;  // ImageRef::Key()s last resolved to it
  absl::Time last_used;
  int64_t rootfs_bytes = 0;
  std::vector<std::string> blobs;  // LayoutImage::blobs
  ImageConfig config;
};
std::string StateJson(const std::vector<StoredImage>& images);
// INTERNAL when `json` is not a state file; entries without a valid digest are skipped.
absl::StatusOr<std::vector<StoredImage>> ParseStateJson(absl::string_view json);

// The disk space `path` takes (allocated blocks, like du; a tree is walked without following
// symlinks or leaving its file system, each hard-linked inode counted once); 0 if missing.
int64_t DiskBytes(const std::string& path);

// Whether `digest` is "sha256:" followed by 64 lower-case hex digits.
bool IsSha256Digest(absl::string_view digest);

}  // namespace trainctl::agent
