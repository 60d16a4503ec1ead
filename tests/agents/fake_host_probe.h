// A host given as literals, for tests of the check items and of the agent's check runs: free
// bytes per path, hostnames that resolve, soft limits and GPUs. Counts its FreeBytes() calls, so
// tests can tell how many check runs happened.
#pragma once

#include <sys/resource.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agents/host_checks.h"

namespace trainctl::agent::testing {

inline constexpr uint64_t kGb = 1000 * 1000 * 1000;

class FakeHostProbe : public HostProbe {
 public:
  std::map<std::string, uint64_t> free_bytes = {
      {"/", 120 * kGb}, {"/dev/shm", 8 * kGb}, {"/work", 500 * kGb}};
  std::set<std::string> resolvable = {"worker-0", "worker-1"};
  std::map<int, uint64_t> limits = {{RLIMIT_MEMLOCK, kUnlimited},
                                    {RLIMIT_NOFILE, 1048576},
                                    {RLIMIT_STACK, 8192 * 1024},
                                    {RLIMIT_NPROC, kUnlimited}};
  // The indices of the GPUs it sees: 0..7.
  absl::StatusOr<std::vector<int32_t>> gpus = Gpus(8);
  // FreeBytes("/") calls so far: one per check run.
  mutable std::atomic<int> root_probes{0};

  absl::StatusOr<uint64_t> FreeBytes(const std::string& path) const override {
    if (path == "/") ++root_probes;
    auto it = free_bytes.find(path);
    if (it == free_bytes.end()) return absl::NotFoundError("statvfs " + path + ": no such file");
    return it->second;
  }
  absl::Status Resolve(const std::string& hostname) const override {
    if (resolvable.count(hostname)) return absl::OkStatus();
    return absl::NotFoundError(hostname + ": Name or service not known");
  }
  absl::StatusOr<uint64_t> SoftLimit(int resource) const override { return limits.at(resource); }
  absl::StatusOr<std::vector<int32_t>> GpuIndices() const override { return gpus; }

  // GPUs 0..count-1.
  static std::vector<int32_t> Gpus(int32_t count) {
    std::vector<int32_t> out;
    for (int32_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
};

}  // namespace trainctl::agent::testing
