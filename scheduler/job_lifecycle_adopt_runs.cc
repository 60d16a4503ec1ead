// JobLifecycle::Reconcile (job_lifecycle.h): an agent's registration reconciled with the runs the
// scheduler expects on its node — the runs it still has are adopted or stopped, launches it never
// received are sent again, and runs it no longer has end as lost (R12).
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "scheduler/job_lifecycle.h"
#include "scheduler/job_validation.h"

namespace trainctl::sched {

void JobLifecycle::Reconcile(const v1::Register& reg, absl::Time now, Effects* fx) {
  const std::string& node = reg.node();
  // Runs the agent knows: adopt the wanted ones, stop the rest.
  std::set<std::string> known_runs;
  for (const v1::KnownRun& run : reg.runs()) {
    known_runs.insert(run.run_id());
    auto [job, r] = jobs_->CurrentRun(run.run_id());
    if (job == nullptr || r->node != node || IsTerminal(r->state)) {
      if (run.running()) {
        fx->commands.push_back(
            {node, StopMessage(run.run_id(), absl::Milliseconds(kDefaultStopGraceMs),
                               "the scheduler no longer wants this run")});
        AddEvent(fx, now, nullptr, "", node, "OrphanStopped",
                 absl::StrCat("run ", run.run_id(), " is not wanted any more; stopping it"));
      }
      continue;
    }
    if (r->state == v1::REPLICA_STATE_STARTING && run.running()) {
      SetReplicaState(job, r, v1::REPLICA_STATE_RUNNING);
      r->pid = run.pid();
      r->message = absl::StrCat("re-adopted on ", node);
      Touch(job, now, fx);
      RecordRun(*job, *r, fx);
      MaybeMarkRunning(job, now, fx);
    } else if (r->state == v1::REPLICA_STATE_STOPPING && run.running()) {
      SendStop(*job, *r, absl::Milliseconds(job->policy.stop_grace_ms), r->message, fx);
    }
  }

  // Runs the scheduler placed here that the agent does not know.
  for (const std::string& id : jobs_->ActiveIds()) {
    Job* job = jobs_->Find(id);
    for (Replica& r : job->replicas) {
      if (r.node != node || !HoldsResources(r.state)) continue;
      if (known_runs.count(job->RunIdOf(r)) > 0) continue;
      if (r.state == v1::REPLICA_STATE_STARTING) {
        SendLaunch(*job, r, fx);  // the launch never reached the agent
      } else if (r.state == v1::REPLICA_STATE_STOPPING) {
        // The restarted agent no longer has it: the stop is over, whatever it was for.
        r.end_time = now;
        r.pid = 0;
        v1::ReplicaExited gone;
        gone.set_run_id(job->RunIdOf(r));
        gone.set_stopped_by_request(true);
        if (!FinishStop(job, &r, gone, now, fx)) {
          // The hang detector's stop: the replica is gone, as if it had been stopped.
          Failure hung;
          hung.kind = Failure::Kind::kHung;
          hung.report = gone;
          EndRun(job, &r, hung, now, fx);
        }
      } else if (r.state == v1::REPLICA_STATE_RUNNING) {
        r.pid = 0;
        r.end_time = now;
        Failure lost;
        lost.kind = Failure::Kind::kLost;
        EndRun(job, &r, lost, now, fx);
      }
    }
  }
  // A fabric check's round the agent may have lost with its restart.
  fabric_.Resend(node, fx);
  queue_->Wake();
}

}  // namespace trainctl::sched
