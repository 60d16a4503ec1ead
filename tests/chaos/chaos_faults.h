// The faults the fault campaign (chaos_test.cc) throws at a MiniCluster, one at a time, at moments
// drawn from its seed: SIGKILL and SIGSTOP/SIGCONT of trainctld, SIGKILL of an agent (started
// again at once), a network cut of the agent in its namespace (both ways, shorter or longer than
// the lost timeout, or one way), and a full data dir for a few seconds.
//
//   FaultInjector faults(cluster, &link, /*netns_agent=*/2, seed, timing);
//   while (campaign runs) { faults.Step(); ... }
//   faults.EndAll();
//   faults.Counts();  // {"trainctld SIGKILL": 7, ...}
//
// Thread-compatible: the campaign's one thread calls it, between its own uses of the cluster.
#pragma once

#include <chrono>
#include <map>
#include <random>
#include <string>

#include "tests/integration/mini_cluster.h"
#include "tests/integration/netns_link.h"

namespace trainctl::testing {

struct FaultTiming {
  // trainctld's --node-lost-timeout and the fence margin the scheduler derives from it.
  std::chrono::milliseconds lost;
  std::chrono::milliseconds margin;
  // The quiet time between one fault's end and the next one's start is drawn from this range.
  std::chrono::milliseconds min_gap{1000};
  std::chrono::milliseconds max_gap{4000};
};

class FaultInjector {
 public:
  // `link` may be null (no partitions); `one_way` says whether nft rules work there. The data dir
  // must be a tmpfs (ClusterOptions::data_dir_tmpfs_mb) for the full-disk fault.
  FaultInjector(MiniCluster& cluster, NetnsLink* link, bool one_way, int netns_agent, uint32_t seed,
                FaultTiming timing);

  // Begins a fault when the next one is due, ends the current one when its time is up.
  void Step();
  // Ends the fault in progress, if any, and stops injecting.
  void EndAll();
  // How many faults of each kind began.
  const std::map<std::string, int>& Counts() const { return counts_; }
  // What happened, one line per fault: "12.3s trainctld SIGSTOP for 1.2s".
  const std::string& Log() const { return log_; }

 private:
  using Clock = std::chrono::steady_clock;
  void Begin();
  void End();
  std::chrono::milliseconds Draw(std::chrono::milliseconds lo, std::chrono::milliseconds hi);
  void Note(const std::string& what);

  MiniCluster& cluster_;
  NetnsLink* const link_;
  const bool one_way_;
  const int netns_agent_;
  const FaultTiming timing_;
  std::mt19937 rng_;
  const Clock::time_point start_;
  // The fault in progress ("" when none), and when it ends or the next one begins.
  std::string current_;
  Clock::time_point next_;
  std::map<std::string, int> counts_;
  std::string log_;
};

}  // namespace trainctl::testing
