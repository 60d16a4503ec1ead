// JobLifecycle's preemptions (job_lifecycle.h): a job chosen as a victim (victims.h) gets the
// notice on each running replica, then its attempt ends as PREEMPTED at the earliest of: every
// replica exited, a replica reported a checkpoint after the notice, or the grace period's end.
// The replicas still running then get the usual stop, and the job waits in the queue in its own
// place (priority, then submission), charged to no budget.
#include <string>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "scheduler/failure_classifier.h"
#include "scheduler/job_lifecycle.h"
#include "scheduler/launch_env.h"

namespace trainctl::sched {

bool JobLifecycle::Preempting(const Job& job) {
  return job.preemption && IsLive(job.state) && job.preemption->attempt == job.current_attempt() &&
         job.current_attempt() > 0;
}

void JobLifecycle::Preempt(Job* job, const Job& by, const std::string& reason, absl::Time now,
                           Effects* fx) {
  fx->tally.preempted.push_back(
      {job->project, by.project == job->project ? "priority" : "reclaim"});
  StartPreemption(job, by.id, reason, now, fx);
}

void JobLifecycle::Requeue(Job* job, const std::string& reason, absl::Time now, Effects* fx) {
  StartPreemption(job, "", reason, now, fx);
}

// "preempted for job j-2" or, with no preemptor (a requeue), "requeued".
static std::string PreemptedFor(const Preemption& p) {
  return p.by.empty() ? "requeued" : absl::StrCat("preempted for job ", p.by);
}

void JobLifecycle::StartPreemption(Job* job, const std::string& by, const std::string& reason,
                                   absl::Time now, Effects* fx) {
  Preemption p;
  p.by = by;
  p.reason = reason;
  p.decided = now;
  p.deadline = now + absl::Milliseconds(job->policy.preemption_grace_ms);
  p.attempt = job->current_attempt();
  job->preemption = p;
  AddEvent(fx, now, job, "", "", by.empty() ? "JobRequeuing" : "JobPreempting",
           absl::StrCat(by.empty() ? "" : "preempted for job " + by + ": ", reason,
                        "; its replicas may checkpoint until ", When(p.deadline)));
  SendNotices(job, now, fx);
  Touch(job, now, fx);
  // A replica that never reported its start has no work to save: with none running, the attempt
  // ends at once.
  bool running = false;
  for (const Replica& r : job->replicas) running |= r.state == v1::REPLICA_STATE_RUNNING;
  if (!running || p.deadline <= now) {
    EndPreemptedAttempt(job, "none of its replicas was running", now, fx);
    return;
  }
  timers_->WakeAt(p.deadline);
}

void JobLifecycle::SendNotices(Job* job, absl::Time /*now*/, Effects* fx) {
  if (!Preempting(*job)) return;
  for (const Replica& r : job->replicas) {
    if (r.state != v1::REPLICA_STATE_RUNNING) continue;
    fx->commands.push_back(
        {r.node, NoticeMessage(job->RunIdOf(r), "preemption", job->preemption->deadline,
                               job->preemption->by, job->preemption->reason,
                               job->policy.preemption_signal)});
  }
}

void JobLifecycle::Checkpointed(Job* job, absl::Time t, absl::Time now, Effects* fx) {
  t = std::min(t, now);
  if (job->last_checkpoint && t <= *job->last_checkpoint) return;
  job->last_checkpoint = t;
  Touch(job, now, fx);
  if (Preempting(*job) && t >= job->preemption->decided) {
    EndPreemptedAttempt(job, absl::StrCat("a replica reported a checkpoint at ", When(t)), now, fx);
  }
}

void JobLifecycle::PreemptedExit(Job* job, Replica* r, const v1::ReplicaExited& exited,
                                 absl::Time now, Effects* fx) {
  SetReplicaState(job, r, v1::REPLICA_STATE_STOPPED);
  r->message = absl::StrCat("exited after the preemption notice (", DescribeExit(exited), ")");
  AddEvent(fx, now, job, r->name, r->node, "ReplicaStopped",
           absl::StrCat(r->message, ": the job is being ", PreemptedFor(*job->preemption)));
  RecordRun(*job, *r, fx);
  queue_->Wake();
  for (const Replica& other : job->replicas) {
    if (IsLive(other.state)) {
      Touch(job, now, fx);
      return;
    }
  }
  EndPreemptedAttempt(job, "every replica exited", now, fx);
}

void JobLifecycle::EndPreemptedAttempt(Job* job, const std::string& why, absl::Time now,
                                       Effects* fx) {
  const Preemption& p = *job->preemption;
  RetryDecision d;
  d.action = Decision::kPreempt;
  d.failure_class = FailureClass::kPreempted;
  d.budgets_used = job->budgets_used;
  d.error.message = absl::StrCat(PreemptedFor(p), ": ", p.reason);
  RecordAttemptEnd(job, d, now, fx);
  job->preemptions++;
  job->gang_restarting = false;
  job->root_cause.reset();
  AddEvent(fx, now, job, "", "", p.by.empty() ? "JobRequeued" : "JobPreempted",
           absl::StrCat(PreemptedFor(p), " (", why, "): ", p.reason,
                        "; it waits in the queue in its own place, charged to no budget"));
  if (!p.by.empty()) fx->tally.preemption_ends.push_back({job->project, now - p.decided});
  StopLiveReplicas(job, PreemptedFor(p), now, fx);
  elastic_.RestoreWorld(job);
  job->next_attempt_time.reset();
  job->queue_time = now;
  job->queue_reason =
      absl::StrCat("PREEMPTED: attempt ", job->attempts.size(), " was ", PreemptedFor(p),
                   "; the next starts once its replicas have stopped and it fits");
  SetJobState(job, v1::JOB_STATE_QUEUED,
              absl::StrCat("attempt ", job->attempts.size(), " ", PreemptedFor(p)), now, fx);
  queue_->Enqueue(*job);
  jobs_->RefreshActive(*job);
}

}  // namespace trainctl::sched
