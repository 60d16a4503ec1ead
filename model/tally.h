// Tally: what a turn did that trainctld's metrics count (server/metrics_*.h), part of Effects
// (model.h). The core only appends to it, and never reads it.
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/decisions.h"
#include "model/usage_ledger.h"

namespace trainctl::sched {

struct Tally {
  // A failure decided: a replica's end that was no success, a stockout, a move without room.
  struct Failure {
    FailureClass failure_class = FailureClass::kNone;
    Decision action = Decision::kNone;
  };
  // An attempt started, after its job waited `wait` in the queue (since its submission or its
  // retry).
  struct Admission {
    std::string project;
    absl::Duration wait;
  };
  // A job ran for the first time, `since_create` after its submission.
  struct FirstRun {
    std::string project;
    absl::Duration since_create;
  };
  // A job reached a terminal state.
  struct End {
    std::string project;
    v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  };
  // A job of `project` was chosen as a victim: `reason` is "reclaim" (its lender takes back
  // quota) or "priority" (a higher-priority job of its own project).
  struct Preempted {
    std::string project;
    std::string reason;
  };
  // A preemption's attempt ended, `took` after the decision (the notice's grace, cut short by a
  // checkpoint or the replicas' exits).
  struct PreemptionEnded {
    std::string project;
    absl::Duration took;
  };
  std::vector<Failure> failures;
  std::vector<Admission> admissions;
  std::vector<FirstRun> first_runs;
  std::vector<End> ends;
  std::vector<Preempted> preempted;
  std::vector<PreemptionEnded> preemption_ends;
  // A project's fair-share ledger as written this turn, with its share then (fair_share.h).
  struct FairShareSeen {
    UsageLedger usage;
    double share = 0;
  };
  std::vector<FairShareSeen> fair_shares;
  // A gang's fabric check ended (fabric_checks.h): PASSED, ISOLATED, FAILED or ABANDONED, and
  // how long it took.
  struct FabricCheckEnded {
    std::string result;
    absl::Duration took;
  };
  std::vector<FabricCheckEnded> fabric_checks;
  // What each project's replicas used since the last turn, undecayed (usage_rollup.h).
  std::map<std::string, UsageAdded> usage_added;
};

}  // namespace trainctl::sched
