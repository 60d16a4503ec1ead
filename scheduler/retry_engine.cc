#include "scheduler/retry_engine.h"

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/elastic.h"

namespace trainctl::sched {
namespace {

// A delay in seconds, as the explanations give it: "1.5" for 1500ms.
double DelaySeconds(absl::Duration d) { return absl::ToInt64Milliseconds(d) / 1000.0; }

// A decision whose budgets start as the job's.
RetryDecision Start(const Job& job) {
  RetryDecision d;
  d.budgets_used = job.budgets_used;
  return d;
}

// The budgets a new attempt after a replica's failure may be charged to.
enum class RetryBudget {
  kJob,       // maxJobRetries
  kInternal,  // maxInternalRetries
  kCapacity,  // maxCapacityRetries: the launch's image registry could not be reached
};

// Charges a new attempt to `budget` and decides RETRY_JOB, or FAIL_JOB when that budget is used
// up. A capacity retry also has the job's CapacityRetry or CapacityExhausted event.
RetryDecision RetryOrFail(const RetryPolicy& p, const Job& job, RetryDecision d, RetryBudget budget,
                          const std::string& why) {
  int32_t* charge = budget == RetryBudget::kInternal   ? &d.budgets_used.internal_retries
                    : budget == RetryBudget::kCapacity ? &d.budgets_used.capacity_retries
                                                       : &d.budgets_used.job_retries;
  const int used = *charge;
  const int max = budget == RetryBudget::kInternal   ? p.max_internal_retries
                  : budget == RetryBudget::kCapacity ? p.max_capacity_retries
                                                     : p.max_job_retries;
  const char* name = budget == RetryBudget::kInternal   ? "maxInternalRetries"
                     : budget == RetryBudget::kCapacity ? "maxCapacityRetries"
                                                        : "maxJobRetries";
  const bool capacity = budget == RetryBudget::kCapacity;
  if (used < max) {
    d.action = Decision::kRetryJob;
    *charge = used + 1;
    d.delay = absl::Milliseconds(BackoffDelayMs(p.retry_backoff, used + 1));
    absl::StrAppend(&d.explanation, "; ", why, ": retrying the job as attempt ",
                    job.attempts.size() + 1, " (", name, " ", used + 1, " of ", max, " used) in ",
                    DelaySeconds(d.delay), "s");
    if (capacity) {
      d.job_event_type = "CapacityRetry";
      d.job_event = absl::StrCat(d.error.message, " Capacity retry ", used + 1, " of ", max,
                                 " (maxCapacityRetries) in ", DelaySeconds(d.delay), "s.");
    }
  } else {
    d.action = Decision::kFailJob;
    absl::StrAppend(&d.explanation, "; ", why, ", and ", name, " (", max,
                    ") is used up: failing the job");
    if (capacity) {
      absl::StrAppend(&d.error.message, " It could not be reached through ", used,
                      " capacity retries (maxCapacityRetries ", max, ").");
      d.job_event_type = "CapacityExhausted";
      d.job_event = d.error.message;
    }
  }
  return d;
}

// Restarts in place if the replica's budget allows (charged or not), else retries the job.
RetryDecision RestartOrRetry(const RetryPolicy& p, const Job& job, const Replica& r,
                             RetryDecision d, bool charge, absl::Time now) {
  int32_t charged = r.charged_restarts;
  if (charge && charged > 0 && p.progress_reset_ms > 0 && r.start_time && r.last_progress_time &&
      *r.last_progress_time > *r.start_time &&
      now - *r.start_time >= absl::Milliseconds(p.progress_reset_ms)) {
    charged = 0;
    d.progress_reset = true;
    absl::StrAppend(&d.explanation,
                    "; it had shown progress and run stably for progressResetPeriod, so its "
                    "restart count was reset");
  }
  if (!charge || charged < p.max_replica_restarts) {
    // GANG: the whole gang restarts together, charged once, to this replica.
    const bool gang = p.gang && job.replicas.size() > 1;
    d.action = gang ? Decision::kRestartGang : Decision::kRestartReplica;
    d.charged_restarts = charge ? charged + 1 : charged;
    d.charged = charge;
    const int nth = r.restart_count + 1;  // restarts in this attempt, this one included
    d.delay = nth <= 1 ? absl::ZeroDuration()
                       : absl::Milliseconds(BackoffDelayMs(p.restart_backoff, nth - 1));
    absl::StrAppend(
        &d.explanation,
        gang ? absl::StrCat("; restarting the whole gang of ", WorldSize(job),
                            " replicas in place (restartScope GANG, ")
             : absl::StrCat("; restarting it in place on ", r.node, " ("),
        charge ? absl::StrCat("restart ", d.charged_restarts, " of ", p.max_replica_restarts,
                              gang ? absl::StrCat(", charged to ", r.name) : "")
               : std::string("not charged"),
        ") in ", DelaySeconds(d.delay), "s");
    return d;
  }
  return RetryOrFail(p, job, d, RetryBudget::kJob,
                     absl::StrCat("it failed again after its ", p.max_replica_restarts,
                                  " restarts (maxReplicaRestarts)"));
}

// A host fault (R16): re-dispatch on other hosts, first in the queue (R17), while
// faultTolerance.jobRetryNum allows; else fail with "error,exiting" (R21). A drain's move that
// found no room is re-dispatched without a charge, and never fails.
RetryDecision Redispatch(const Job& job, RetryDecision d, const JobError& cause, bool charged) {
  const int allowed = job.policy.max_redispatches;
  const int used = job.budgets_used.redispatches;
  d.failure_class = charged ? FailureClass::kHostFault : FailureClass::kMaintenance;
  d.rule = charged ? "faultTolerance.jobRetryNum" : "drain";
  d.error = cause;
  if (!charged || used < allowed) {
    d.action = Decision::kRedispatch;
    if (charged) d.budgets_used.redispatches = used + 1;
    d.job_event_type = "JobRedispatched";
    d.job_event = absl::StrCat(cause.message, " Re-dispatching the job on other hosts",
                               charged ? absl::StrCat(" (re-dispatch ", used + 1, " of ", allowed,
                                                      ", faultTolerance.jobRetryNum)")
                                       : std::string(" (maintenance: not charged)"),
                               "; it queues ahead of other jobs and gives up after 30m.");
    return d;
  }
  d.action = Decision::kFailJob;
  d.error.message = absl::StrCat(
      "error,exiting: ", cause.message,
      allowed == 0 ? " Re-dispatch is off (faultTolerance.jobRetryNum is 0)."
                   : absl::StrCat(" Re-dispatch is exhausted: ", used, " of ", allowed,
                                  " re-dispatches (faultTolerance.jobRetryNum) used."));
  d.job_event_type = "JobExiting";
  d.job_event = d.error.message;
  return d;
}

}  // namespace

RetryDecision DecideOnFailure(const RetryPolicy& p, const Job& job, const Replica& r,
                              const Failure& f, absl::Time now) {
  const Classification c = Classify(p, r, f);
  RetryDecision d = Start(job);
  d.failure_class = c.failure_class;
  d.rule = c.rule;
  d.error = c.error;
  d.event_type = c.event_type;
  d.explanation = c.explanation;
  d.summary = c.summary;
  d.replica_message = !c.replica_message.empty() ? c.replica_message
                      : c.failure_class == FailureClass::kNone
                          ? c.summary
                          : absl::StrCat(c.summary, " (", FailureClassName(c.failure_class), ")");
  switch (c.remedy) {
    case Remedy::kSucceed:
      d.action = r.rank == 0 ? Decision::kSucceedJob : Decision::kContinue;
      absl::StrAppend(&d.explanation,
                      r.rank == 0 ? "; it is the primary: the job succeeded" : "; the job goes on");
      return d;
    case Remedy::kRestart:
      return RestartOrRetry(p, job, r, d, /*charge=*/true, now);
    case Remedy::kRestartUncharged:
      return RestartOrRetry(p, job, r, d, /*charge=*/false, now);
    case Remedy::kRetryJob:
      return RetryOrFail(p, job, d, RetryBudget::kJob, c.retry_why);
    case Remedy::kInternalRetry:
      return RetryOrFail(p, job, d, RetryBudget::kInternal, c.retry_why);
    case Remedy::kCapacityRetry:
      return RetryOrFail(p, job, d, RetryBudget::kCapacity, c.retry_why);
    case Remedy::kRedispatch:
      return Redispatch(job, d, c.error, /*charged=*/true);
    case Remedy::kMove:
      d.action = Decision::kMoveReplica;
      d.move_cause = c.move_cause;
      d.move_reason = c.move_reason;
      return d;
    case Remedy::kFail:
      break;
  }
  d.action = Decision::kFailJob;
  absl::StrAppend(&d.explanation, ": failing the job", c.fail_hint);
  return d;
}

bool Settles(const RetryPolicy& p, const Job& job, const Replica& r, const Failure& f) {
  if (!p.gang || job.replicas.size() < 2 || p.settle_window_ms <= 0) return false;
  return Classify(p, r, f).failure_class == FailureClass::kUserError;
}

size_t ChooseRootCause(const std::vector<FailureCandidate>& candidates, absl::Duration skew) {
  size_t earliest = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (candidates[i].exit_time < candidates[earliest].exit_time) earliest = i;
  }
  if (!candidates[earliest].user_error) return earliest;
  // Within the skew of the earliest, a failure that is not the user's wins: a broken collective
  // makes peers exit with errors of their own, and agents' clocks and reports disagree a little.
  size_t best = earliest;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].user_error ||
        candidates[i].exit_time - candidates[earliest].exit_time > skew) {
      continue;
    }
    if (best == earliest || candidates[i].exit_time < candidates[best].exit_time) best = i;
  }
  return best;
}

RetryDecision DecideNoRoomForMove(const Job& job, const Replica& r, const std::string& from,
                                  MoveCause cause, const std::string& why,
                                  const std::string& room) {
  JobError error;
  error.code = absl::StatusCode::kUnavailable;
  error.reason = FailureClass::kHostFault;
  error.replica = r.name;
  error.node = from;
  error.message = absl::StrCat("Replica ", r.name, " had to leave node ", from, " (", why,
                               ") but no other healthy node has room for it (", room, ").");
  // A drain moves for maintenance: re-dispatching it charges nothing.
  return Redispatch(job, Start(job), error, /*charged=*/cause != MoveCause::kDrain);
}

RetryDecision DecideOnFabricCheck(const Job& job, const std::string& culprit,
                                  const std::string& why, bool failed_before) {
  JobError error;
  error.code = absl::StatusCode::kUnavailable;
  error.reason = FailureClass::kHostFault;
  error.node = culprit;
  error.message = culprit.empty()
                      ? absl::StrCat("The fabric check between the gang's nodes failed: ", why, ".")
                      : absl::StrCat("Node ", culprit, " failed the fabric check: ", why, ".");
  if (!culprit.empty() || !failed_before) {
    RetryDecision d = Redispatch(job, Start(job), error, /*charged=*/true);
    d.rule = "faultTolerance.gangCheck";
    return d;
  }
  RetryDecision d = Start(job);
  d.action = Decision::kFailJob;
  d.failure_class = FailureClass::kHostFault;
  d.rule = "faultTolerance.gangCheck";
  d.error = error;
  d.error.message = absl::StrCat("error,exiting: ", error.message,
                                 " The previous attempt's check failed too, with no single node to "
                                 "blame; set faultTolerance.gangCheck to OFF to start unchecked.");
  d.job_event_type = "JobExiting";
  d.job_event = d.error.message;
  return d;
}

RetryDecision DecideOnFabricAbandoned(const Job& job, const std::string& why) {
  RetryDecision d = Start(job);
  d.action = Decision::kRedispatch;
  d.failure_class = FailureClass::kHostFault;
  d.rule = "faultTolerance.gangCheck";
  d.error.code = absl::StatusCode::kUnavailable;
  d.error.reason = FailureClass::kHostFault;
  d.error.message = absl::StrCat("The fabric check was abandoned: ", why, ".");
  d.job_event_type = "JobRedispatched";
  d.job_event = absl::StrCat(d.error.message,
                             " Re-dispatching the job on other hosts (not charged); it queues "
                             "ahead of other jobs.");
  return d;
}

RetryDecision DecideOnStockout(const Job& job, const std::string& what) {
  const RetryPolicy& p = job.policy;
  const int used = job.budgets_used.capacity_retries;
  RetryDecision d = Start(job);
  d.failure_class = FailureClass::kCapacity;
  d.rule = "maxCapacityRetries";
  if (used >= p.max_capacity_retries) {
    d.action = Decision::kFailJob;
    d.error = CapacityError(what);
    d.job_event_type = "CapacityExhausted";
    d.job_event =
        absl::StrCat("no healthy capacity within placementTimeout after ", used,
                     " capacity retries (maxCapacityRetries ", p.max_capacity_retries, "): ", what);
    return d;
  }
  d.action = Decision::kRetryJob;
  d.budgets_used.capacity_retries = used + 1;
  d.delay = absl::Milliseconds(BackoffDelayMs(p.retry_backoff, used + 1));
  d.job_event_type = "CapacityRetry";
  d.job_event =
      absl::StrCat("no healthy capacity within placementTimeout: ", what, "; capacity retry ",
                   used + 1, " of ", p.max_capacity_retries, " in ", DelaySeconds(d.delay), "s");
  return d;
}

JobError CapacityError(const std::string& what) {
  JobError e;
  e.code = absl::StatusCode::kResourceExhausted;
  e.reason = FailureClass::kCapacity;
  e.message = absl::StrCat("Resources are insufficient in cluster: ", what, ".");
  return e;
}

JobError DeadlineError(absl::Duration timeout) {
  JobError e;
  e.code = absl::StatusCode::kDeadlineExceeded;
  e.reason = FailureClass::kDeadline;
  e.message =
      absl::StrCat("Job exceeded its timeout of ", absl::ToInt64Milliseconds(timeout) / 1000,
                   "s (scheduling.timeout) and was stopped.");
  return e;
}

JobError QueueTimeoutError(absl::Duration waited, absl::Duration timeout, bool retry,
                           const std::string& waiting_for) {
  JobError e;
  e.code = absl::StatusCode::kDeadlineExceeded;
  e.reason = FailureClass::kDeadline;
  e.message = absl::StrCat("Job waited ", FormatDuration(ToMs(waited)),
                           " in the queue (queueTimeout ", FormatDuration(ToMs(timeout)),
                           retry ? ", for a retry" : "", ") and gave up; it was waiting for: ",
                           waiting_for.empty() ? std::string("its turn") : waiting_for, ".");
  return e;
}

}  // namespace trainctl::sched
