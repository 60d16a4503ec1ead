#include "agents/agent_image_flags.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/flag_values.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::agent {
namespace {

using Kind = FlagSpec::Kind;

bool IsNormalAbsolutePath(const std::string& path) {
  return !path.empty() && path[0] == '/' &&
         std::filesystem::path(path).lexically_normal().string() == path &&
         (path == "/" || path.back() != '/');
}

// --image-bind: HOST[:CONTAINER][:ro], comma-separated.
absl::StatusOr<std::vector<BindMount>> ParseBinds(const std::string& flag, const std::string& v) {
  std::vector<BindMount> out;
  for (absl::string_view item : absl::StrSplit(v, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    BindMount bind;
    if (parts.size() > 1 && parts.back() == "ro") {
      bind.read_only = true;
      parts.pop_back();
    }
    if (parts.empty() || parts.size() > 2) {
      return BadFlagValue(flag, "HOST[:CONTAINER][:ro],...", v);
    }
    bind.source = parts[0];
    bind.destination = parts.size() == 2 ? parts[1] : parts[0];
    if (!IsNormalAbsolutePath(bind.source) || !IsNormalAbsolutePath(bind.destination) ||
        bind.destination == "/") {
      return BadFlagValue(flag, "absolute, normal paths, HOST[:CONTAINER][:ro],...", v);
    }
    out.push_back(std::move(bind));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ParseDirs(const std::string& flag, const std::string& v) {
  std::vector<std::string> out = absl::StrSplit(v, ',', absl::SkipEmpty());
  for (const std::string& dir : out) {
    if (!IsNormalAbsolutePath(dir)) return BadFlagValue(flag, "absolute, normal paths", v);
  }
  return out;
}

}  // namespace

std::string ImageDirOf(const ImageFlags& flags, const std::string& work_dir) {
  return flags.dir.empty() ? work_dir + "/images" : flags.dir;
}

FlagGroup ImageFlagGroup() {
  return {
      "Replicas in container images (a pool with `image`; runc runs them, skopeo pulls, umoci\n"
      "unpacks: the node is labelled trainctl.io/images=true when it can):",
      {{"no-images", 0, Kind::kBool, "", "",
        "run no images on this node even where it could (default: false)"},
       {"image-dir", 0, Kind::kValue, "DIR", "",
        "where pulled images and their unpacked roots are kept (default: --work-dir/images)"},
       {"image-cache-gb", 0, Kind::kValue, "GB", "",
        "the image cache's size limit: past it, the least recently used image no replica uses "
        "is removed; 0 for no limit (default: 100)"},
       {"insecure-registry", 0, Kind::kValue, "HOST:PORT,...", "",
        "registries reached over plain HTTP or unverified TLS: air-gapped mirrors, tests "
        "(default: none)"},
       {"image-pull-timeout", 0, Kind::kValue, "DURATION", "",
        "a pull that runs longer is killed and the launch retried later; pulls do not count "
        "against the job's launchTimeout (default: 30m)"},
       {"image-bind", 0, Kind::kValue, "HOST[:CTR][:ro],...", "",
        "host paths every container gets, e.g. /datasets:/data:ro (default: none)"},
       {"image-mount-roots", 0, Kind::kValue, "DIR,...", "",
        "where a job's mounts (workerPools[].mounts) may come from: each hostPath must lie "
        "under one of these (default: none: jobs mount nothing)"},
       {"cdi-dirs", 0, Kind::kValue, "DIR,...", "",
        "where the GPUs' CDI specs are read, a later directory winning "
        "(default: /etc/cdi,/var/run/cdi)"},
       {"cdi-gpu-kind", 0, Kind::kValue, "KIND", "",
        "the CDI kind of this node's GPUs: GPU N is device KIND=N "
        "(default: nvidia.com/gpu)"},
       {"runc", 0, Kind::kValue, "FILE", "", "the runc binary (default: runc, from PATH)"}}};
}

std::map<std::string, ImageFlagSetter> ImageFlagSetters(ImageFlags* flags) {
  return {
      {"--no-images",
       [flags](auto& f, auto& v) {
         TC_ASSIGN_OR_RETURN(flags->disabled, ParseBoolFlag(f, v));
         return absl::OkStatus();
       }},
      {"--image-dir",
       [flags](auto& f, auto& v) {
         if (!IsNormalAbsolutePath(v)) return BadFlagValue(f, "an absolute, normal path", v);
         flags->dir = v;
         return absl::OkStatus();
       }},
      {"--image-cache-gb",
       [flags](auto& f, auto& v) {
         double gb;
         if (!absl::SimpleAtod(v, &gb) || !std::isfinite(gb) || gb < 0 || gb > (1 << 20)) {
           return BadFlagValue(f, "a number of GB, 0 for no limit", v);
         }
         flags->cache_bytes = static_cast<int64_t>(gb * (1 << 30));
         return absl::OkStatus();
       }},
      {"--insecure-registry",
       [flags](auto& f, auto& v) {
         std::vector<std::string> hosts = absl::StrSplit(v, ',', absl::SkipEmpty());
         for (const std::string& host : hosts) {
           if (host.find('/') != std::string::npos || host.find(':') == std::string::npos) {
             return BadFlagValue(f, "HOST:PORT,... e.g. 10.0.0.5:5000", v);
           }
         }
         flags->insecure_registries = std::move(hosts);
         return absl::OkStatus();
       }},
      {"--image-pull-timeout",
       [flags](auto& f, auto& v) {
         TC_ASSIGN_OR_RETURN(int64_t ms,
                             ParseDurationFlag(f, v, 1000, std::numeric_limits<int64_t>::max(),
                                               "a duration like 30m"));
         flags->pull_timeout = absl::Milliseconds(ms);
         return absl::OkStatus();
       }},
      {"--image-bind",
       [flags](auto& f, auto& v) {
         TC_ASSIGN_OR_RETURN(flags->binds, ParseBinds(f, v));
         return absl::OkStatus();
       }},
      {"--image-mount-roots",
       [flags](auto& f, auto& v) {
         TC_ASSIGN_OR_RETURN(flags->mount_roots, ParseDirs(f, v));
         return absl::OkStatus();
       }},
      {"--cdi-dirs",
       [flags](auto& f, auto& v) {
         TC_ASSIGN_OR_RETURN(flags->cdi_dirs, ParseDirs(f, v));
         return absl::OkStatus();
       }},
      {"--cdi-gpu-kind",
       [flags](auto& f, auto& v) {
         if (v.find('/') == std::string::npos || v.find('=') != std::string::npos) {
           return BadFlagValue(f, "a CDI kind, vendor/class, e.g. nvidia.com/gpu", v);
         }
         flags->cdi_gpu_kind = v;
         return absl::OkStatus();
       }},
      {"--runc",
       [flags](auto& f, auto& v) {
         if (v.empty()) return BadFlagValue(f, "a program", v);
         flags->runc = v;
         return absl::OkStatus();
       }},
  };
}

std::vector<std::pair<std::string, std::string>> ImageConfigEntries(const ImageFlags& flags) {
  std::vector<std::string> binds;
  for (const BindMount& b : flags.binds) {
    binds.push_back(absl::StrCat(b.source, b.destination == b.source ? "" : ":" + b.destination,
                                 b.read_only ? ":ro" : ""));
  }
  return {
      {"no-images", flags.disabled ? "true" : "false"},
      {"image-dir", flags.dir},
      {"image-cache-gb", absl::StrCat(static_cast<double>(flags.cache_bytes) / (1 << 30))},
      {"insecure-registry", absl::StrJoin(flags.insecure_registries, ",")},
      {"image-pull-timeout", FormatDurationExact(absl::ToInt64Milliseconds(flags.pull_timeout))},
      {"image-bind", absl::StrJoin(binds, ",")},
      {"image-mount-roots", absl::StrJoin(flags.mount_roots, ",")},
      {"cdi-dirs", absl::StrJoin(flags.cdi_dirs, ",")},
      {"cdi-gpu-kind", flags.cdi_gpu_kind},
      {"runc", flags.runc},
  };
}

}  // namespace trainctl::agent
