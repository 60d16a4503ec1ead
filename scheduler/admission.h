// Quota arithmetic of admission: does a job's whole demand fit its project's quota (borrowing
// from its cohort if allowed), and if not, what blocks it, in numbers and words.
//
// Pure functions over plain values; the core supplies usage and what the cohort can lend.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/model.h"

namespace trainctl::sched {

// What a project's admitted jobs hold.
struct ProjectUsage {
  Res used;
  // Jobs admitted and not yet ended (PENDING, RUNNING, CANCELLING).
  int32_t running_jobs = 0;
};

struct QuotaEval {
  // The demand fits now (within quota plus what may be borrowed).
  bool fits_now = false;
  // The demand fits an empty project (within quota plus its borrowing limit): false means the
  // job can never run under this quota, and so does not hold back the jobs behind it.
  bool fits_ever = false;
  // One QUOTA blocker per limit in the way.
  std::vector<v1::Blocker> blockers;
  // What admitting it would borrow from the cohort.
  Res borrows;
};

// `borrowable` is the most the project may borrow in all, per resource, what it borrows already
// included: the least of its borrowing limit and what its cohort can lend (see Borrowable).
QuotaEval EvaluateQuota(const std::string& project, const Quota& quota, const ProjectUsage& usage,
                        const Res& demand, const Res& borrowable);

// What a project uses beyond its own quota (0 where unlimited).
Res Borrowed(const Quota& quota, const Res& used);

// What a project leaves unused of its quota (0 where unlimited: unlimited quota is not lent).
Res Unused(const Quota& quota, const Res& used);

// The quota's limits as a Res; unlimited dimensions hold `unlimited`.
Res LimitsOf(const Quota& quota, double unlimited);

// Validates a quota as the API sends it: INVALID_ARGUMENT with the field path (its JSON name,
// "quota.starvationLimit"). Checked on the message, before it maps to the model's Quota.
absl::Status ValidateQuota(const v1::Quota& quota);

}  // namespace trainctl::sched
