// The values the agent writes to and reads from cgroup control files, as pure functions: CPU
// quotas (v2 cpu.max, v1 cpu.cfs_quota_us), v1 device rules and the kernel's OOM kill counters.
// See run_cgroup.h for where they go; CPU lists (cpuset.cpus, "0-3,8") are common/index_list.h,
// and FormatCpuList/ParseCpuList adapt it to the std::set<int> the CPU manager uses.
//
//   CpuMaxValue(1.5)             // "150000 100000"
//   FormatCpuList({0, 1, 2, 8})  // "0-2,8"
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl::agent {

// The CFS period the agent uses for every quota: 100ms, the kernel's default.
constexpr int64_t kCpuPeriodMicros = 100000;
// The smallest quota the kernel accepts.
constexpr int64_t kMinCpuQuotaMicros = 1000;

// The quota per kCpuPeriodMicros for `cpu` cores (> 0): cpu * 100000 rounded, at least
// kMinCpuQuotaMicros.
int64_t CpuQuotaMicros(double cpu);

// cgroup v2 cpu.max for `cpu` cores (> 0): "<quota> 100000".
std::string CpuMaxValue(double cpu);

// The CPU list of cpuset.cpus ("0-3,8", as ParseIndexList reads it): INVALID_ARGUMENT for a
// malformed one; "" is the empty set.
absl::StatusOr<std::set<int>> ParseCpuList(absl::string_view text);

// The shortest CPU list naming `cpus` ("0-2,8", FormatIndexList); "" for none.
std::string FormatCpuList(const std::set<int>& cpus);

// A cgroup v1 devices.allow / devices.deny rule for every access to a character device:
// "c <major>:<minor> rwm".
std::string CharDeviceRule(int major, int minor);

// The N of an "oom_kill N" line, as in cgroup v2 memory.events and cgroup v1
// memory.oom_control; nullopt when there is no such line or N is not a number.
std::optional<int64_t> ParseOomKillCount(absl::string_view text);

}  // namespace trainctl::agent
