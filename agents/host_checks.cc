#include "agents/host_checks.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agents/host_commands.h"
#include "agents/host_resources.h"
#include "common/index_list.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

constexpr double kBytesPerGb = 1e9;

CheckResult Result(std::string item, bool passed, std::string measured, std::string threshold,
                   std::string message) {
  return CheckResult{std::move(item), passed, std::move(measured), std::move(threshold),
                     std::move(message)};
}

// One limit of the `ulimit` item, in the unit ulimit(1) shows.
struct Limit {
  const char* name;
  int resource;
  // getrlimit's unit per shown unit: 1024 for limits shown in KiB.
  uint64_t divisor;
  const char* unit;
  uint64_t minimum;
};

std::string ShowLimit(uint64_t value, const char* unit) {
  if (value == HostProbe::kUnlimited) return "unlimited";
  return absl::StrCat(value, unit);
}

}  // namespace

absl::StatusOr<uint64_t> RealHostProbe::FreeBytes(const std::string& path) const {
  struct statvfs fs;
  if (statvfs(path.c_str(), &fs) != 0) {
    return absl::NotFoundError(absl::StrCat("statvfs ", path, ": ", strerror(errno)));
  }
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

absl::Status RealHostProbe::Resolve(const std::string& hostname) const {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(hostname.c_str(), nullptr, &hints, &found);
  if (found != nullptr) freeaddrinfo(found);
  if (rc != 0) return absl::NotFoundError(absl::StrCat(hostname, ": ", gai_strerror(rc)));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RealHostProbe::SoftLimit(int resource) const {
  rlimit limit;
  if (getrlimit(resource, &limit) != 0) {
    return absl::InternalError(absl::StrCat("getrlimit: ", strerror(errno)));
  }
  if (limit.rlim_cur == RLIM_INFINITY) return kUnlimited;
  return static_cast<uint64_t>(limit.rlim_cur);
}

absl::StatusOr<std::vector<int32_t>> RealHostProbe::GpuIndices() const {
  if (!OnPath("nvidia-smi")) return NvidiaDeviceMinors();
  absl::StatusOr<std::string> out =
      CommandOutput("nvidia-smi --query-gpu=index --format=csv,noheader");
  if (!out.ok()) return out.status();
  std::vector<int32_t> indices;
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipWhitespace())) {
    int32_t index;
    if (!absl::SimpleAtoi(line, &index)) {
      return absl::InternalError(absl::StrCat("nvidia-smi printed \"", line, "\", not an index"));
    }
    indices.push_back(index);
  }
  return indices;
}

CheckResult CheckDns(const std::vector<std::string>& hostnames, const HostProbe& probe) {
  std::vector<std::string> failed;
  std::vector<std::string> errors;
  for (const std::string& hostname : hostnames) {
    if (absl::Status s = probe.Resolve(hostname); !s.ok()) {
      failed.push_back(hostname);
      errors.emplace_back(s.message());
    }
  }
  const std::string threshold = "every hostname resolves";
  if (failed.empty()) {
    return Result("dns", true, "", threshold,
                  absl::StrCat(hostnames.size(), " of ", hostnames.size(), " hostnames resolve"));
  }
  return Result("dns", false, absl::StrJoin(failed, ","), threshold,
                absl::StrCat(failed.size(), " of ", hostnames.size(),
                             " hostnames do not resolve: ", absl::StrJoin(errors, "; ")));
}

CheckResult CheckDiskSize(const std::string& name, const DiskThreshold& threshold,
                          const HostProbe& probe) {
  std::string item = absl::StrCat("disk-size ", name);
  std::string need = absl::StrCat("> ", threshold.min_free_gb, " GB");
  absl::StatusOr<uint64_t> free_bytes = probe.FreeBytes(threshold.path);
  if (!free_bytes.ok()) {
    return Result(item, false, "", need,
                  absl::StrCat("cannot read the free space of ", threshold.path, ": ",
                               free_bytes.status().message()));
  }
  double free_gb = static_cast<double>(*free_bytes) / kBytesPerGb;
  std::string measured = absl::StrFormat("%.1f GB free", free_gb);
  if (free_gb > threshold.min_free_gb) {
    return Result(item, true, measured, need, absl::StrCat(measured, " ", need));
  }
  return Result(item, false, measured, need, absl::StrCat(measured, ", need ", need));
}

CheckResult CheckUlimit(const HostCheckConfig& config, const HostProbe& probe) {
  const Limit limits[] = {
      {"memlock", RLIMIT_MEMLOCK, 1024, " KiB", config.min_memlock_kib},
      {"nofile", RLIMIT_NOFILE, 1, "", config.min_nofile},
      {"stack", RLIMIT_STACK, 1024, " KiB", config.min_stack_kib},
      {"nproc", RLIMIT_NPROC, 1, "", config.min_nproc},
  };
  std::vector<std::string> measured, thresholds, passes, failures;
  for (const Limit& limit : limits) {
    std::string need = absl::StrCat("> ", limit.minimum, limit.unit);
    thresholds.push_back(absl::StrCat(limit.name, " ", need));
    absl::StatusOr<uint64_t> value = probe.SoftLimit(limit.resource);
    if (!value.ok()) {
      measured.push_back(absl::StrCat(limit.name, " unknown"));
      failures.push_back(absl::StrCat(limit.name, " unknown (", value.status().message(), ")"));
      continue;
    }
    uint64_t shown = *value == HostProbe::kUnlimited ? *value : *value / limit.divisor;
    std::string seen = absl::StrCat(limit.name, " ", ShowLimit(shown, limit.unit));
    measured.push_back(seen);
    if (shown == HostProbe::kUnlimited || shown > limit.minimum) {
      passes.push_back(absl::StrCat(seen, " ", need));
    } else {
      failures.push_back(absl::StrCat(seen, ", need ", need));
    }
  }
  bool passed = failures.empty();
  return Result("ulimit", passed, absl::StrJoin(measured, ", "), absl::StrJoin(thresholds, ", "),
                absl::StrJoin(passed ? passes : failures, "; "));
}

CheckResult CheckGpus(const CheckRequest& request, const HostProbe& probe) {
  const std::vector<int32_t>& wanted = request.gpu_devices;
  const int32_t gpus_needed = request.gpus_needed;
  std::string need = wanted.empty() ? absl::StrCat(">= ", gpus_needed, " GPUs")
                                    : absl::StrCat("GPUs ", FormatIndexList(wanted));
  if (wanted.empty() && gpus_needed <= 0) {
    return Result("gpu-check", true, "", need, "no GPUs needed");
  }
  absl::StatusOr<std::vector<int32_t>> gpus = probe.GpuIndices();
  if (!gpus.ok()) {
    return Result("gpu-check", false, "", need,
                  absl::StrCat("cannot list GPUs: ", gpus.status().message()));
  }
  std::string measured = absl::StrCat(gpus->size(), " GPUs detected");
  if (wanted.empty()) {
    if (static_cast<int32_t>(gpus->size()) >= gpus_needed) {
      return Result("gpu-check", true, measured, need,
                    absl::StrCat(measured, ", ", gpus_needed, " needed"));
    }
    return Result("gpu-check", false, measured, need, absl::StrCat(measured, ", need ", need));
  }
  std::vector<int32_t> missing;
  for (int32_t index : wanted) {
    if (std::find(gpus->begin(), gpus->end(), index) == gpus->end()) missing.push_back(index);
  }
  if (missing.empty()) {
    return Result("gpu-check", true, measured, need, absl::StrCat(need, " present, ", measured));
  }
  return Result(
      "gpu-check", false, measured, need,
      absl::StrCat(missing.size() == 1 ? "GPU " : "GPUs ", FormatIndexList(missing), " of ", need,
                   missing.size() == 1 ? " is" : " are", " missing; ", measured,
                   gpus->empty() ? "" : absl::StrCat(": ", FormatIndexList(*gpus))));
}

std::vector<CheckResult> RunChecks(const HostCheckConfig& config, const HostProbe& probe,
                                   const CheckRequest& request) {
  std::vector<CheckResult> results;
  results.push_back(CheckDns(request.hostnames, probe));
  results.push_back(CheckDiskSize("root", config.root, probe));
  results.push_back(CheckDiskSize("shm", config.shm, probe));
  results.push_back(CheckDiskSize("cache", config.cache, probe));
  if (config.infiniband) results.push_back(CheckUlimit(config, probe));
  results.push_back(CheckGpus(request, probe));
  return results;
}

std::string FormatCheckResult(const CheckResult& result) {
  return absl::StrCat("item ", result.item,
                      result.passed ? " passed: " : " failed: ", result.message);
}

void LogCheckResults(const std::vector<CheckResult>& results, absl::string_view context) {
  for (const CheckResult& result : results) {
    if (result.passed) {
      spdlog::info("{}{}", std::string(context), FormatCheckResult(result));
    } else {
      spdlog::warn("{}{}", std::string(context), FormatCheckResult(result));
    }
  }
}

}  // namespace trainctl::agent
