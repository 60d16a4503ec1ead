// ElasticPools: the elastic pools of GANG jobs (workerPools[].elastic; the pure facts are
// elastic.h). A replica that had to leave its node while its gang restarts and finds no room
// waits up to scheduling.elasticWait for a node with room; then its pool shrinks without it
// (REMOVED) and the gang starts again smaller. Removed replicas come back at a later gang start
// that finds room for them, which ResizeJob can ask for at once. Every change restarts the gang,
// is charged to no budget, and is recorded as a Resize of the attempt with a JobResized event; a
// new attempt runs every replica again.
//
// What it owns: the elastic state of a job's replicas — Replica::elastic_wait_until, the REMOVED
// replicas and their ranks (RenumberRanks), and the attempt's Resize records.
// What it decides:
//   - wait: whether a moving replica that found no room may wait for room (its pool keeps its
//     minReplicas without it and every replica waiting already), and until when;
//   - shrink: a waiting replica that finds room moves there; one whose wait is over is REMOVED,
//     its pool shrinks and the gang starts again without it;
//   - grow back: at each gang start, every REMOVED replica there is room for is added back;
//   - RequestGrow (ResizeJob): whether a RUNNING job may grow now, and then its gang restart.
// What it never does: write a replica's state or node, send a command or launch other than
// through LifecycleOps, choose a node other than through ReplicaMoves::MoveTarget (the placement
// pipeline), or restart a gang other than through GangEpisodes.
//
//   ElasticPools elastic(&ops, &moves, &gang, &binding, &timers);
//   if (!elastic.WaitForRoom(job, r, room, /*new_run=*/true, now, &fx)) { /* re-dispatch */ }
//   elastic.Step(job, now, &fx);  // on each tick of a restarting gang
//
// Thread-safety: none; owned by the job lifecycle.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/gang_episodes.h"
#include "scheduler/lifecycle_ops.h"
#include "scheduler/replica_binding.h"
#include "scheduler/replica_moves.h"
#include "scheduler/timers.h"

namespace trainctl::sched {

class ElasticPools {
 public:
  // The parts it uses; they must outlive it.
  ElasticPools(LifecycleOps* life, ReplicaMoves* moves, GangEpisodes* gang, ReplicaBinding* binding,
               Timers* timers)
      : life_(life), moves_(moves), gang_(gang), binding_(binding), timers_(timers) {}

  ElasticPools(const ElasticPools&) = delete;
  ElasticPools& operator=(const ElasticPools&) = delete;

  // ResizeJob: restarts the gang of a RUNNING job whose elastic pools shrank, so that it grows
  // back with every removed replica there is room for (charged to nothing). FAILED_PRECONDITION,
  // saying why, when the job has no elastic pool, is not RUNNING, is restarting already, runs
  // every replica, or no node has room for any removed replica. `actor` names who asked.
  absl::Status RequestGrow(Job* job, const std::string& actor, absl::Time now, Effects* fx);

  // A moving replica of an elastic pool found no room (`room` says why) while its gang restarts:
  // when the pool may go on without it and every replica waiting already, it waits PENDING until
  // elasticWait has passed (true). False: the pool cannot shrink; the caller re-dispatches.
  // `new_run` as for ReplicaMoves::PlaceMoved.
  bool WaitForRoom(Job* job, Replica* r, const std::string& room, bool new_run, absl::Time now,
                   Effects* fx);
  // On each tick of a restarting gang: places waiting replicas that have room now, and shrinks
  // the pools of those whose wait is over.
  void Step(Job* job, absl::Time now, Effects* fx);
  // As a gang starts again: adds back every REMOVED replica there is room for.
  void GrowBack(Job* job, absl::Time now, Effects* fx);
  // A new attempt runs every replica of the spec: REMOVED ones are PENDING again.
  void RestoreWorld(Job* job);

 private:
  // Records one Resize per pool of `changed` (the replicas removed or added, by pool) against
  // the pools' sizes `before`, with a JobResized event.
  void RecordResizes(Job* job, const std::map<std::string, int32_t>& before,
                     const std::map<std::string, std::vector<std::string>>& changed,
                     const std::string& why, absl::Time now, Effects* fx);

  // Constant after construction.
  LifecycleOps* const life_;
  ReplicaMoves* const moves_;
  GangEpisodes* const gang_;
  ReplicaBinding* const binding_;
  Timers* const timers_;
};

}  // namespace trainctl::sched
