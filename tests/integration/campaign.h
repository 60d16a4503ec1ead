// A fault campaign's workload and its checker, for tests that throw faults at a running cluster
// (agent SIGKILLs here; the fault campaign adds more) and then check that nothing was lost and
// nothing ran twice.
//
// Each job has one replica that runs the workload under --run-once (an exclusive lock and a
// marker file per run id in the campaign's directory: a second process of the same run fails
// loudly), works for a drawn time and ends one of three ways: exit 0, exit 3 (the user's error)
// or exit 134 (a crash). No retry budget but the internal one, so the job's end is decided by what
// its workload did, and a fault of trainctl's own shows as a mismatch.
//
//   Campaign campaign(c, /*seed=*/42);
//   for (int i = 0; i < 200; ++i) campaign.Submit();
//   ... faults ...
//   REQUIRE(campaign.WaitForAll(std::chrono::minutes(3)));
//   std::vector<std::string> problems = campaign.Check();
//   CHECK(problems.empty());
#pragma once

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {

class Campaign {
 public:
  // The campaign's files go to <cluster dir>/campaign.
  Campaign(MiniCluster& cluster, uint32_t seed);

  // Submits one job; its outcome cycles through exit 0, exit 3 and exit 134, and it works for
  // 50 ms to 1.5 s. Returns its id.
  std::string Submit();

  // Waits until every submitted job has ended; false when `timeout` passed first.
  bool WaitForAll(std::chrono::milliseconds timeout);

  // Everything that does not match: a job whose end is not what its workload did (state, exit
  // code, the error's words), a run that ran twice, a job that never ran its workload. Empty when
  // all is well.
  std::vector<std::string> Check();

  std::mt19937& rng() { return rng_; }
  const std::string& dir() const { return dir_; }

 private:
  struct Job {
    std::string id;
    int exit_code;
  };
  MiniCluster& cluster_;
  std::mt19937 rng_;
  std::string dir_;
  std::vector<Job> jobs_;
};

}  // namespace trainctl::testing
