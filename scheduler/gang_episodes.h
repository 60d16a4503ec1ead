// GangEpisodes: the failure episodes of GANG jobs (restartScope GANG with more than one replica,
// see job.proto). Collective frameworks cannot take one rank back, so a restart or a move of one
// replica restarts every replica together, charged once to the episode's root cause.
//
// What it owns: a gang job's episode state — Job::gang_restarting, gang_generation, root_cause,
// settling_reports and the attempt's GangRestart records.
// What it decides:
//   - settle: a USER_ERROR first waits as SETTLING for the settle window, so that an earlier
//     failure of a peer reported later is still its root cause;
//   - root cause: among a failure and every settling peer, which one is the root (the retry
//     engine's ChooseRootCause) and which are its consequences, never classified on their own;
//   - stop and restart: the survivors are stopped (SIGTERM, the grace period, SIGKILL) and wait
//     as RESTARTING on their nodes; once every one is stopped and the cause's backoff has passed,
//     all start again in parallel as a new gang generation, with fresh ports.
// What it never does: classify or decide a failure itself (the retry engine does, through
// DecideOnFailure; the lifecycle applies the answer), write a replica's state or send a command
// other than through LifecycleOps, or choose a node (a replica whose place is gone is handed
// back to the lifecycle's PlaceMoved).
//
//   GangEpisodes gang(&ops, &nodes, &binding, &timers, absl::Seconds(1));
//   if (GangEpisodes::IsGang(*job)) gang.RunEnd(job, r, failure, now, &fx);
//
// Thread-safety: none; owned by the job lifecycle.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/lifecycle_ops.h"
#include "scheduler/node_registry.h"
#include "scheduler/replica_binding.h"
#include "scheduler/retry_engine.h"
#include "scheduler/timers.h"

namespace trainctl::sched {

class GangEpisodes {
 public:
  // The parts it uses; they must outlive it. `skew` is how far apart two failures' exit times may
  // be and still count as simultaneous.
  GangEpisodes(LifecycleOps* life, const NodeRegistry* nodes, ReplicaBinding* binding,
               Timers* timers, absl::Duration skew)
      : life_(life), nodes_(nodes), binding_(binding), timers_(timers), skew_(skew) {}

  GangEpisodes(const GangEpisodes&) = delete;
  GangEpisodes& operator=(const GangEpisodes&) = delete;

  // Whether `job` restarts as a gang.
  static bool IsGang(const Job& job);

  // The end of a run of a GANG job: a consequence while the gang restarts already; else a
  // USER_ERROR settles first; else the root cause is chosen among it and the settling peers.
  void RunEnd(Job* job, Replica* r, const Failure& failure, absl::Time now, Effects* fx);
  // Decides the episodes whose settle window has passed by `now`; wakes the timers for the rest.
  void DecideSettled(Job* job, absl::Time now, Effects* fx);
  // Restarts the whole gang for `cause`: its failure (d.action kRestartGang, charged as d says)
  // or its move (kMoveReplica, not charged; the cause moves on its own path).
  void Restart(Job* job, Replica* cause, const RetryDecision& d, absl::Time now, Effects* fx);
  // The part of a gang restart every cause shares (a failure, a move, a resize): stops the live
  // replicas but `skip` (may be null) and readies the rest to start again at `due`. Returns the
  // ended replicas whose place is gone, to be placed elsewhere by the caller once the others are
  // set.
  std::vector<Replica*> Stop(Job* job, const Replica* skip, const std::string& why, absl::Time due,
                             absl::Time now, Effects* fx);
  // A replica stopped for its gang's restart has ended: it waits RESTARTING for the others.
  void ConfirmStop(Job* job, Replica* r, const v1::ReplicaExited& exited, absl::Time now,
                   Effects* fx);
  // Starts every replica again once all are stopped and the restart is due.
  void MaybeRelaunch(Job* job, absl::Time now, Effects* fx);
  // Records `r`'s failure (`summary`) as a consequence of the job's root cause, after the cause
  // was decided. Nothing when the job has none.
  void AddConsequence(Job* job, const Replica& r, const std::string& summary, absl::Time now,
                      Effects* fx);

 private:
  // Decides a failure episode: `r` (may be null) and every SETTLING replica.
  void DecideRoot(Job* job, Replica* r, const Failure& failure, absl::Time now, Effects* fx);
  void ConsequenceEvent(const Job& job, const Replica& r, const std::string& summary,
                        const RootCause& root, absl::Time now, Effects* fx);

  // Constant after construction.
  LifecycleOps* const life_;
  const NodeRegistry* const nodes_;
  ReplicaBinding* const binding_;
  Timers* const timers_;
  const absl::Duration skew_;
};

}  // namespace trainctl::sched
