// JobLifecycle: the job and replica state machines. It applies what the retry engine and the
// admission queue decided — start an attempt, restart a replica, move it, retry or re-dispatch the
// job, end it — and keeps every derived fact in step: the resources each replica holds on its
// node and in its project (ReplicaBinding, AdmissionQueue::Hold), the admitted jobs per
// project, the active set, the queue, the commands for agents, the rows and events in `fx`.
//
// It decides nothing about failures: every replica end goes to the retry engine, and the lifecycle
// carries out its decision. It keeps the state machine and routes to its parts, each of which
// owns one kind of state and its decisions:
//   ReplicaBinding  what each replica holds on its node: resources, ports, GPUs (replica_binding.h)
//   GangEpisodes    GANG jobs' failure episodes: settle, root cause, stop, restart together
//                   (gang_episodes.h)
//   ReplicaMoves    replicas that leave their node: the graceful stop, the target (through the
//                   placement pipeline), placing it or re-dispatching the job (replica_moves.h)
//   ElasticPools    elastic pools: the wait for room, the shrink, the grow-back, ResizeJob
//                   (elastic_pools.h)
//   FabricChecks    the check of the fabric between a gang's nodes before its replicas start
//                   (fabric_checks.h)
// The parts ask the lifecycle for state changes and launches through LifecycleOps
// (lifecycle_ops.h); the lifecycle routes the calls of one part that another carries out
// (PlaceMoved to ReplicaMoves, WaitForRoom and GrowBack to ElasticPools). Its own files:
// job_lifecycle_timeouts.cc (Tick: time limits), job_lifecycle_commands.cc (launches and stops
// for agents) and job_lifecycle_adopt_runs.cc (Reconcile: an agent's runs after it registers).
//
// Replica state and node change only through SetReplicaState and SetNode, job state only through
// SetJobState: that is what keeps the incremental usage exact. The same two keep what each replica
// holds on its node (resources, ports, GPUs) in step, through its ReplicaBinding.
//
// Thread-safety: none; owned by the core.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/admission_queue.h"
#include "scheduler/elastic_pools.h"
#include "scheduler/fabric_checks.h"
#include "scheduler/gang_episodes.h"
#include "scheduler/job_table.h"
#include "scheduler/launch_env.h"
#include "scheduler/lifecycle_ops.h"
#include "scheduler/node_registry.h"
#include "scheduler/replica_binding.h"
#include "scheduler/replica_moves.h"
#include "scheduler/retry_engine.h"
#include "scheduler/timers.h"

namespace trainctl::sched {

// The key `r`'s usage counts under while it holds resources (usage_rollup.h): the job's project,
// creator and labels, and `r`'s node.
UsageKey UsageKeyOf(const Job& job, const Replica& r);

class JobLifecycle : private LifecycleOps {
 public:
  // The parts it keeps in step; they must outlive it.
  // `skew` is how far apart two failures' exit times may be and still count as simultaneous.
  JobLifecycle(JobTable* jobs, NodeRegistry* nodes, AdmissionQueue* queue, Timers* timers,
               absl::Duration skew = absl::Seconds(1))
      : jobs_(jobs),
        nodes_(nodes),
        queue_(queue),
        timers_(timers),
        binding_(&nodes->book()),
        gang_(this, nodes, &binding_, timers, skew),
        moves_(this, jobs, nodes, &gang_),
        elastic_(this, &moves_, &gang_, &binding_, timers),
        fabric_(this, jobs, nodes, timers) {}

  JobLifecycle(const JobLifecycle&) = delete;
  JobLifecycle& operator=(const JobLifecycle&) = delete;

  // Counts what the restored jobs hold and which are admitted or queued. REQUIRES: called once,
  // after the jobs and nodes were restored.
  void Restore();

  // --- Jobs ----------------------------------------------------------------------------------

  // A new job, QUEUED. REQUIRES: `spec` is valid, with defaults applied.
  // `id`: the job's id (an array's element); empty: a fresh one.
  const Job* Submit(v1::JobSpec spec, const std::string& checkpoint_root, absl::Time now,
                    Effects* fx, const std::string& id = "");
  // QUEUED jobs end at once; others stop their replicas first (CANCELLING, then CANCELLED).
  void Cancel(Job* job, absl::Time now, Effects* fx);
  // Ends the job in a terminal state, stopping what still runs.
  void End(Job* job, v1::JobState state, const JobError& error, const std::string& reason,
           absl::Time now, Effects* fx);
  // Starts a new attempt of the job on `placed` (one node per replica).
  void StartAttempt(Job* job, const std::vector<std::string>& placed, absl::Time now, Effects* fx);
  // Applies the retry engine's answer to a stockout: a capacity retry's backoff, or the end.
  void ApplyStockout(Job* job, const RetryDecision& d, absl::Time now, Effects* fx);
  // The queue reason changed.
  void SetQueueReason(Job* job, const std::string& reason, absl::Time now, Effects* fx);

  // --- Replicas ------------------------------------------------------------------------------

  // The agent confirmed the run started.
  void Started(Job* job, Replica* r, const v1::ReplicaStarted& started, absl::Time now,
               Effects* fx);
  // Records how the run ended (pid, exit code, signal, OOM flag, end time).
  void RecordExit(Job* job, Replica* r, const v1::ReplicaExited& exited, absl::Time now,
                  Effects* fx);

  // What a replica's end confirms, when trainctl had asked it to stop.
  enum class StopKind {
    kNone,           // trainctl did not stop it: a failure (or success) for the retry engine
    kForMove,        // stopped to move: it starts on another node now
    kForGang,        // stopped for its gang's restart: it waits to start again with the others
    kForHang,        // stopped by the hang detector: a failure of class HUNG
    kStopped,        // cancel, job end, retry: not a failure
    kForPreemption,  // any end of a replica of a job being preempted: not a failure
  };
  StopKind StopKindOf(const Job& job, const Replica& r, const v1::ReplicaExited& exited) const;
  // Carries out the end of a stop trainctl asked for: a move goes on, a gang restart counts the
  // replica stopped, a job's end or retry confirms it. False for the ends that are failures
  // (kNone, kForHang), which the caller gives the retry engine.
  bool FinishStop(Job* job, Replica* r, const v1::ReplicaExited& exited, absl::Time now,
                  Effects* fx);
  // A stop trainctl asked for has finished. A run that failed on its own meanwhile is recorded
  // as a consequence of the failure being handled.
  void ConfirmStop(Job* job, Replica* r, const v1::ReplicaExited& exited, absl::Time now,
                   Effects* fx);

  // Asks the retry engine what the end of `r`'s run means, and carries out its decision.
  void EndRun(Job* job, Replica* r, const Failure& failure, absl::Time now, Effects* fx);

  // A sign of progress at `t` (and the step reached, when > 0); earlier signs are ignored. The
  // job's row is written at most once per ProgressWriteInterval; memory always has the latest.
  void Progress(Job* job, Replica* r, absl::Time t, int64_t step, absl::Time now, Effects* fx);

  // An agent (re)registered reporting `reg.runs()`: adopts the runs wanted, stops the rest,
  // resends launches it never received, and ends as lost the runs it no longer has.
  void Reconcile(const v1::Register& reg, absl::Time now, Effects* fx);

  // Time limits: scheduling.timeout, due restarts, launchTimeout, hangTimeout, elastic waits,
  // preemptions' grace periods.
  void Tick(absl::Time now, Effects* fx);

  // --- Preemption (job_lifecycle_preemption.cc) ----------------------------------------------

  // Whether `job`'s preemption is under way: its current attempt was chosen as a victim and has
  // not ended yet.
  static bool Preempting(const Job& job);
  // Preempts `job` (a victim, victims.h) for the waiting job `by`: every running replica gets the
  // notice (TRAINCTL_PREEMPTION_NOTICE and scheduling.preemptionSignal), with
  // scheduling.preemptionGracePeriod to checkpoint and exit. With no replica running, the attempt
  // ends at once.
  void Preempt(Job* job, const Job& by, const std::string& reason, absl::Time now, Effects* fx);
  // The same with no preemptor (RequeueJob, `reason` saying who asked): the notice, the grace
  // period, the attempt's end as PREEMPTED, back to the queue in its own place, charged to
  // nothing. REQUIRES: the job is PENDING or RUNNING and not being preempted.
  void Requeue(Job* job, const std::string& reason, absl::Time now, Effects* fx);
  // Sends the notice again to the running replicas of a job being preempted (an agent that
  // registers again after a restart of trainctld; the agent delivers each notice once).
  void SendNotices(Job* job, absl::Time now, Effects* fx);
  // A replica reported a finished checkpoint at `t`: recorded; during a preemption's grace
  // period, it ends the grace.
  void Checkpointed(Job* job, absl::Time t, absl::Time now, Effects* fx);

  // --- Elastic pools (ElasticPools) ----------------------------------------------------------

  // ResizeJob (ElasticPools::RequestGrow): restarts the gang of a RUNNING job whose elastic pools
  // shrank, so that it grows back with every removed replica there is room for (charged to
  // nothing). FAILED_PRECONDITION, saying why, when the job has no elastic pool, is not RUNNING,
  // is restarting already, runs every replica, or no node has room for any removed replica.
  // `actor` names who asked.
  absl::Status RequestGrow(Job* job, const std::string& actor, absl::Time now, Effects* fx);

  // --- Moves (ReplicaMoves) ------------------------------------------------------------------

  // Moves every replica of live jobs off `node` (ReplicaMoves::MoveReplicasOff), and stops what
  // other jobs still hold there. `grace` unset: each job's stopGracePeriod. `node_gone`: its
  // processes are out of reach.
  void MoveReplicasOff(const std::string& node, MoveCause cause, const std::string& why,
                       std::optional<absl::Duration> grace, bool node_gone, absl::Time now,
                       Effects* fx);

  // --- Parts ---------------------------------------------------------------------------------

  // What each replica holds on its node (resources, ports, GPUs); see replica_binding.h.
  ReplicaBinding& binding() { return binding_; }
  const ReplicaBinding& binding() const { return binding_; }
  // The failure episodes of GANG jobs; see gang_episodes.h.
  GangEpisodes& gang() { return gang_; }
  // Replicas that leave their node; see replica_moves.h.
  ReplicaMoves& moves() { return moves_; }
  // The elastic pools' waits, shrinks and grow-backs; see elastic_pools.h.
  ElasticPools& elastic() { return elastic_; }
  // The ids of the jobs that became terminal since the last call, in order.
  std::vector<std::string> TakeEnded() { return std::exchange(ended_, {}); }
  // The fabric checks before multi-node gangs start; see fabric_checks.h.
  FabricChecks& fabric() { return fabric_; }
  const FabricChecks& fabric() const { return fabric_; }

 private:
  // The only writers of replica state and node, and of job state.
  void SetReplicaState(Job* job, Replica* r, v1::ReplicaState state) override;
  // Carries out the retry engine's decision about the end of `r`'s run.
  void Apply(Job* job, Replica* r, const RetryDecision& d, absl::Time now, Effects* fx) override;
  void SetNode(const Job& job, Replica* r, const std::string& node) override;

  void SetJobState(Job* job, v1::JobState state, const std::string& reason, absl::Time now,
                   Effects* fx);

  // With `capture_stacks` (StopReplica.capture_stacks), their agents capture stacks first.
  void StopLiveReplicas(Job* job, const std::string& reason, absl::Time now, Effects* fx,
                        const std::string& capture_stacks = "");
  void MaybeFinishCancel(Job* job, absl::Time now, Effects* fx) override;
  void MaybeMarkRunning(Job* job, absl::Time now, Effects* fx);
  void Restart(Job* job, Replica* r, const RetryDecision& d, absl::Time now, Effects* fx);
  // Marks the replica STARTING on its node and sends the launch; moves it when its node no
  // longer keeps replicas.
  void LaunchOnItsNode(Job* job, Replica* r, absl::Time now, Effects* fx) override;
  void RecordAttemptEnd(Job* job, const RetryDecision& d, absl::Time now, Effects* fx);
  // A new attempt after `d` (kRetryJob or kRedispatch): stops the replicas and queues the job
  // first in line.
  void Retry(Job* job, const RetryDecision& d, absl::Time now, Effects* fx);
  void Fail(Job* job, const RetryDecision& d, absl::Time now, Effects* fx);
  // A replica of a job being preempted ended, with any status: stopped, never a success or a
  // failure. When none is left running, the attempt ends.
  void PreemptedExit(Job* job, Replica* r, const v1::ReplicaExited& exited, absl::Time now,
                     Effects* fx);
  // Ends the current attempt as PREEMPTED (`why` the grace ended): the replicas still running
  // stop, and the job waits in the queue in its own place, charged to no budget.
  void EndPreemptedAttempt(Job* job, const std::string& why, absl::Time now, Effects* fx);
  // What Preempt and Requeue share; `by` "" for a requeue.
  void StartPreemption(Job* job, const std::string& by, const std::string& reason, absl::Time now,
                       Effects* fx);
  // A move found no room: Retry for kRedispatch, else Fail.
  void Redispatch(Job* job, const RetryDecision& d, absl::Time now, Effects* fx) override;
  void SendLaunch(const Job& job, const Replica& r, Effects* fx);
  // The same with `view` (GangViewOf the job now), for launching many replicas of one job.
  void SendLaunch(const Job& job, const Replica& r, const GangView& view, Effects* fx);
  void SendStop(const Job& job, const Replica& r, absl::Duration grace, const std::string& reason,
                Effects* fx, const std::string& capture_stacks = "") override;

  // Routed to ReplicaMoves::PlaceMoved.
  void PlaceMoved(Job* job, Replica* r, absl::Time now, Effects* fx, bool new_run) override;

  // Routed to ElasticPools::WaitForRoom and GrowBack.
  bool WaitForRoom(Job* job, Replica* r, const std::string& room, bool new_run, absl::Time now,
                   Effects* fx) override;
  void GrowBack(Job* job, absl::Time now, Effects* fx) override;
  // Routed to FabricChecks::CheckRestart.
  bool CheckFabricFirst(Job* job, absl::Time now, Effects* fx) override {
    return fabric_.CheckRestart(job, now, fx);
  }

  JobTable* const jobs_;
  NodeRegistry* const nodes_;
  AdmissionQueue* const queue_;
  Timers* const timers_;
  ReplicaBinding binding_;
  GangEpisodes gang_;
  ReplicaMoves moves_;
  ElasticPools elastic_;
  FabricChecks fabric_;
  // Jobs that became terminal since the last TakeEnded.
  std::vector<std::string> ended_;
};

// How often progress reports may write a job's row: every 30 s, or a quarter of the hang
// timeout when that is shorter.
absl::Duration ProgressWriteInterval(const RetryPolicy& policy);

}  // namespace trainctl::sched
