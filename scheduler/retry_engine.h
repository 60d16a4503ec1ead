// The retry engine: what to do when a replica fails (DESIGN.md's decision table, R4-R10).
//
// A pure function of the job's policy, the failing replica, the job's budgets, the classified
// failure and the time. It classifies the failure (exit code, signal, OOM flag, phase), applies
// exit-code rules and the restart policy, charges the budget of that failure kind, and returns one
// decision with its reasons. The core applies the decision; nothing here changes state.
//
// Budgets are kept apart per failure kind (the thing no peer does): in-place restarts per replica
// (maxReplicaRestarts), job retries (maxJobRetries), internal-error retries
// (maxInternalRetries) and capacity retries (maxCapacityRetries). Infrastructure faults and
// maintenance charge none of them.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainctl/v1/agent.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// Defaults of Scheduling (the seeds' numbers).
inline constexpr int kDefaultMaxReplicaRestarts = 5;
inline constexpr int kDefaultMaxJobRetries = 3;
inline constexpr int kDefaultMaxInternalRetries = 2;
inline constexpr int kDefaultMaxCapacityRetries = 3;

struct BackoffPolicy {
  int64_t initial_ms = 0;
  int64_t max_ms = 0;
  double multiplier = 2;
};

// The n-th delay (n >= 1): initial * multiplier^(n-1), at most max.
int64_t BackoffDelayMs(const BackoffPolicy& b, int n);

// A job's Scheduling with every default resolved and signal names parsed.
struct RetryPolicy {
  struct Rule {
    std::set<int> exit_codes;
    std::set<int> signals;
    std::set<std::string> pools;
    v1::FailureAction action = v1::FAILURE_ACTION_UNSPECIFIED;
  };
  v1::RestartPolicy restart_policy = v1::RESTART_POLICY_ON_TRANSIENT_FAILURE;
  int max_replica_restarts = kDefaultMaxReplicaRestarts;
  int max_job_retries = kDefaultMaxJobRetries;
  int max_internal_retries = kDefaultMaxInternalRetries;
  int max_capacity_retries = kDefaultMaxCapacityRetries;
  std::set<int> transient_exit_codes;
  std::set<int> transient_signals;
  std::vector<Rule> rules;
  BackoffPolicy restart_backoff;
  BackoffPolicy retry_backoff;
  int64_t placement_timeout_ms = 0;
  int64_t progress_reset_ms = 0;
  int64_t hang_timeout_ms = 0;  // 0: off
  int64_t launch_timeout_ms = 0;

  // REQUIRES: `s` passed ValidateJobSpec and ApplyDefaults.
  static RetryPolicy FromSpec(const v1::Scheduling& s);
};

// "SIGSEGV", "SEGV" or "11" -> 11; nullopt when unknown.
std::optional<int> ParseSignal(const std::string& text);

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

enum class RetryAction {
  kSucceedJob,      // the primary exited 0
  kNothing,         // a non-primary replica exited 0
  kRestartReplica,  // restart in place on the same node, same name and rank
  kRetryJob,        // stop every replica, start a new attempt
  kFailJob,
};

struct RetryDecision {
  RetryAction action = RetryAction::kNothing;
  // TRANSIENT, USER_ERROR, OUT_OF_MEMORY, INTERNAL, HUNG (empty for success).
  std::string failure_class;
  // What classified it: "default: transient exit code 134", "exitCodeRules[1]", ...
  std::string rule;
  // For kRestartReplica: the replica's charged_restarts after this decision, and whether the
  // charge was reset first by stable progress.
  int32_t charged_restarts = 0;
  bool progress_reset = false;
  // Delay before the restart or the new attempt.
  int64_t delay_ms = 0;
  // For kRetryJob: the budgets used after the charge (the core stores them on the job).
  v1::Budgets budgets_used;
  // For kFailJob, and the reason of a kRetryJob: canonical code, message, replica, node, tail.
  v1::JobError error;
  // One line for the replica: "exited with status 134 (transient)".
  std::string summary;
  // The event's reason: what happened, how it was classed, what was decided and why.
  std::string explanation;
};

// Decides what a failure of `replica` (a replica of `job`) means. `now` is used for the
// progress reset only.
RetryDecision DecideOnFailure(const RetryPolicy& policy, const v1::Job& job,
                              const v1::Replica& replica, const Failure& failure, int64_t now);

// The final error of a job that could not be placed within its capacity budget:
// "Resources are insufficient in cluster: <what>."
v1::JobError CapacityError(const std::string& what);

// How a run ended, in words: "exited with status 3", "was killed by SIGSEGV", ...
std::string DescribeExit(const v1::ReplicaExited& exited);

// "SIGSEGV" for 11; "signal 42" for numbers without a name.
std::string SignalName(int signal);

}  // namespace trainctl::sched
