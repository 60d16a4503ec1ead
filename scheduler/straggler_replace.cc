// StragglerReplace (straggler_replace.h): scheduling.stragglerAction REPLACE.
#include "scheduler/straggler_replace.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "scheduler/job_lifecycle.h"
#include "scheduler/job_table.h"

namespace trainctl::sched {
namespace {

std::string Ratio(double ratio) { return absl::StrFormat("%.2f", ratio); }

}  // namespace

bool ExcludedFor(const Job& job, const std::string& node, std::string* why) {
  if (node.empty() || std::find(job.excluded_nodes.begin(), job.excluded_nodes.end(), node) ==
                          job.excluded_nodes.end()) {
    return false;
  }
  if (why != nullptr) {
    *why = absl::StrCat("job ", job.id, " no longer uses node ", node,
                        " (a straggler's node, scheduling.stragglerAction REPLACE)");
  }
  return true;
}

void MarkExcludedMove(Replica* r, const std::string& why) {
  // A drain's cause: the only one whose re-dispatch for want of room charges nothing
  // (DecideNoRoomForMove). Set after any stop is sent, so the process gets no drain notice.
  r->move_cause = MoveCause::kDrain;
  r->move_reason = why;
}

ReplaceOutcome ReplaceStraggler(JobLifecycle* life, Job* job, Replica* r, double ratio, bool tell,
                                absl::Time now, Effects* fx) {
  if (job->spec.scheduling().straggler_action() != v1::STRAGGLER_ACTION_REPLACE ||
      job->state != v1::JOB_STATE_RUNNING || job->replicas.size() < 2 || job->gang_restarting ||
      r->state != v1::REPLICA_STATE_RUNNING || ExcludedFor(*job, r->node, nullptr)) {
    return ReplaceOutcome::kNotApplicable;
  }
  for (const Replica& o : job->replicas) {
    if (o.moving()) return ReplaceOutcome::kNotApplicable;  // a move is under way already
  }
  const std::string node = r->node;
  // Every replica of the job on the node leaves it: each needs room elsewhere, off the job's
  // excluded nodes, within its gang's domain when it packs.
  std::vector<Replica*> leaving;
  for (Replica& o : job->replicas) {
    if (o.node != node || !HoldsResources(o.state)) continue;
    std::string no_room;
    if (life->moves().MoveTarget(*job, o, node, node, now, &no_room).empty()) {
      if (tell) {
        AddEvent(fx, now, job, r->name, node, "StragglerNotReplaced",
                 absl::StrCat(r->name, " on ", node, " runs at ", Ratio(ratio),
                              " of its gang's median step rate, but no other node has room for ",
                              o.name, " (", no_room, "): it keeps running there, and is replaced ",
                              "once a node has room"));
      }
      return ReplaceOutcome::kNoRoom;
    }
    leaving.push_back(&o);
  }
  job->excluded_nodes.push_back(node);
  Touch(job, now, fx);
  AddEvent(fx, now, nullptr, "", node, "NodeStraggler",
           absl::StrCat(node, " ran replica ", r->name, " of job ", job->id, " at ", Ratio(ratio),
                        " of its gang's median step rate",
                        r->gpu_devices.empty()
                            ? std::string()
                            : absl::StrCat(" (GPUs ", absl::StrJoin(r->gpu_devices, ","), ")"),
                        "; job ", job->id,
                        " no longer uses it. The node is not cordoned: check it, and cordon it if "
                        "it is at fault"));
  AddEvent(fx, now, job, r->name, node, "StragglerReplaced",
           absl::StrCat(r->name, " on ", node, " ran at ", Ratio(ratio),
                        " of its gang's median step rate: the job no longer uses ", node,
                        " (scheduling.stragglerAction REPLACE), and its replicas there move to "
                        "other nodes, charged to no budget"));
  const std::string why =
      absl::StrCat("straggler on ", node, ", at ", Ratio(ratio), " of the gang's median step rate");
  // The straggler first: for a GANG job its move restarts the gang, which stops the others, and
  // the others on the node move when the gang starts again (GangEpisodes::MaybeRelaunch). A
  // REPLICA-scope job's replicas there each move on their own; one not running moves when it
  // next launches (JobLifecycle::LaunchOnItsNode).
  std::stable_partition(leaving.begin(), leaving.end(), [r](const Replica* o) { return o == r; });
  for (Replica* o : leaving) {
    if (!IsLive(job->state) || o->moving() || o->state != v1::REPLICA_STATE_RUNNING) continue;
    if (o != r && job->gang_restarting) continue;
    life->moves().Move(job, o, MoveCause::kNodeUnavailable, why, std::nullopt, now, fx);
    if (o->moving()) MarkExcludedMove(o, why);
  }
  return ReplaceOutcome::kReplaced;
}

}  // namespace trainctl::sched
