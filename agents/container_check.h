// The check item "container-runtime" of an agent that runs images (container_runtime.h): the
// preflight of a launch with an image, and the periodic and exit runs (node_checks.h), ask
// whether containers can still start here. Three things, each failure saying how to fix it:
//   - `<runc> --version` (--runc) exits 0 within the timeout;
//   - the image dir (--image-dir, else <work dir>/images) is writable: a file can be made there;
//   - overlayfs is listed in /proc/filesystems.
//
//   ContainerCheckConfig config{"runc", "/var/lib/trainctl/images"};
//   CheckResult item = CheckContainerRuntime(config);
//   // item container-runtime passed: runc version 1.1.12, image dir /var/lib/trainctl/images
//   // writable, overlayfs present
//   // item container-runtime failed: `/bin/false --version` failed: exit status 1 (install runc,
//   // apt-get install runc, or point --runc at a working one)
//
// Thread-safe: no state; blocks its caller while runc runs (at most the timeout).
#pragma once

#include <string>

#include "absl/time/time.h"
#include "agents/host_checks.h"

namespace trainctl::agent {

inline constexpr char kContainerRuntimeItem[] = "container-runtime";

struct ContainerCheckConfig {
  // The runc binary (--runc); a name is looked up in the agent's PATH.
  std::string runc = "runc";
  // Where the node's images are kept (--image-dir, default <work dir>/images); made when missing.
  std::string image_dir;
  // `runc --version` is killed once it has run this long.
  absl::Duration timeout = absl::Seconds(5);
  // The kernel's list of filesystems; a test's file in tests.
  std::string filesystems = "/proc/filesystems";
};

// The item: passed when all three hold; otherwise its message names each that does not, with
// the fix, joined with "; ".
CheckResult CheckContainerRuntime(const ContainerCheckConfig& config);

}  // namespace trainctl::agent
