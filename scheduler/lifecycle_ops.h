// LifecycleOps: what the parts of the job lifecycle (gang_episodes.h, and the moves and elastic
// pools it routes to) may ask of the lifecycle itself. The state machine stays in one place: a
// part never writes a replica's state, never sends a launch and never decides a failure's
// consequence on its own; it asks through these calls, which JobLifecycle implements (and a
// test implements with a recording fake).
//
// Thread-safety: none; the lifecycle and its parts are owned by the core.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/retry_engine.h"

namespace trainctl::sched {

class LifecycleOps {
 public:
  virtual ~LifecycleOps() = default;

  // The only writer of a replica's state: keeps what it holds (node, project, ports, GPUs) in
  // step.
  virtual void SetReplicaState(Job* job, Replica* r, v1::ReplicaState state) = 0;
  // Carries out the retry engine's decision `d` about the end of `r`'s run.
  virtual void Apply(Job* job, Replica* r, const RetryDecision& d, absl::Time now, Effects* fx) = 0;
  // Asks `r`'s agent to stop its run within `grace_ms`.
  virtual void SendStop(const Job& job, const Replica& r, int64_t grace_ms,
                        const std::string& reason, Effects* fx) = 0;
  // Marks `r` STARTING on its node and sends the launch; moves it when its node no longer keeps
  // replicas.
  virtual void LaunchOnItsNode(Job* job, Replica* r, absl::Time now, Effects* fx) = 0;
  // Starts `r`, whose move is due, on the best other node, or re-dispatches the job when none has
  // room. `new_run` false: its restart count already names a run not launched yet.
  virtual void PlaceMoved(Job* job, Replica* r, absl::Time now, Effects* fx, bool new_run) = 0;
  // As a gang starts again: adds back every REMOVED replica of an elastic pool there is room for.
  virtual void GrowBack(Job* job, absl::Time now, Effects* fx) = 0;
};

}  // namespace trainctl::sched
