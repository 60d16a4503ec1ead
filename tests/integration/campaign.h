// A fault campaign's workload and its checker, for tests that throw faults at a running cluster
// (agent SIGKILLs in crash_campaign_test.cc; daemon kills and stops, partitions and a full disk in
// tests/chaos/) and then check that nothing was lost and nothing ran twice.
//
// Each job's replicas run the workload under --run-once (an exclusive lock and a marker file per
// run id in the campaign's directory: a second process of the same run fails loudly) and
// --exclusive (one lock per replica of the job, held while a run lives: two runs of one replica
// that overlap, on one node or two, fail loudly). What a job does is drawn from its Outcome, and
// its end must be what its workload did, so a fault of trainctl's own shows as a mismatch.
//
//   Campaign campaign(c, /*seed=*/42);
//   for (int i = 0; i < 200; ++i) campaign.Submit();
//   ... faults ...
//   REQUIRE(campaign.WaitForAll(std::chrono::minutes(3)));
//   std::vector<std::string> problems = campaign.Check();
//   CHECK(problems.empty());
//
// A caller that submits jobs itself (through retries, while trainctld may be down) takes each
// spec from Spec() and tells the campaign the acknowledged id with Add().
#pragma once

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {

class Campaign {
 public:
  // What a job's workload does, and so how the job must end.
  enum class Outcome {
    kSucceed,    // works, exits 0: SUCCEEDED
    kUserError,  // exits 3: FAILED, "non-zero status of 3", not retried
    kCrash,      // exits 134 with no restart budget: FAILED, "non-zero status of 134"
    kTransient,  // exits 134 once, then 0 on its restart in place: SUCCEEDED
    kOom,        // allocates past its 64 MiB limit: FAILED, OUT_OF_MEMORY
    kHang,       // sleeps past the job's 3 s timeout: FAILED, "timeout"
    kGang,       // a chief and a worker (GANG) that both exit 0: SUCCEEDED
  };
  static const char* OutcomeName(Outcome o);

  // The campaign's files go to <cluster dir>/campaign.
  Campaign(MiniCluster& cluster, uint32_t seed);

  // A job spec whose replicas do `o` after working for a drawn 50 ms to 1.5 s.
  std::string Spec(Outcome o);
  // Records a job submitted elsewhere with a spec from Spec(o).
  void Add(const std::string& id, Outcome o);

  // Submits one job through the fixture; its outcome cycles through kSucceed, kUserError and
  // kCrash. Returns its id.
  std::string Submit();

  // Waits until every recorded job has ended; false when `timeout` passed first.
  bool WaitForAll(std::chrono::milliseconds timeout);

  // Everything that does not match: a job whose end is not what its workload did (state, exit
  // code, the error's words), a run that ran twice or overlapped another run of its replica, a
  // job that never ran its workload, an attempt ended as INTERNAL (an exit code lost), budgets
  // used that the attempts do not account for. Empty when all is well.
  std::vector<std::string> Check();

  std::mt19937& rng() { return rng_; }
  const std::string& dir() const { return dir_; }
  size_t size() const { return jobs_.size(); }

 private:
  struct Job {
    std::string id;
    Outcome outcome;
  };
  // The problems of one ended job.
  void CheckJob(const Job& job, const v1::Job& got, std::vector<std::string>* problems);

  MiniCluster& cluster_;
  std::mt19937 rng_;
  std::string dir_;
  std::vector<Job> jobs_;
};

}  // namespace trainctl::testing
