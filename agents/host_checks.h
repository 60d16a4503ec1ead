// The agent's host check items (R20): each probes one property of this host and says whether it
// meets its threshold. They are the building blocks of the preflight and periodic checks (R15).
//
//   RealHostProbe probe;
//   std::vector<CheckResult> results = RunChecks(config, probe, {{"worker-0", "worker-1"}, 8});
//   LogCheckResults(results);  // "item disk-size root passed: 120.4 GB free > 32 GB", ...
//
// Items: `dns`, `disk-size root`, `disk-size shm`, `disk-size cache`, `ulimit` (only when the host
// declares an InfiniBand network) and `gpu-check`. Every system call goes through HostProbe so
// that tests can fake the host. Thread-safe: the functions keep no state; RealHostProbe is
// stateless.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl::agent {

// The outcome of one check item.
struct CheckResult {
  // The item's name: "dns", "disk-size root", "ulimit", ...
  std::string item;
  bool passed = false;
  // What was found ("120.4 GB free", the hostnames that failed to resolve, ...).
  std::string measured;
  // What is required ("> 32 GB", ...).
  std::string threshold;
  // One human sentence: the measured value against the threshold, or why it could not be probed.
  std::string message;
};

// Free space that a disk-size item requires of the filesystem holding `path`.
struct DiskThreshold {
  std::string path;
  // Passes when the free space is strictly greater; 1 GB = 1e9 bytes.
  double min_free_gb = 0;
};

// Per-host thresholds (R20: configurable per host). The defaults are R20's.
struct HostCheckConfig {
  DiskThreshold root{"/", 32};
  DiskThreshold shm{"/dev/shm", 1};
  // The agent's work dir. REQUIRES: non-empty when passed to RunChecks.
  DiskThreshold cache{"", 32};
  // The host uses an InfiniBand network: enables the `ulimit` item.
  bool infiniband = false;
  // The `ulimit` item's minimums, each passing when the soft limit is strictly greater (or
  // unlimited). memlock and stack are in KiB, as ulimit(1) shows them.
  uint64_t min_memlock_kib = 16000;
  uint64_t min_nofile = 1000000;
  uint64_t min_stack_kib = 8000;
  uint64_t min_nproc = 1000000;
};

// What the job being checked asks of this host.
struct CheckRequest {
  // Every hostname of the job; the `dns` item resolves each.
  std::vector<std::string> hostnames;
  // GPUs the job uses here, by count (`trainctl-agent --check --gpus-needed N`); 0 makes
  // `gpu-check` pass without probing, unless gpu_devices is set.
  int32_t gpus_needed = 0;
  // The GPUs the replica will get (or, for periodic runs, every GPU the node offers), by index:
  // each must be visible. Takes precedence over gpus_needed.
  std::vector<int32_t> gpu_devices = {};
};

// The host as the checks see it. Implementations must be safe to call from any thread.
class HostProbe {
 public:
  // A soft limit of RLIM_INFINITY.
  static constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

  virtual ~HostProbe() = default;
  // Bytes free to an unprivileged user on the filesystem holding `path`.
  virtual absl::StatusOr<uint64_t> FreeBytes(const std::string& path) const = 0;
  // OK when `hostname` resolves to at least one address.
  virtual absl::Status Resolve(const std::string& hostname) const = 0;
  // This process's soft limit for `resource` (an RLIMIT_* constant) in the unit getrlimit uses
  // (bytes for RLIMIT_MEMLOCK and RLIMIT_STACK), or kUnlimited.
  virtual absl::StatusOr<uint64_t> SoftLimit(int resource) const = 0;
  // The indices of the GPUs visible on this host now.
  virtual absl::StatusOr<std::vector<int32_t>> GpuIndices() const = 0;
};

// The probe backed by the system: statvfs, getaddrinfo, getrlimit, and for GPUs the indices
// `nvidia-smi --query-gpu=index` lists when nvidia-smi is on PATH, else the N of each
// /dev/nvidia<N>.
class RealHostProbe : public HostProbe {
 public:
  absl::StatusOr<uint64_t> FreeBytes(const std::string& path) const override;
  absl::Status Resolve(const std::string& hostname) const override;
  absl::StatusOr<uint64_t> SoftLimit(int resource) const override;
  absl::StatusOr<std::vector<int32_t>> GpuIndices() const override;
};

// The single items. A probe error makes the item fail with the error in its message.
CheckResult CheckDns(const std::vector<std::string>& hostnames, const HostProbe& probe);
// `name` is the part after "disk-size ": "root", "shm" or "cache".
CheckResult CheckDiskSize(const std::string& name, const DiskThreshold& threshold,
                          const HostProbe& probe);
CheckResult CheckUlimit(const HostCheckConfig& config, const HostProbe& probe);
// By request.gpu_devices when set ("GPUs 4-7 present, 8 detected"; else which are missing),
// else by request.gpus_needed ("8 GPUs detected, 4 needed").
CheckResult CheckGpus(const CheckRequest& request, const HostProbe& probe);

// Every item that applies to this host, in the order dns, disk-size root, disk-size shm,
// disk-size cache, ulimit (only with config.infiniband), gpu-check.
std::vector<CheckResult> RunChecks(const HostCheckConfig& config, const HostProbe& probe,
                                   const CheckRequest& request);

// "item <name> passed: <message>" or "item <name> failed: <message>" (R21: searchable by `item`).
std::string FormatCheckResult(const CheckResult& result);

// Logs each result as exactly one line, FormatCheckResult's after `context` (e.g. "periodic
// check: "): info when passed, warn when failed.
void LogCheckResults(const std::vector<CheckResult>& results, absl::string_view context = "");

}  // namespace trainctl::agent
