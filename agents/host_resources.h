// What this host offers to trainctl: CPUs, memory and GPUs, detected or given by flags.
//
//   absl::StatusOr<HostResources> host = DetectHostResources();
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace trainctl::agent {

struct HostResources {
  double cpu = 0;
  int64_t memory_mb = 0;
  int32_t gpus = 0;
};

// CPUs this process may run on (sched_getaffinity), MemTotal from /proc/meminfo, and the number
// of /dev/nvidia<N> devices. INTERNAL when the CPU count or the memory cannot be read.
absl::StatusOr<HostResources> DetectHostResources();

// MemTotal in MiB from the text of /proc/meminfo; nullopt when absent or malformed.
std::optional<int64_t> ParseMemTotalMb(const std::string& meminfo);

// Number of entries of `dev_dir` named nvidia<digits> ("nvidia0", not "nvidiactl").
int32_t CountNvidiaDevices(const std::string& dev_dir = "/dev");

}  // namespace trainctl::agent
