// A project's preemption policy: which values of Quota.reclaim and Quota.preemptWithinProject
// are accepted, and what an unset one means.
#include "scheduler/preemption_policy.h"

#include <catch2/catch.hpp>

namespace trainctl::sched {
namespace {

TEST_CASE("ValidatePreemptionPolicy accepts every known value", "[preemption_policy]") {
  for (v1::ReclaimPolicy r : {v1::RECLAIM_POLICY_UNSPECIFIED, v1::RECLAIM_POLICY_NEVER,
                              v1::RECLAIM_POLICY_LOWER_PRIORITY, v1::RECLAIM_POLICY_ANY}) {
    for (v1::WithinProjectPreemption w :
         {v1::WITHIN_PROJECT_PREEMPTION_UNSPECIFIED, v1::WITHIN_PROJECT_PREEMPTION_NEVER,
          v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY}) {
      v1::Quota q;
      q.set_reclaim(r);
      q.set_preempt_within_project(w);
      CHECK(ValidatePreemptionPolicy(q).ok());
    }
  }
}

TEST_CASE("ValidatePreemptionPolicy names the field of an unknown value", "[preemption_policy]") {
  v1::Quota q;
  q.set_reclaim(static_cast<v1::ReclaimPolicy>(7));
  absl::Status s = ValidatePreemptionPolicy(q);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message() == "quota.reclaim must be NEVER, LOWER_PRIORITY or ANY, got 7");

  v1::Quota w;
  w.set_preempt_within_project(static_cast<v1::WithinProjectPreemption>(3));
  s = ValidatePreemptionPolicy(w);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message() == "quota.preemptWithinProject must be NEVER or LOWER_PRIORITY, got 3");
}

TEST_CASE("an unset preemption policy means never", "[preemption_policy]") {
  v1::Quota q;
  CHECK(ReclaimOf(q) == v1::RECLAIM_POLICY_NEVER);
  CHECK(PreemptWithinProjectOf(q) == v1::WITHIN_PROJECT_PREEMPTION_NEVER);
  q.set_reclaim(v1::RECLAIM_POLICY_ANY);
  q.set_preempt_within_project(v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY);
  CHECK(ReclaimOf(q) == v1::RECLAIM_POLICY_ANY);
  CHECK(PreemptWithinProjectOf(q) == v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY);
}

}  // namespace
}  // namespace trainctl::sched
