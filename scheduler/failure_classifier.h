// FailureClassifier: how a replica's run ended, classed (docs/developers/architecture.md, "The
// retry engine's decision table"; R4-R10, R16).
//
// A pure function of the job's policy, the replica and the report. It names the failure class,
// the rule that classed it, the error the job would end with, and the remedy the class calls for
// before any budget is looked at. The retry engine turns that into one decision.
//
//   Classification c = Classify(policy, replica, failure);
//   c.failure_class == FailureClass::kTransient; c.rule == "default: transient exit code 134";
//   c.remedy == Remedy::kRestart
//
// Thread-safety: none needed; no state.
#pragma once

#include <string>

#include "model/model.h"

namespace trainctl::sched {

// How a replica's run ended, as far as the engine cares.
struct Failure {
  enum class Kind {
    kExit,           // the process ended; see report
    kLost,           // its agent restarted and no longer runs it
    kHung,           // no progress for hangTimeout; the scheduler stopped it
    kLaunchTimeout,  // the launch was not confirmed within launchTimeout
  };
  Kind kind = Kind::kExit;
  // For kExit: the agent's report.
  v1::ReplicaExited report;
};

// What a class calls for, before budgets.
enum class Remedy {
  kSucceed,           // the replica did its job (exit 0)
  kRestart,           // restart in place, charged to maxReplicaRestarts
  kRestartUncharged,  // restart in place, charging nothing (IGNORE rules)
  kRetryJob,          // a new attempt, charged to maxJobRetries
  kInternalRetry,     // a new attempt, charged to maxInternalRetries
  kCapacityRetry,     // a new attempt, charged to maxCapacityRetries (an unreachable registry)
  kRedispatch,        // isolate the host, a new attempt elsewhere (faultTolerance.jobRetryNum)
  kMove,              // to another node, not charged (its agent shut down, or fenced it)
  kFail,
};

struct Classification {
  FailureClass failure_class = FailureClass::kNone;
  // What classed it: "default: transient exit code 134", "exitCodeRules[1]", ...
  std::string rule;
  Remedy remedy = Remedy::kFail;
  // For kRetryJob, kInternalRetry and kCapacityRetry: why a new attempt, in words.
  std::string retry_why;
  // The error the job ends with if this failure ends it (code, message, replica, node, tail).
  JobError error;
  // "exited with status 134", "was killed by SIGSEGV", ...
  std::string summary;
  // The event type of the replica's end: ReplicaExited, ReplicaHung, ReplicaLost,
  // LaunchTimedOut.
  std::string event_type;
  // What happened and how it was classed, in words; the retry engine appends its decision.
  std::string explanation;
  // For kFail: what the user can do, appended to the explanation.
  std::string fail_hint;
  // The replica's note after a host fault or a move; empty: the engine's default.
  std::string replica_message;
  // For kMove: why it moves.
  MoveCause move_cause = MoveCause::kNone;
  std::string move_reason;
};

Classification Classify(const RetryPolicy& policy, const Replica& replica, const Failure& failure);

// Exit status 0, no signal, no launch failure: the run did what it should.
bool IsCleanExit(const v1::ReplicaExited& exited);

// True when the report is a host fault (R16 scenarios 1-3): the preflight failed, or the
// replica exited abnormally and the check run after the crash failed.
bool IsHostFault(const v1::ReplicaExited& exited);

// How a run ended, in words: "exited with status 3", "was killed by SIGSEGV", ...
std::string DescribeExit(const v1::ReplicaExited& exited);

}  // namespace trainctl::sched
