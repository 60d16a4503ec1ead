// ReplicaMoves: replicas that leave their node — drained, lost or unhealthy hosts, agents that
// shut down, in-place restarts whose node no longer keeps replicas (R4, R13, R14, R18). A move
// keeps the replica's name and rank and is charged to no restart budget.
//
// What it owns: a replica's move, from its cause to its new node — Replica::move_cause,
// move_reason and moves, and the nodes an attempt ran on (Attempt::nodes) as replicas move.
// What it decides:
//   - how a replica leaves: a graceful stop first (SIGTERM, the grace period, SIGKILL) while its
//     process can be reached, else at once; a move of one replica of a GANG job restarts the gang
//     (GangEpisodes::Restart, charging nothing);
//   - where it goes: the best other schedulable node with room, through the placement pipeline
//     (placement_pipeline.h: the pool's selection, the gang's topology domain, maintenance
//     windows, the job's SPREAD or BINPACK policy), never the node it leaves;
//   - that a replica no node has room for ends the attempt: unless its elastic pool lets it wait
//     (LifecycleOps::WaitForRoom), the retry engine's DecideNoRoomForMove is handed to the
//     lifecycle (LifecycleOps::Redispatch);
//   - which replicas a node that is drained, lost or unhealthy takes with it (MoveReplicasOff).
// What it never does: write a replica's state or node, send a command, launch, or end an attempt
// other than through LifecycleOps, or decide what a failure means (the retry engine does).
//
//   ReplicaMoves moves(&ops, &jobs, &nodes, &gang);
//   moves.MoveReplicasOff("node-a", MoveCause::kDrain, why, std::nullopt, /*node_gone=*/false,
//                         now, &fx);
//
// Thread-safety: none; owned by the job lifecycle.
#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/gang_episodes.h"
#include "scheduler/job_table.h"
#include "scheduler/lifecycle_ops.h"
#include "scheduler/node_registry.h"

namespace trainctl::sched {

// What replica `r` needs and why each node but `from` cannot take it, for errors about a move or
// a grow that found no room: "needs 4 cpu, 100 MiB, 0 gpus, 1 ports; node-b: 1 cpu, ...".
std::string DescribeNoRoom(const Replica& r, const std::string& from, const NodeRegistry& nodes);

class ReplicaMoves {
 public:
  // The parts it uses; they must outlive it.
  ReplicaMoves(LifecycleOps* life, JobTable* jobs, NodeRegistry* nodes, GangEpisodes* gang)
      : life_(life), jobs_(jobs), nodes_(nodes), gang_(gang) {}

  ReplicaMoves(const ReplicaMoves&) = delete;
  ReplicaMoves& operator=(const ReplicaMoves&) = delete;

  // Moves every replica of live jobs off `node`, and stops what other jobs still hold there.
  // `grace` unset: each job's stopGracePeriod. `node_gone`: its processes are out of reach (their
  // runs are stale there, and a stop in flight is over at once).
  void MoveReplicasOff(const std::string& node, MoveCause cause, const std::string& why,
                       std::optional<absl::Duration> grace, bool node_gone, absl::Time now,
                       Effects* fx);
  // Moves the replica off its node for `cause`: a graceful stop first when its process can be
  // reached (within `grace`; unset: the job's stopGracePeriod), else at once.
  void Move(Job* job, Replica* r, MoveCause cause, const std::string& why,
            std::optional<absl::Duration> grace, absl::Time now, Effects* fx);
  // A move's graceful stop has finished: the replica is STOPPED and placed elsewhere.
  void ContinueMove(Job* job, Replica* r, absl::Time now, Effects* fx);
  // Starts a replica whose move is due on the best other schedulable node, or re-dispatches the
  // job when none has room. `new_run` false: the replica's restart count already names a run not
  // launched yet (an in-place restart whose node cannot take it).
  void PlaceMoved(Job* job, Replica* r, absl::Time now, Effects* fx, bool new_run);

  // The node `r` would move to now: the best schedulable node with room (the job's policy:
  // SPREAD or BINPACK), never `from`, within the topology domain of node `domain_of` when the job
  // packs, and not one whose maintenance window starts before the job's expected end. "" when
  // none has room, and then `no_room` (may be null) says why.
  std::string MoveTarget(const Job& job, const Replica& r, const std::string& from,
                         const std::string& domain_of, absl::Time now,
                         std::string* no_room = nullptr) const;
  // Puts a moving replica on `to` and starts it there (or, in a gang restart, readies it to start
  // with the others). `new_run` as for PlaceMoved.
  void MoveTo(Job* job, Replica* r, const std::string& to, absl::Time now, Effects* fx,
              bool new_run);
  // Adds `node` to the current attempt's nodes.
  static void NoteAttemptNode(Job* job, const std::string& node, Effects* fx);

 private:
  // Constant after construction.
  LifecycleOps* const life_;
  JobTable* const jobs_;
  NodeRegistry* const nodes_;
  GangEpisodes* const gang_;
};

}  // namespace trainctl::sched
