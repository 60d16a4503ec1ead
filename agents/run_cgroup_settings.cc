#include "agents/run_cgroup_settings.h"

#include <sys/stat.h>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agents/cgroup_text.h"
#include "agents/device_filter.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace {

// The values Detect() proves a controller with.
constexpr int64_t kProbeMemoryBytes = 64 << 20;
constexpr int64_t kProbePidsMax = 32768;
// Denied on the probe only, which has no tasks.
constexpr int kProbeDeniedMinor = 0;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

absl::StatusOr<std::string> ReadValue(const std::string& path) {
  absl::StatusOr<std::string> text = ReadCgroupFile(path);
  if (!text.ok()) return text.status();
  return std::string(absl::StripAsciiWhitespace(*text));
}

absl::Status ApplyMemory(CgroupVersion version, const std::string& dir, int64_t limit_bytes) {
  const std::string limit = absl::StrCat(limit_bytes);
  if (version == CgroupVersion::kV2) {
    TC_RETURN_IF_ERROR(WriteCgroupFile(dir + "/memory.max", limit));
    if (Exists(dir + "/memory.swap.max")) return WriteCgroupFile(dir + "/memory.swap.max", "0");
    return absl::OkStatus();
  }
  // memsw (memory + swap) must not go below the memory limit, so it is written second; a
  // leftover larger memsw limit of the parent is no obstacle.
  TC_RETURN_IF_ERROR(WriteCgroupFile(dir + "/memory.limit_in_bytes", limit));
  if (Exists(dir + "/memory.memsw.limit_in_bytes")) {
    return WriteCgroupFile(dir + "/memory.memsw.limit_in_bytes", limit);
  }
  return absl::OkStatus();
}

absl::Status ApplyCpu(CgroupVersion version, const std::string& dir, double cpu) {
  if (version == CgroupVersion::kV2) return WriteCgroupFile(dir + "/cpu.max", CpuMaxValue(cpu));
  TC_RETURN_IF_ERROR(WriteCgroupFile(dir + "/cpu.cfs_period_us", absl::StrCat(kCpuPeriodMicros)));
  return WriteCgroupFile(dir + "/cpu.cfs_quota_us", absl::StrCat(CpuQuotaMicros(cpu)));
}

absl::Status ApplyCpuset(CgroupVersion version, const std::string& agent_dir,
                         const std::string& dir, const std::string& cpus) {
  if (version == CgroupVersion::kV2) {
    return cpus.empty() ? absl::OkStatus() : WriteCgroupFile(dir + "/cpuset.cpus", cpus);
  }
  TC_ASSIGN_OR_RETURN(std::string mems, ReadValue(agent_dir + "/cpuset.mems"));
  TC_RETURN_IF_ERROR(WriteCgroupFile(dir + "/cpuset.mems", mems));
  if (!cpus.empty()) return WriteCgroupFile(dir + "/cpuset.cpus", cpus);
  TC_ASSIGN_OR_RETURN(std::string agent_cpus, ReadValue(agent_dir + "/cpuset.cpus"));
  return WriteCgroupFile(dir + "/cpuset.cpus", agent_cpus);
}

absl::Status ApplyDevices(CgroupVersion version, const std::string& dir,
                          const std::vector<int>& denied_minors) {
  if (version == CgroupVersion::kV2) return AttachDeviceFilter(dir, kNvidiaMajor, denied_minors);
  for (int minor : denied_minors) {
    TC_RETURN_IF_ERROR(WriteCgroupFile(dir + "/devices.deny", CharDeviceRule(kNvidiaMajor, minor)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyRunSetting(CgroupVersion version, CgroupController controller,
                             const std::string& agent_dir, const std::string& dir,
                             const RunCgroupSpec& spec) {
  switch (controller) {
    case CgroupController::kMemory:
      if (spec.memory_limit_bytes <= 0) return absl::OkStatus();
      return ApplyMemory(version, dir, spec.memory_limit_bytes);
    case CgroupController::kCpu:
      if (spec.cpu <= 0) return absl::OkStatus();
      return ApplyCpu(version, dir, spec.cpu);
    case CgroupController::kPids:
      if (spec.pids_max <= 0) return absl::OkStatus();
      return WriteCgroupFile(dir + "/pids.max", absl::StrCat(spec.pids_max));
    case CgroupController::kCpuset:
      return ApplyCpuset(version, agent_dir, dir, spec.cpus);
    case CgroupController::kDevices:
      if (spec.denied_gpu_minors.empty()) return absl::OkStatus();
      return ApplyDevices(version, dir, spec.denied_gpu_minors);
  }
  return absl::InternalError("unknown cgroup controller");
}

RunCgroupSpec ProbeSpec(CgroupVersion version, const std::string& agent_dir) {
  RunCgroupSpec spec;
  spec.memory_limit_bytes = kProbeMemoryBytes;
  spec.cpu = 1;
  spec.pids_max = kProbePidsMax;
  const std::string cpus_file =
      version == CgroupVersion::kV2 ? "/cpuset.cpus.effective" : "/cpuset.cpus";
  spec.cpus = ReadValue(agent_dir + cpus_file).value_or("");
  spec.denied_gpu_minors = {kProbeDeniedMinor};
  return spec;
}

absl::Status InheritV1Cpuset(const std::string& parent, const std::string& dir) {
  for (const char* file : {"/cpuset.cpus", "/cpuset.mems"}) {
    TC_ASSIGN_OR_RETURN(std::string own, ReadValue(dir + file));
    if (!own.empty()) continue;
    TC_ASSIGN_OR_RETURN(std::string inherited, ReadValue(parent + file));
    TC_RETURN_IF_ERROR(WriteCgroupFile(dir + file, inherited));
  }
  return absl::OkStatus();
}

absl::Status EnableForChildren(const std::string& dir, absl::string_view controller) {
  absl::StatusOr<std::string> enabled = ReadCgroupFile(dir + "/cgroup.subtree_control");
  if (enabled.ok() && ListsWord(*enabled, controller)) return absl::OkStatus();
  return WriteCgroupFile(dir + "/cgroup.subtree_control", absl::StrCat("+", controller));
}

}  // namespace trainctl::agent
