// A project's preemption policy (Quota.reclaim, Quota.preemptWithinProject): its validation and
// the resolved values the scheduler core reads.
//
// Owns nothing but these pure functions; it never decides who is preempted (the core does) and
// never reads a job. Thread-safety: pure functions.
#pragma once

#include "absl/status/status.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// OK when quota.reclaim and quota.preemptWithinProject are known values (UNSPECIFIED included).
// Else INVALID_ARGUMENT: "quota.reclaim must be NEVER, LOWER_PRIORITY or ANY, got 7". Called by
// ValidateQuota.
absl::Status ValidatePreemptionPolicy(const v1::Quota& quota);

// The quota's reclaim policy with UNSPECIFIED resolved: RECLAIM_POLICY_NEVER.
v1::ReclaimPolicy ReclaimOf(const v1::Quota& quota);

// The quota's within-project preemption with UNSPECIFIED resolved: NEVER.
v1::WithinProjectPreemption PreemptWithinProjectOf(const v1::Quota& quota);

}  // namespace trainctl::sched
