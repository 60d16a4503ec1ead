// The flags of `trainctl quota set`, and how they change a quota.
//
// SetQuota replaces a project's whole quota, so `quota set` fetches the current one and overlays
// only the flags given:
//
//   v1::Quota quota = project.quota();                    // from GetQuota
//   TC_RETURN_IF_ERROR(OverlayQuotaFlags(args, &quota));  // --gpus 8 --memory-mb unlimited
//
// Only the form of each value is checked here (a number, "unlimited", a duration); the server
// checks ranges and names. Pure functions; thread-safe.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// --gpus, --cpu, --memory-mb, --max-running-jobs (a number or "unlimited"), --cohort,
// --borrow-gpus, --borrow-cpu, --borrow-memory-mb, --strategy, --starvation-limit,
// --run-as-user, --reclaim and --preempt-within-project.
std::vector<FlagSpec> QuotaSetFlags();

// Whether `args` holds any of QuotaSetFlags().
bool HasQuotaSetFlags(const ParsedArgs& args);

// Sets the fields of `quota` named by the QuotaSetFlags given in `args` and leaves the others as
// they are: a limit flag sets the limit ("unlimited" clears it), --cohort "" leaves the cohort,
// a --borrow-* flag sets that part of the borrowing limit (0: borrow none), --strategy is strict
// or best-effort, --run-as-user "" clears the user, --reclaim is never, lower-priority or any,
// --preempt-within-project never or lower-priority. INVALID_ARGUMENT naming the flag when a value
// has the wrong form.
absl::Status OverlayQuotaFlags(const ParsedArgs& args, v1::Quota* quota);

}  // namespace trainctl::cli
