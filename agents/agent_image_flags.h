// trainctl-agent's flags for replicas in container images (container_runtime.h): where images
// are kept and how big the cache may grow, which registries are plain HTTP, what host paths
// containers get, where the GPUs' CDI specs are. A part of the agent's flags (agent_flags.h) kept
// apart: the group --help prints, the setters of the parser, and the settings they fill.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agents/container_launch.h"
#include "common/flags.h"

namespace trainctl::agent {

struct ImageFlags {
  // --no-images: the node runs no images even where it could.
  bool disabled = false;
  // --image-dir; "": <work dir>/images.
  std::string dir;
  // --image-cache-gb in bytes; 0: no limit.
  int64_t cache_bytes = int64_t{100} << 30;
  // --insecure-registry, each HOST:PORT.
  std::vector<std::string> insecure_registries;
  // --image-pull-timeout.
  absl::Duration pull_timeout = absl::Minutes(30);
  // --image-bind, each HOST[:CONTAINER][:ro].
  std::vector<BindMount> binds;
  // --image-mount-roots.
  std::vector<std::string> mount_roots;
  // --cdi-dirs; empty: DefaultCdiDirs().
  std::vector<std::string> cdi_dirs;
  // --cdi-gpu-kind.
  std::string cdi_gpu_kind = kDefaultCdiGpuKind;
  // --runc.
  std::string runc = "runc";
};

// Where the node's images are kept: --image-dir, else <work_dir>/images.
std::string ImageDirOf(const ImageFlags& flags, const std::string& work_dir);

// The flags' group as --help lists it.
FlagGroup ImageFlagGroup();

using ImageFlagSetter = std::function<absl::Status(const std::string& flag, const std::string& v)>;
// The parser's setters of the flags ("--image-dir" -> ...), writing into `*flags`.
std::map<std::string, ImageFlagSetter> ImageFlagSetters(ImageFlags* flags);

// The flags' values as the configuration file writes them (--print-config).
std::vector<std::pair<std::string, std::string>> ImageConfigEntries(const ImageFlags& flags);

}  // namespace trainctl::agent
