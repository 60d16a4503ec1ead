// The queue operations of Core (core.h): hold, release, update and requeue a job, each with an
// event naming who asked; and the settling of dependencies (dependencies.h) when jobs end.
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/array_ids.h"
#include "common/enum_names.h"
#include "common/job_states.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/job_validation.h"

namespace trainctl::sched {
namespace {

constexpr size_t kMaxReasonChars = 1024;

absl::Status NotQueued(const Job& job, const char* what) {
  return absl::FailedPreconditionError(
      absl::StrCat("job ", job.id, " is ", EnumShortName(job.state), ": only a QUEUED job ", what));
}

absl::Status CheckReason(const std::string& reason) {
  if (reason.size() > kMaxReasonChars) {
    return absl::InvalidArgumentError(absl::StrCat("reason must be at most ", kMaxReasonChars,
                                                   " characters, got ", reason.size()));
  }
  return absl::OkStatus();
}

std::string By(const std::string& actor) { return actor.empty() ? "" : " by " + actor; }

}  // namespace

absl::StatusOr<const Job*> Core::HoldJob(const std::string& id, const std::string& actor,
                                         const std::string& reason, absl::Time now, Effects* fx) {
  TC_RETURN_IF_ERROR(CheckReason(reason));
  Job* job = jobs_.Find(id);
  int32_t index = 0;
  if (Job* array = job == nullptr ? UnstartedElement(id, &index) : nullptr) {
    return UnstartedOp(array, index, UnstartedAction::kHold, actor, now, fx);
  }
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  if (job->array) return HoldArray(job, actor, reason, now, fx);
  if (job->state != v1::JOB_STATE_QUEUED) return NotQueued(*job, "can be held");
  if (job->held) {
    return absl::FailedPreconditionError(absl::StrCat("job ", id, " is held already",
                                                      By(job->held_by), "; `trainctl release ", id,
                                                      "` lets it run"));
  }
  // Out of the queue and back in: a held job has no queue deadline (AdmissionQueue::DeadlineOf).
  queue_.Dequeue(*job);
  job->held = true;
  job->held_by = actor;
  job->hold_reason = reason;
  job->hold_time = now;
  queue_.Enqueue(*job);
  AddEvent(fx, now, job, "", "", "JobHeld",
           absl::StrCat("held", By(actor), reason.empty() ? "" : ": " + reason,
                        "; not admitted until released"));
  Touch(job, now, fx);
  return job;
}

absl::StatusOr<const Job*> Core::ReleaseJob(const std::string& id, const std::string& actor,
                                            absl::Time now, Effects* fx) {
  Job* job = jobs_.Find(id);
  int32_t index = 0;
  if (Job* array = job == nullptr ? UnstartedElement(id, &index) : nullptr) {
    return UnstartedOp(array, index, UnstartedAction::kRelease, actor, now, fx);
  }
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  if (job->array) return ReleaseArray(job, actor, now, fx);
  if (!job->held) {
    return absl::FailedPreconditionError(absl::StrCat("job ", id, " is not held"));
  }
  queue_.Dequeue(*job);
  job->held = false;
  const std::string held =
      absl::StrCat(By(job->held_by), " since ", FormatRfc3339(ToMs(job->hold_time.value_or(now))));
  job->held_by.clear();
  job->hold_reason.clear();
  job->hold_time.reset();
  // Its queueTimeout counts afresh from the release.
  job->queue_time = now;
  queue_.Enqueue(*job);
  AddEvent(fx, now, job, "", "", "JobReleased",
           absl::StrCat("released", By(actor), " (held", held, ")"));
  Touch(job, now, fx);
  return job;
}

absl::StatusOr<const Job*> Core::UpdateJob(const v1::UpdateJobRequest& req,
                                           const std::string& actor, absl::Time now, Effects* fx) {
  Job* job = jobs_.Find(req.id());
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", req.id(), " not found"));
  if (job->state != v1::JOB_STATE_QUEUED) return NotQueued(*job, "can be updated");
  if (!req.has_priority() && !req.has_queue_timeout() && req.labels().empty() &&
      req.remove_labels().empty()) {
    return absl::InvalidArgumentError("nothing to update: set priority, queueTimeout or labels");
  }
  // The spec as it would be, validated as at submit.
  v1::JobSpec spec = job->spec;
  std::vector<std::string> changes;
  if (req.has_priority() && req.priority() != spec.priority()) {
    changes.push_back(absl::StrCat("priority ", spec.priority(), " -> ", req.priority()));
    spec.set_priority(req.priority());
  }
  if (req.has_queue_timeout()) {
    changes.push_back(absl::StrCat("queueTimeout ",
                                   FormatDuration(DurationToMs(spec.scheduling().queue_timeout())),
                                   " -> ", FormatDuration(DurationToMs(req.queue_timeout()))));
    *spec.mutable_scheduling()->mutable_queue_timeout() = req.queue_timeout();
  }
  for (const auto& [key, value] : req.labels()) {
    changes.push_back(absl::StrCat("label ", key, "=", value));
    (*spec.mutable_labels())[key] = value;
  }
  for (const std::string& key : req.remove_labels()) {
    if (spec.mutable_labels()->erase(key) > 0)
      changes.push_back(absl::StrCat("label ", key, " removed"));
  }
  if (absl::Status valid = ValidateJobSpec(spec); !valid.ok()) return valid;
  if (changes.empty()) return job;
  // An array is not in the queue: its update reaches the elements that start later.
  if (!job->array) queue_.Dequeue(*job);
  job->spec = std::move(spec);
  job->priority = job->spec.priority();
  job->policy = RetryPolicy::ForJob(job->spec);
  if (!job->array) queue_.Enqueue(*job);
  AddEvent(fx, now, job, "", "", "JobUpdated",
           absl::StrCat("updated", By(actor), ": ", absl::StrJoin(changes, ", ")));
  Touch(job, now, fx);
  return job;
}

absl::StatusOr<const Job*> Core::RequeueJob(const std::string& id, const std::string& actor,
                                            const std::string& reason, absl::Time now,
                                            Effects* fx) {
  TC_RETURN_IF_ERROR(CheckReason(reason));
  Job* job = jobs_.Find(id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  if (job->array) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is a job array, which never runs itself: requeue its elements by id (", id,
        "-<index>)"));
  }
  if (!IsLive(job->state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", EnumShortName(job->state),
                     ": only a PENDING or RUNNING job can be requeued"));
  }
  if (JobLifecycle::Preempting(*job)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is being preempted already; it returns to the queue by ",
                     FormatRfc3339(ToMs(job->preemption->deadline))));
  }
  lifecycle_.Requeue(job, absl::StrCat("requeued", By(actor), reason.empty() ? "" : ": " + reason),
                     now, fx);
  return job;
}

void Core::SettleDependencies(absl::Time now, Effects* fx) {
  // Elements that changed this turn reach their arrays' counts first: an array done now ends
  // now, and its waiters learn of it below.
  CountArrayElements(now, fx);
  // Ending a waiting job ends its own waiters' hopes in turn: until nothing more ends.
  while (true) {
    const std::vector<std::string> ended = lifecycle_.TakeEnded();
    const std::vector<std::string> unstarted = std::exchange(unstarted_ends_, {});
    if (ended.empty() && unstarted.empty()) break;
    for (const std::string& id : ended) {
      const Job* done = jobs_.Find(id);
      if (done == nullptr) continue;
      SettleWaiters(id, done->state, now, fx);
      // An array's elements that never started ended with it.
      if (done->array) {
        for (int32_t index : done->array->indices) {
          if (done->array->started.count(index) == 0) {
            SettleWaiters(ElementIdOf(id, index), v1::JOB_STATE_CANCELLED, now, fx);
          }
        }
      }
    }
    for (const std::string& id : unstarted) {
      SettleWaiters(id, v1::JOB_STATE_CANCELLED, now, fx);
    }
  }
  FeedArrays(now, fx);
}

void Core::SettleWaiters(const std::string& id, v1::JobState state, absl::Time now, Effects* fx) {
  for (const std::string& waiter_id : dependencies_.Take(id)) {
    Job* waiter = jobs_.Find(waiter_id);
    if (waiter == nullptr || waiter->state != v1::JOB_STATE_QUEUED) continue;
    for (v1::DependencyStatus& d : waiter->dependencies) {
      if (d.job() != id || d.ended() != v1::JOB_STATE_UNSPECIFIED) continue;
      RecordEnd(&d, state);
      AddEvent(fx, now, waiter, "", "", d.met() ? "DependencyMet" : "DependencyNeverMet",
               absl::StrCat("job ", id, " ended ", EnumShortName(state),
                            d.met() ? ": condition met" : ": it can never ",
                            d.met() ? "" : ConditionVerb(d.condition())));
    }
    Touch(waiter, now, fx);
    queue_.Wake();
    if (const v1::DependencyStatus* never = NeverMet(waiter->dependencies)) {
      DependencyNeverMet(waiter, *never, now, fx);
    }
  }
}

void Core::DependencyNeverMet(Job* job, const v1::DependencyStatus& d, absl::Time now,
                              Effects* fx) {
  if (job->spec.dependency_policy() == v1::DEPENDENCY_POLICY_KEEP_WAITING) return;
  JobError error;
  error.code = absl::StatusCode::kFailedPrecondition;
  error.reason = FailureClass::kUserError;
  error.message = absl::StrCat("Dependency ", d.job(), " ended ", EnumShortName(d.ended()),
                               "; job ", job->id, " needed it to ", ConditionVerb(d.condition()),
                               ", so it never ran (dependencyPolicy FAIL).");
  lifecycle_.End(job, v1::JOB_STATE_FAILED, error, error.message, now, fx);
}

}  // namespace trainctl::sched
