// `trainctl stacks` and the stacks section of `describe`: the stacks of a job's replicas as
// GetStacks returns them, in full (every process's text under a header naming the replica, its
// run and node, why and when they were captured), or summed up by where the replicas were:
// replicas that agree on their innermost frame grouped ("3 replicas in all_reduce
// (distributed_c10d.py:2050): worker-0, worker-1, worker-3"), the odd ones out on lines of their
// own, the largest group first.
//
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// Every replica's stacks in full; "" when there are none.
std::string RenderStacks(const v1::GetStacksResponse& resp);

// The grouped summary, one line per group, each ending in '\n'; "" when there are no stacks.
std::string StacksSummary(const v1::GetStacksResponse& resp);

// The `describe` section: a "Stacks (attempt N, captured before the stop: hung):" header, the
// summary indented, and how to see them whole; "" when there are no stacks.
std::string RenderStacksSection(const std::string& job_id, const v1::GetStacksResponse& resp);

}  // namespace trainctl::cli
