// CPU placement of runs under `trainctl-agent --cpu-policy static`, like the kubelet's static CPU
// manager: a run whose CPU request is a whole number n >= 1 gets n CPUs of its own (cpuset.cpus),
// which no other run uses while it runs; every other run gets the shared pool, the agent's CPUs
// minus all exclusive ones, which shrinks and grows as exclusive runs come and go.
//
// The lowest-numbered `min_shared` CPUs (at least 1: --reserve-cpu rounded up) always stay
// shared, so the agent, the system and fractional runs keep somewhere to run. A run that cannot
// get n CPUs that way gets none and runs in the shared pool: the scheduler counts CPU as a number
// and may place whole-CPU runs on a node whose CPUs are partly taken by fractional ones, so
// exclusivity is best effort, and the launcher logs a warning for such a run. Exclusive CPUs are
// the lowest-numbered free ones; a shared run is not moved to exclusive CPUs that free up later.
//
//   StaticCpuManager cpus({0, 1, 2, 3, 4, 5, 6, 7}, /*min_shared=*/1);
//   cpus.Allocate("j/1/a/0", 2);   // {1, 2}
//   cpus.Allocate("j/1/b/0", 2);   // {3, 4}
//   cpus.SharedPool();             // {0, 5, 6, 7}
//   cpus.Release("j/1/a/0");       // shared pool {0, 1, 2, 5, 6, 7}
//
// Pure logic; not thread-safe (RunIsolation holds it under its lock).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl::agent {

enum class CpuPolicy { kNone, kStatic };

// "none" or "static"; INVALID_ARGUMENT naming --cpu-policy otherwise.
absl::StatusOr<CpuPolicy> ParseCpuPolicy(absl::string_view text);

// The number of exclusive CPUs a request of `cpu` cores asks for: cpu when it is a whole number
// >= 1, else 0.
int ExclusiveCpuCount(double cpu);

class StaticCpuManager {
 public:
  // `cpus`: the CPUs the agent may use (its affinity mask). `min_shared` is raised to 1 and
  // capped at cpus.size().
  StaticCpuManager(std::set<int> cpus, int min_shared);

  // Gives `run_id` `count` (>= 1) exclusive CPUs, the lowest-numbered free ones outside the
  // always-shared ones. nullopt, changing nothing, when that many are not free or the run holds
  // some already.
  std::optional<std::set<int>> Allocate(const std::string& run_id, int count);

  // Gives `run_id` exactly `cpus` again (an adopted run, after an agent restart). False, changing
  // nothing, when one of them is not the agent's, is always shared or is held by another run.
  bool Restore(const std::string& run_id, const std::set<int>& cpus);

  // Frees the run's CPUs; false when it held none.
  bool Release(const std::string& run_id);

  // The run's exclusive CPUs; empty when it has none.
  std::set<int> ExclusiveOf(const std::string& run_id) const;

  // The agent's CPUs minus every exclusive one; never empty.
  std::set<int> SharedPool() const;

  const std::set<int>& cpus() const { return cpus_; }

 private:
  // Whether `cpu` may be given out: the agent's, not always shared, not held.
  bool Assignable(int cpu) const;

  const std::set<int> cpus_;
  // The lowest-numbered CPUs of cpus_, never exclusive.
  std::set<int> always_shared_;
  // Every exclusive CPU, by holder.
  std::map<std::string, std::set<int>> held_;
  std::set<int> taken_;
};

}  // namespace trainctl::agent
