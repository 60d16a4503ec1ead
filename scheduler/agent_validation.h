// Validation of what an agent says about itself (its Register), before any of it reaches the
// core or the store: an agent is a network peer like any client, and a bad value (a NaN cpu
// count, a petabyte of memory, 10,000 GPUs) must be refused with a message, never abort the
// daemon on a NOT NULL constraint or win every placement.
//
//   if (absl::Status s = ValidateRegister(reg); !s.ok()) ...  // INVALID_ARGUMENT, field path
//
// Pure functions.
#pragma once

#include "absl/status/status.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::sched {

// Bounds of an agent's registration. Far above any real host; far below what would overflow or
// dominate placement.
inline constexpr double kMaxNodeCpu = 65536;
inline constexpr int64_t kMaxNodeMemoryMb = int64_t{1} << 30;  // 1 PiB
inline constexpr int32_t kMaxNodeGpus = 1024;
inline constexpr int kMaxNodeLabels = 64;
inline constexpr int kMaxKnownRuns = 100'000;
inline constexpr size_t kMaxAgentString = 1024;

// Checks every field of `reg`: the node name (DNS label), the address, capacity and allocatable
// (finite, within the bounds above, allocatable <= capacity), the GPU inventory (exactly
// capacity.gpus devices with distinct indices below kMaxNodeGpus), labels, known runs, the
// config, version and instance strings (bounded, no NUL). INVALID_ARGUMENT naming the first
// bad field: "register.capacity.cpu must be a finite number 0..65536, got nan".
absl::Status ValidateRegister(const v1::Register& reg);

}  // namespace trainctl::sched
