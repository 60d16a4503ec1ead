// The retry engine: the one place that decides what a failure does to a job
// (docs/developers/architecture.md, "The retry engine's decision table"; R4-R10, R16-R19).
//
// Pure functions of the job's policy, its budgets, the classified failure and the time. Each
// classifies (scheduler/failure_classifier.h), charges the budget of that failure kind, and
// returns one typed decision with its reasons; the core applies it and decides nothing itself.
// Nothing here changes state.
//
// Budgets are kept apart per failure kind (the thing no peer does): in-place restarts per replica
// (maxReplicaRestarts), job retries (maxJobRetries), internal-error retries
// (maxInternalRetries), capacity retries (maxCapacityRetries: stockouts, and launches whose image
// registry could not be reached) and re-dispatches after host faults (faultTolerance.jobRetryNum).
// Moves off drained, lost or unhealthy hosts charge none of them.
//
//   RetryDecision d = DecideOnFailure(job.policy, job, replica, failure, now);
//   d.action == Decision::kRestartReplica; d.delay == absl::ZeroDuration(); d.charged_restarts == 1
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/failure_classifier.h"

namespace trainctl::sched {

struct RetryDecision {
  Decision action = Decision::kContinue;
  FailureClass failure_class = FailureClass::kNone;
  // What classified it: "default: transient exit code 134", "exitCodeRules[1]", ...
  std::string rule;
  // For kRestartReplica and kRestartGang: the replica's charged_restarts after this decision,
  // whether a restart was charged, and whether the charge was reset first by stable progress.
  int32_t charged_restarts = 0;
  bool charged = false;
  bool progress_reset = false;
  // Delay before the restart or the new attempt.
  absl::Duration delay = absl::ZeroDuration();
  // The job's budgets after the charge (unchanged when nothing was charged).
  Budgets budgets_used;
  // For kFailJob, and the cause of a kRetryJob or kRedispatch: code, message, replica, node,
  // the output's tail.
  JobError error;
  // How the run ended: "exited with status 134".
  std::string summary;
  // One line for the replica: "exited with status 134 (TRANSIENT)".
  std::string replica_message;
  // The replica's event: its type and reason (what happened, how it was classed, what was
  // decided and why).
  std::string event_type;
  std::string explanation;
  // For kMoveReplica: why the replica leaves its node.
  MoveCause move_cause = MoveCause::kNone;
  std::string move_reason;
  // The job's own event, when the decision has one (JobRedispatched, JobExiting, CapacityRetry,
  // CapacityExhausted): its type and reason.
  std::string job_event_type;
  std::string job_event;
};

// Decides what the end of `replica`'s run (a replica of `job`) means: success, a restart in
// place, a move, a new attempt, a re-dispatch or the job's failure. `now` is used for the
// progress reset only.
RetryDecision DecideOnFailure(const RetryPolicy& policy, const Job& job, const Replica& replica,
                              const Failure& failure, absl::Time now);

// True when the end of `replica`'s run must wait the settle window before it is decided: a
// USER_ERROR of a GANG job with more than one replica, which may be the consequence of a peer's
// failure whose report is still on its way.
bool Settles(const RetryPolicy& policy, const Job& job, const Replica& replica,
             const Failure& failure);

// One failure among those that may be one episode's root cause.
struct FailureCandidate {
  // When it exited, as its agent reported.
  absl::Time exit_time;
  // Classed USER_ERROR.
  bool user_error = false;
};
// The index of the root cause: the earliest exit, except that a failure that is not the user's
// within `skew` of the earliest wins over a user error. REQUIRES: candidates is not empty.
size_t ChooseRootCause(const std::vector<FailureCandidate>& candidates, absl::Duration skew);

// A replica had to leave node `from` for `cause` (`why` in words) and no other healthy node has
// room for it (`room`: what it needs and what the other nodes have, in words): re-dispatch the
// job, charged unless the node is drained, or fail it when re-dispatch is off or used up.
RetryDecision DecideNoRoomForMove(const Job& job, const Replica& replica, const std::string& from,
                                  MoveCause cause, const std::string& why, const std::string& room);

// The fabric check before the attempt's replicas started failed (fabric_checks.h): `culprit` is
// the node blamed ("" when no single node is), `why` says what failed. With a culprit: a
// re-dispatch charged to faultTolerance.jobRetryNum, as any host fault. Without one: the same
// re-dispatch, unless the previous attempt's check failed that way too (`failed_before`): then
// the job fails, listing what failed.
RetryDecision DecideOnFabricCheck(const Job& job, const std::string& culprit,
                                  const std::string& why, bool failed_before);
// A node of the gang left during its fabric check (`why`): a re-dispatch charged to nothing.
RetryDecision DecideOnFabricAbandoned(const Job& job, const std::string& why);

// The job could not be placed within placementTimeout because the healthy cluster cannot hold
// it even when idle (`what` it lacks): a capacity retry after a backoff (kRetryJob, delay),
// or kFailJob when maxCapacityRetries is used up (R8).
RetryDecision DecideOnStockout(const Job& job, const std::string& what);

// The final error of a job that could not be placed within its capacity budget:
// "Resources are insufficient in cluster: <what>."
JobError CapacityError(const std::string& what);

// The error of a job that ran past scheduling.timeout (`timeout`).
JobError DeadlineError(absl::Duration timeout);

// The error of a job that waited `waited` in the queue past its queue timeout (`timeout`), for a
// retry or not, and what it was waiting for.
JobError QueueTimeoutError(absl::Duration waited, absl::Duration timeout, bool retry,
                           const std::string& waiting_for);

}  // namespace trainctl::sched
