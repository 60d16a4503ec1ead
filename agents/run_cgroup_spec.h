// The cgroup controllers a run's cgroups use and what one run's cgroups enforce: the types both
// RunCgroups (run_cgroup.h) and the settings it writes (run_cgroup_settings.h) speak of. A
// header of its own, so that run_cgroup.h uses the settings and the settings need nothing of
// run_cgroup.h.
//
//   RunCgroupSpec spec{.memory_limit_bytes = 64 << 20, .cpu = 2, .pids_max = 32768};
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainctl::agent {

enum class CgroupController { kMemory, kCpu, kPids, kCpuset, kDevices };

// What one run's cgroup enforces; a zero or empty field sets nothing.
struct RunCgroupSpec {
  int64_t memory_limit_bytes = 0;
  // CPU cores for the CFS quota; fractions allowed.
  double cpu = 0;
  int64_t pids_max = 0;
  // cpuset.cpus, a CPU list ("0-3,8").
  std::string cpus;
  // Minors of the NVIDIA devices (major 195) the run may not open.
  std::vector<int> denied_gpu_minors;
};

}  // namespace trainctl::agent
