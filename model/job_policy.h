// A job's policy, resolved from its spec once: every default filled, durations in ms, signal names
// parsed. The retry engine, the admission queue and the timers read this, never the spec.
#pragma once

#include <csignal>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

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
  // faultTolerance.jobRetryNum: re-dispatches after host faults.
  int max_redispatches = 0;
  std::set<int> transient_exit_codes;
  std::set<int> transient_signals;
  std::vector<Rule> rules;
  BackoffPolicy restart_backoff;
  BackoffPolicy retry_backoff;
  int64_t placement_timeout_ms = 0;
  int64_t progress_reset_ms = 0;
  int64_t hang_timeout_ms = 0;  // 0: off
  int64_t launch_timeout_ms = 0;
  int64_t stop_grace_ms = 0;
  int64_t timeout_ms = 0;        // scheduling.timeout; 0: none
  int64_t queue_timeout_ms = 0;  // scheduling.queueTimeout; 0: none (30m for a retrying job)
  // restartScope GANG: a restartable failure restarts every replica together.
  bool gang = false;
  // GANG: how long a non-transient exit waits for an earlier failure of a peer.
  int64_t settle_window_ms = 0;
  // Elastic pools: how long a replica that had to leave its node waits for room before its pool
  // shrinks without it (scheduling.elasticWait).
  int64_t elastic_wait_ms = 0;
  // Preemption (scheduling.preemptible, minRuntime, preemptionSignal, preemptionGracePeriod):
  // whether the job may be a victim, how long its attempt must have run first, the signal number
  // its replicas get with a notice (NoticeReplica.signal) and how long they have to exit.
  bool preemptible = true;
  int64_t min_runtime_ms = 0;
  int preemption_signal = SIGTERM;
  int64_t preemption_grace_ms = 300'000;
  // scheduling.captureStacks: when the agents capture stacks before a stop (StopReplica).
  v1::CaptureStacks capture_stacks = v1::CAPTURE_STACKS_AUTO;

  // The StopReplica.capture_stacks of a stop for `why` ("hung", "attempt ended", "gang
  // restart"): `why`, or "" when captureStacks leaves this stop without a capture (NEVER; a gang
  // restart's stops unless ALWAYS, so that an in-place restart never waits for stacks).
  std::string StacksBefore(const std::string& why, bool gang_restart) const;

  // REQUIRES: `s` passed ValidateJobSpec and ApplyDefaults.
  static RetryPolicy FromSpec(const v1::Scheduling& s);
  // The same, with the job's faultTolerance.
  static RetryPolicy ForJob(const v1::JobSpec& spec);
};

}  // namespace trainctl::sched
