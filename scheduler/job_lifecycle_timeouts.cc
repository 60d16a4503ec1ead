// JobLifecycle's time limits (Tick, Progress; job_lifecycle.h). Each tick ends jobs past their
// timeout, decides gang failures whose settle window has passed, starts replicas whose restart
// backoff is over, and fails launches and runs past launchTimeout and hangTimeout, and moves on the
// elastic waits of restarting gangs. Progress reports feed the hang check.
#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "scheduler/job_lifecycle.h"
#include "scheduler/retry_engine.h"
#include "scheduler/stragglers.h"

namespace trainctl::sched {

void JobLifecycle::Progress(Job* job, Replica* r, absl::Time t, int64_t step, absl::Time now,
                            Effects* fx) {
  if (r->state != v1::REPLICA_STATE_RUNNING) return;
  t = std::min(t, now);
  if (r->last_progress_time && t <= *r->last_progress_time) return;
  r->last_progress_time = t;
  if (step > 0) r->step = step;
  // The row is written at most once per ProgressWriteInterval: a scheduler that restarts reads a
  // progress time at most that old, well within the hang timeout.
  const absl::Duration every = ProgressWriteInterval(job->policy);
  if (r->progress_written && now - *r->progress_written < every) return;
  r->progress_written = now;
  Touch(job, now, fx);
}

absl::Duration ProgressWriteInterval(const RetryPolicy& policy) {
  absl::Duration every = absl::Seconds(30);
  if (policy.hang_timeout_ms > 0)
    every = std::min(every, absl::Milliseconds(policy.hang_timeout_ms) / 4);
  return every;
}

void JobLifecycle::Tick(absl::Time now, Effects* fx) {
  fabric_.Tick(now, fx);
  for (const std::string& id : jobs_->ActiveIds()) {
    Job* job = jobs_->Find(id);
    if (!IsLive(job->state)) continue;
    const RetryPolicy& policy = job->policy;
    if (policy.timeout_ms > 0 && job->start_time &&
        now >= *job->start_time + absl::Milliseconds(policy.timeout_ms) + job->preempted_wait) {
      const JobError error = DeadlineError(absl::Milliseconds(policy.timeout_ms));
      End(job, v1::JOB_STATE_FAILED, error, error.message, now, fx);
      continue;
    }
    if (Preempting(*job)) {
      if (now >= job->preemption->deadline) {
        EndPreemptedAttempt(
            job, absl::StrCat("its grace period ended at ", When(job->preemption->deadline)), now,
            fx);
        continue;
      }
      timers_->WakeAt(job->preemption->deadline);
    }
    if (GangEpisodes::IsGang(*job)) {
      // A gang starts again as one; a settled failure is decided as one episode.
      gang_.DecideSettled(job, now, fx);
      elastic_.Step(job, now, fx);
      gang_.MaybeRelaunch(job, now, fx);
    }
    for (Replica& r : job->replicas) {
      if (IsTerminal(job->state) || job->state == v1::JOB_STATE_QUEUED) break;
      if (r.state == v1::REPLICA_STATE_RESTARTING && GangEpisodes::IsGang(*job)) continue;
      if (r.state == v1::REPLICA_STATE_RESTARTING) {
        if (!r.next_start_time || now >= *r.next_start_time) {
          LaunchOnItsNode(job, &r, now, fx);
        } else {
          timers_->WakeAt(*r.next_start_time);
        }
      } else if (r.state == v1::REPLICA_STATE_STARTING && policy.launch_timeout_ms > 0 &&
                 r.start_time &&
                 now - *r.start_time >= absl::Milliseconds(policy.launch_timeout_ms)) {
        Failure f;
        f.kind = Failure::Kind::kLaunchTimeout;
        EndRun(job, &r, f, now, fx);
      } else if (r.state == v1::REPLICA_STATE_RUNNING && policy.hang_timeout_ms > 0) {
        std::optional<absl::Time> last = r.start_time;
        if (r.last_progress_time && (!last || *r.last_progress_time > *last)) {
          last = r.last_progress_time;
        }
        if (last && now - *last >= absl::Milliseconds(policy.hang_timeout_ms)) {
          // In a gang, the rank that stopped advancing first is the likely cause.
          const std::string first = FirstToStop(*job);
          const std::string cause = first.empty() ? "" : absl::StrCat(" (", first, ")");
          SetReplicaState(job, &r, v1::REPLICA_STATE_STOPPING);
          r.message = absl::StrCat("hung: no progress since ", When(*last), cause);
          SendStop(*job, r, absl::Milliseconds(policy.stop_grace_ms),
                   "hung: no progress within hangTimeout", fx,
                   policy.StacksBefore("hung", /*gang_restart=*/false));
          AddEvent(fx, now, job, r.name, r.node, "ReplicaStopping",
                   absl::StrCat("no progress since ", When(*last), cause,
                                " (hangTimeout): stopping it to restart it"));
          Touch(job, now, fx);
        }
      }
    }
  }
}

}  // namespace trainctl::sched
