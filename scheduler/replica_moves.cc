// ReplicaMoves (replica_moves.h): replicas that leave their node — drained, lost or unhealthy
// hosts, agents that shut down, in-place restarts whose node no longer keeps replicas (R4, R13,
// R14, R18).
#include "scheduler/replica_moves.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "scheduler/launch_env.h"
#include "scheduler/maintenance.h"
#include "scheduler/node_health.h"
#include "scheduler/node_registry.h"
#include "scheduler/placement_pipeline.h"

namespace trainctl::sched {

// What the replica needs and why each other node cannot take it, for the error of a move that
// found no room: "needs 4 cpu, 100 MiB, 0 gpus, 2 ports; node-b: 1 cpu, 900 MiB, 0 gpus, 12766
// ports free; node-c: not connected". A node that is not READY, or not connected, is named with
// its state; at most kNamed nodes are, then a count.
std::string DescribeNoRoom(const Replica& r, const std::string& from, const NodeRegistry& nodes) {
  constexpr int kNamed = 4;
  auto words = [](const Res& res) {
    return absl::StrCat(res.cpu, " cpu, ", res.memory_mb, " MiB, ", res.gpus, " gpus");
  };
  std::string out = absl::StrCat("needs ", words(r.need), ", ", PortsNeeded(r.rank), " ports");
  std::map<std::string, NodeFree> schedulable;
  for (NodeFree& n : nodes.FreeNodes()) schedulable.emplace(n.name, std::move(n));
  int named = 0;
  int more = 0;
  for (const auto& [name, node] : nodes.nodes()) {
    if (name == from) continue;
    if (named == kNamed) {
      ++more;
      continue;
    }
    ++named;
    std::string why;
    if (!node.connected) {
      why = "not connected";
    } else if (node.shutting_down) {
      why = "its agent is shutting down";
    } else if (auto it = schedulable.find(name); it == schedulable.end()) {
      why = EnumShortName(DeriveState(node));
    } else {
      why = absl::StrCat(words(it->second.free), ", ", it->second.free_ports, " ports free");
    }
    absl::StrAppend(&out, "; ", name, ": ", why);
  }
  if (more > 0) absl::StrAppend(&out, "; and ", more, " more nodes");
  if (named == 0) absl::StrAppend(&out, "; no other node is registered");
  return out;
}

void ReplicaMoves::MoveReplicasOff(const std::string& node, MoveCause cause, const std::string& why,
                                   std::optional<absl::Duration> grace, bool node_gone,
                                   absl::Time now, Effects* fx) {
  for (const std::string& id : jobs_->ActiveIds()) {
    Job* job = jobs_->Find(id);
    for (Replica& r : job->replicas) {
      if (r.node != node || !HoldsResources(r.state)) continue;
      // Its process is gone already; its failure is decided when its settle window ends.
      if (r.state == v1::REPLICA_STATE_SETTLING) continue;
      // Not launched: its gang's fabric check ends ABANDONED at the next tick (fabric_checks.h).
      if (r.state == v1::REPLICA_STATE_CHECKING) continue;
      if (node_gone && r.state != v1::REPLICA_STATE_RESTARTING) {
        nodes_->AddStaleRun(node, job->RunIdOf(r));
      }
      // Re-evaluated per replica: a move may turn into a re-dispatch, which ends the attempt.
      const bool live = IsLive(job->state);
      if (live && !r.moving() && r.state != v1::REPLICA_STATE_STOPPING) {
        if (node_gone && r.state != v1::REPLICA_STATE_RESTARTING) {
          life_->SetReplicaState(job, &r, v1::REPLICA_STATE_FAILED);
        }
        Move(job, &r, cause, why, grace, now, fx);
      } else if (node_gone) {
        // A stop in flight on a node that is gone: the process is out of reach, so the replica
        // is done here. A move waiting for its stop goes on now.
        life_->SetReplicaState(job, &r, v1::REPLICA_STATE_STOPPED);
        r.pid = 0;
        r.end_time = now;
        r.message = absl::StrCat("gone with node ", node);
        Touch(job, now, fx);
        RecordRun(*job, r, fx);
        if (live && !r.moving() && GangEpisodes::IsGang(*job) && job->gang_restarting) {
          // Stopped for its gang's restart: it starts again with the others, elsewhere.
          r.move_cause = cause;
          r.move_reason = why;
        }
        if (live && r.moving()) {
          PlaceMoved(job, &r, now, fx, /*new_run=*/true);
        } else {
          life_->MaybeFinishCancel(job, now, fx);
          jobs_->RefreshActive(*job);
        }
      }
    }
  }
}

void ReplicaMoves::Move(Job* job, Replica* r, MoveCause cause, const std::string& why,
                        std::optional<absl::Duration> grace, absl::Time now, Effects* fx) {
  r->move_cause = cause;
  r->move_reason = why;
  if (GangEpisodes::IsGang(*job) && !job->gang_restarting) {
    // A move of one replica of a GANG job restarts the whole gang, charging nothing.
    RetryDecision d;
    d.action = Decision::kMoveReplica;
    d.move_cause = cause;
    d.move_reason = why;
    d.rule = why;
    d.summary = absl::StrCat("had to leave node ", r->node);
    gang_->Restart(job, r, d, now, fx);
    // The restart may have ended the attempt: a peer that had to move found no room.
    if (!IsLive(job->state)) return;
  }
  if (IsLive(r->state)) {
    // Its process can still be reached: a graceful stop first (SIGTERM, a last checkpoint). A
    // drain (by an operator or a maintenance window) gives the running replica the notice first,
    // the one preemption gives (TRAINCTL_PREEMPTION_NOTICE), with the drain's deadline; the stop's
    // SIGTERM follows at once, so the notice sends no signal of its own.
    const absl::Duration stop_grace = grace.value_or(absl::Milliseconds(job->policy.stop_grace_ms));
    if (cause == MoveCause::kDrain && r->state == v1::REPLICA_STATE_RUNNING) {
      fx->commands.push_back(
          {r->node, NoticeMessage(job->RunIdOf(*r), "drain", now + stop_grace, "", why,
                                  /*signal=*/0)});
    }
    life_->SetReplicaState(job, r, v1::REPLICA_STATE_STOPPING);
    r->message = absl::StrCat("moving: ", why);
    life_->SendStop(*job, *r, stop_grace, why, fx);
    AddEvent(fx, now, job, r->name, r->node, "ReplicaStopping",
             absl::StrCat(why, ": stopping it gracefully to move it to another node"));
    Touch(job, now, fx);
    RecordRun(*job, *r, fx);
    return;
  }
  // No process to stop. A restarting replica's restart count names a run not launched yet: that
  // run starts on the new node. Any other ran here, and its run ends.
  const bool launched = r->state != v1::REPLICA_STATE_RESTARTING;
  if (r->state != v1::REPLICA_STATE_FAILED) {
    life_->SetReplicaState(job, r, v1::REPLICA_STATE_STOPPED);
  }
  r->pid = 0;
  r->next_start_time.reset();
  r->message = absl::StrCat("moving: ", why);
  if (launched) {
    r->end_time = now;
    RecordRun(*job, *r, fx);
  }
  PlaceMoved(job, r, now, fx, /*new_run=*/launched);
}

void ReplicaMoves::ContinueMove(Job* job, Replica* r, absl::Time now, Effects* fx) {
  // A move's graceful stop has finished: start it elsewhere.
  life_->SetReplicaState(job, r, v1::REPLICA_STATE_STOPPED);
  AddEvent(fx, now, job, r->name, r->node, "ReplicaStopped",
           absl::StrCat("process stopped to move (", r->move_reason, ")"));
  RecordRun(*job, *r, fx);
  PlaceMoved(job, r, now, fx, /*new_run=*/true);
}

std::string ReplicaMoves::MoveTarget(const Job& job, const Replica& r, const std::string& from,
                                     const std::string& domain_of, absl::Time now,
                                     std::string* no_room) const {
  // The placement pipeline's single replica: its pool's selection, its gang's domain, never the
  // node it leaves, windows judged by the job's start, the job's policy (placement_pipeline.h).
  const Node* domain_node = nodes_->Find(domain_of);
  ReplicaRequest request;
  request.spec = &job.spec;
  request.pool = PoolOf(job, r);
  request.domain_of = domain_node == nullptr ? nullptr : &domain_node->labels;
  request.demand = ReplicaDemandOf(r);
  request.exclude = from;
  request.excluded = &job.excluded_nodes;
  request.expected_end = ExpectedEnd(job.spec, job.start_time, now);
  const ReplicaPlacement to = PlaceReplica(nodes_->FreeBook(), WindowsOf(*nodes_), request);
  if (to.ok()) return to.node;
  if (no_room != nullptr) {
    *no_room =
        to.kind == PlacementKind::kMaintenance ? to.missing : DescribeNoRoom(r, from, *nodes_);
  }
  return "";
}

void ReplicaMoves::NoteAttemptNode(Job* job, const std::string& node, Effects* fx) {
  Attempt* a = job->current();
  if (a == nullptr || std::find(a->nodes.begin(), a->nodes.end(), node) != a->nodes.end()) return;
  a->nodes.push_back(node);
  fx->attempts.insert({job->id, a->number});
}

void ReplicaMoves::PlaceMoved(Job* job, Replica* r, absl::Time now, Effects* fx, bool new_run) {
  const std::string from = r->node;
  std::string room;
  const std::string to = MoveTarget(*job, *r, from, from, now, &room);
  if (to.empty()) {
    // An elastic pool may go on without it, after a wait for room.
    if (life_->WaitForRoom(job, r, room, new_run, now, fx)) return;
    // Like a move that finds no room: the job is re-dispatched, and its new attempt waits in
    // the queue (behind a MAINTENANCE blocker when only windowed nodes have room).
    const RetryDecision d =
        DecideNoRoomForMove(*job, *r, from, r->move_cause, r->move_reason, room);
    r->move_cause = MoveCause::kNone;
    r->move_reason.clear();
    fx->tally.failures.push_back({d.failure_class, d.action});
    life_->Redispatch(job, d, now, fx);
    return;
  }
  MoveTo(job, r, to, now, fx, new_run);
}

void ReplicaMoves::MoveTo(Job* job, Replica* r, const std::string& to, absl::Time now, Effects* fx,
                          bool new_run) {
  const std::string from = r->node;
  const std::string why = r->move_reason;
  life_->SetNode(*job, r, to);
  if (new_run) r->restart_count++;
  r->moves++;
  r->move_cause = MoveCause::kNone;
  r->move_reason.clear();
  r->exit_code.reset();
  r->signal.reset();
  r->oom_killed = false;
  r->end_time.reset();
  r->ForgetProgress();
  r->elastic_wait_until.reset();
  NoteAttemptNode(job, to, fx);
  AddEvent(fx, now, job, r->name, to, "ReplicaMoved",
           absl::StrCat("moved from ", from, " to ", to, " (", why, "); same name and rank ",
                        r->rank, ", not charged to its restart budget"));
  if (GangEpisodes::IsGang(*job) && job->gang_restarting) {
    // It starts again with the rest of its gang.
    life_->SetReplicaState(job, r, v1::REPLICA_STATE_RESTARTING);
    r->next_start_time = now;
    gang_->MaybeRelaunch(job, now, fx);
  } else {
    life_->LaunchOnItsNode(job, r, now, fx);
  }
  jobs_->RefreshActive(*job);
}

}  // namespace trainctl::sched
