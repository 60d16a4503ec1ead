// What this host offers to trainctl: CPUs and memory, detected or given by flags. GPUs are in
// gpu_inventory.h.
//
//   absl::StatusOr<HostResources> host = DetectHostResources();
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace trainctl::agent {

struct HostResources {
  double cpu = 0;
  int64_t memory_mb = 0;
};

// CPUs this process may run on (sched_getaffinity) and MemTotal from /proc/meminfo. INTERNAL when
// the CPU count or the memory cannot be read.
absl::StatusOr<HostResources> DetectHostResources();

// MemTotal in MiB from the text of /proc/meminfo; nullopt when absent or malformed.
std::optional<int64_t> ParseMemTotalMb(const std::string& meminfo);

// The N of each entry of `dev_dir` named nvidia<N> ("nvidia0", not "nvidiactl"), in increasing
// order: the minor numbers of the host's NVIDIA GPUs.
std::vector<int32_t> NvidiaDeviceMinors(const std::string& dev_dir = "/dev");

}  // namespace trainctl::agent
