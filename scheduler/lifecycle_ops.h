// LifecycleOps: what the parts of the job lifecycle (gang_episodes.h, replica_moves.h and the
// elastic pools it routes to) may ask of the lifecycle itself. The state machine stays in one
// place: a part never writes a replica's state or node, never sends a launch, never ends an
// attempt and never decides a failure's consequence on its own; it asks through these calls,
// which JobLifecycle implements (and a test implements with a recording fake,
// tests/scheduler/fake_lifecycle_ops.h).
//
// Thread-safety: none; the lifecycle and its parts are owned by the core.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/retry_engine.h"

namespace trainctl::sched {

// `t` as RFC 3339 text, for event reasons.
std::string When(absl::Time t);

class LifecycleOps {
 public:
  virtual ~LifecycleOps() = default;

  // The only writer of a replica's state: keeps what it holds (node, project, ports, GPUs) in
  // step.
  virtual void SetReplicaState(Job* job, Replica* r, v1::ReplicaState state) = 0;
  // The only writer of a replica's node: what it holds moves with it (ReplicaBinding::Rebind).
  virtual void SetNode(const Job& job, Replica* r, const std::string& node) = 0;
  // Carries out the retry engine's decision `d` about the end of `r`'s run.
  virtual void Apply(Job* job, Replica* r, const RetryDecision& d, absl::Time now, Effects* fx) = 0;
  // Carries out the retry engine's answer to a move that found no room (DecideNoRoomForMove):
  // a new attempt queued first in line (kRedispatch), else the job's failure.
  virtual void Redispatch(Job* job, const RetryDecision& d, absl::Time now, Effects* fx) = 0;
  // A CANCELLING job whose replicas all stopped ends CANCELLED; nothing for any other job.
  virtual void MaybeFinishCancel(Job* job, absl::Time now, Effects* fx) = 0;
  // Asks `r`'s agent to stop its run within `grace`; with `capture_stacks` (the reason, see
  // RetryPolicy::StacksBefore) it captures the run's stacks first.
  virtual void SendStop(const Job& job, const Replica& r, absl::Duration grace,
                        const std::string& reason, Effects* fx,
                        const std::string& capture_stacks = "") = 0;
  // Marks `r` STARTING on its node and sends the launch; moves it when its node no longer keeps
  // replicas.
  virtual void LaunchOnItsNode(Job* job, Replica* r, absl::Time now, Effects* fx) = 0;
  // Starts `r`, whose move is due, on the best other node, or re-dispatches the job when none has
  // room. `new_run` false: its restart count already names a run not launched yet.
  virtual void PlaceMoved(Job* job, Replica* r, absl::Time now, Effects* fx, bool new_run) = 0;
  // A moving replica found no room (`room` says why): true when its elastic pool lets it wait
  // PENDING for room while its gang restarts; false when the job must be re-dispatched.
  virtual bool WaitForRoom(Job* job, Replica* r, const std::string& room, bool new_run,
                           absl::Time now, Effects* fx) = 0;
  // As a gang starts again: adds back every REMOVED replica of an elastic pool there is room for.
  virtual void GrowBack(Job* job, absl::Time now, Effects* fx) = 0;
  // As a gang starts again on a set of nodes other than the one last checked: its replicas wait
  // CHECKING for a fabric check first (fabric_checks.h), which launches them when it passes.
  // False, changing nothing, when no check is wanted: the caller launches them.
  virtual bool CheckFabricFirst(Job* job, absl::Time now, Effects* fx) = 0;
};

}  // namespace trainctl::sched
