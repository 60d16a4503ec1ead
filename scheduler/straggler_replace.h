// StragglerReplace: scheduling.stragglerAction REPLACE. When Stragglers (stragglers.h) judges a
// rank of a RUNNING job with more than one replica a straggler, and another node has room for
// each of the job's replicas on the straggler's node, the job stops using that node:
//   - the node is appended to Job::excluded_nodes (persisted with the job's row), which the
//     placement pipeline never uses for the job again (filter 7, placement_pipeline.h): not for a
//     new attempt, a move, an elastic replica's growth, nor an in-place restart (one on an
//     excluded node moves instead, ExcludedFor);
//   - a `NodeStraggler` event on the node tells the operator, who decides: the node is neither
//     cordoned nor isolated (a slow GPU passes the node's checks);
//   - a `StragglerReplaced` job event, and the straggler moves (ReplicaMoves::Move): for a GANG
//     job that restarts the gang, the replicas on the node start elsewhere, charged to no
//     restart, retry or re-dispatch budget; for a REPLICA-scope job each of its replicas there
//     moves on its own, charged to nothing either.
// With no room elsewhere nothing changes: a slow rank is better than a stopped job. The job gets
// one `StragglerNotReplaced` event, and the replace is tried again at each check while the rank
// stays a straggler, so it happens once a node has room. A move whose room is taken before the
// straggler's graceful stop ends re-dispatches the job like a drain, also charged to nothing.
//
// Not thread-safe: the core's turn owns it.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "model/model.h"

namespace trainctl::sched {

class JobLifecycle;

// Whether `job` no longer uses `node` (Job::excluded_nodes); `why` (may be null) then says so.
bool ExcludedFor(const Job& job, const std::string& node, std::string* why);

// Marks `r` to leave its node because its job excluded the node (`why`): a move charged to
// nothing, even when it finds no room and the job is re-dispatched (like a drain's).
void MarkExcludedMove(Replica* r, const std::string& why);

enum class ReplaceOutcome {
  kNotApplicable,  // not a REPLACE job, not RUNNING, already moving or restarting, excluded
  kReplaced,       // the node is excluded and the replicas there move
  kNoRoom,         // no other node has room: nothing changed
};

// Replaces straggler `r` of `job`, which runs at `ratio` of its gang's median step rate (see the
// file comment). `tell` false: a kNoRoom adds no event (it was told already).
ReplaceOutcome ReplaceStraggler(JobLifecycle* life, Job* job, Replica* r, double ratio, bool tell,
                                absl::Time now, Effects* fx);

}  // namespace trainctl::sched
