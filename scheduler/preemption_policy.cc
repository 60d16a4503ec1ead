#include "scheduler/preemption_policy.h"

#include "absl/strings/str_cat.h"

namespace trainctl::sched {

absl::Status ValidatePreemptionPolicy(const v1::Quota& quota) {
  if (!v1::ReclaimPolicy_IsValid(quota.reclaim())) {
    return absl::InvalidArgumentError(
        absl::StrCat("quota.reclaim must be NEVER, LOWER_PRIORITY or ANY, got ", quota.reclaim()));
  }
  if (!v1::WithinProjectPreemption_IsValid(quota.preempt_within_project())) {
    return absl::InvalidArgumentError(
        absl::StrCat("quota.preemptWithinProject must be NEVER or LOWER_PRIORITY, got ",
                     quota.preempt_within_project()));
  }
  return absl::OkStatus();
}

v1::ReclaimPolicy ReclaimOf(const v1::Quota& quota) {
  return quota.reclaim() == v1::RECLAIM_POLICY_UNSPECIFIED ? v1::RECLAIM_POLICY_NEVER
                                                           : quota.reclaim();
}

v1::WithinProjectPreemption PreemptWithinProjectOf(const v1::Quota& quota) {
  return quota.preempt_within_project() == v1::WITHIN_PROJECT_PREEMPTION_UNSPECIFIED
             ? v1::WITHIN_PROJECT_PREEMPTION_NEVER
             : quota.preempt_within_project();
}

}  // namespace trainctl::sched
