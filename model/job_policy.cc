#include "model/job_policy.h"

#include <algorithm>
#include <cmath>

#include "common/signals.h"
#include "common/time_util.h"

namespace trainctl::sched {
namespace {

BackoffPolicy FromProto(const v1::Backoff& b) {
  return {DurationToMs(b.initial()), DurationToMs(b.max()), b.multiplier()};
}

}  // namespace

int64_t BackoffDelayMs(const BackoffPolicy& b, int n) {
  if (n < 1 || b.initial_ms <= 0) return 0;
  double d = static_cast<double>(b.initial_ms) * std::pow(std::max(1.0, b.multiplier), n - 1);
  if (b.max_ms > 0) d = std::min(d, static_cast<double>(b.max_ms));
  return static_cast<int64_t>(d);
}

RetryPolicy RetryPolicy::FromSpec(const v1::Scheduling& s) {
  RetryPolicy p;
  p.restart_policy = s.restart_policy() == v1::RESTART_POLICY_UNSPECIFIED
                         ? v1::RESTART_POLICY_ON_TRANSIENT_FAILURE
                         : s.restart_policy();
  p.max_replica_restarts = s.max_replica_restarts();
  p.max_job_retries = s.max_job_retries();
  p.max_internal_retries = s.max_internal_retries();
  p.max_capacity_retries = s.max_capacity_retries();
  p.transient_exit_codes = {s.transient_exit_codes().begin(), s.transient_exit_codes().end()};
  for (const std::string& sig : s.transient_signals()) {
    if (auto n = ParseSignal(sig)) p.transient_signals.insert(*n);
  }
  for (const v1::ExitCodeRule& r : s.exit_code_rules()) {
    Rule rule;
    rule.exit_codes = {r.exit_codes().begin(), r.exit_codes().end()};
    for (const std::string& sig : r.signals()) {
      if (auto n = ParseSignal(sig)) rule.signals.insert(*n);
    }
    rule.pools = {r.pools().begin(), r.pools().end()};
    rule.action = r.action();
    p.rules.push_back(std::move(rule));
  }
  p.restart_backoff = FromProto(s.restart_backoff());
  p.retry_backoff = FromProto(s.retry_backoff());
  p.placement_timeout_ms = DurationToMs(s.placement_timeout());
  p.progress_reset_ms = DurationToMs(s.progress_reset_period());
  p.hang_timeout_ms = DurationToMs(s.hang_timeout());
  p.launch_timeout_ms = DurationToMs(s.launch_timeout());
  p.stop_grace_ms = DurationToMs(s.stop_grace_period());
  p.timeout_ms = DurationToMs(s.timeout());
  p.queue_timeout_ms = DurationToMs(s.queue_timeout());
  p.gang = s.restart_scope() == v1::RESTART_SCOPE_GANG;
  p.settle_window_ms = DurationToMs(s.settle_window());
  p.elastic_wait_ms = DurationToMs(s.elastic_wait());
  p.preemptible = !s.has_preemptible() || s.preemptible();
  p.min_runtime_ms = DurationToMs(s.min_runtime());
  if (auto n = ParseSignal(s.preemption_signal())) p.preemption_signal = *n;
  if (s.has_preemption_grace_period()) {
    p.preemption_grace_ms = DurationToMs(s.preemption_grace_period());
  }
  if (s.capture_stacks() != v1::CAPTURE_STACKS_UNSPECIFIED) p.capture_stacks = s.capture_stacks();
  return p;
}

std::string RetryPolicy::StacksBefore(const std::string& why, bool gang_restart) const {
  if (capture_stacks == v1::CAPTURE_STACKS_NEVER) return "";
  if (gang_restart && capture_stacks != v1::CAPTURE_STACKS_ALWAYS) return "";
  return why;
}

RetryPolicy RetryPolicy::ForJob(const v1::JobSpec& spec) {
  RetryPolicy p = FromSpec(spec.scheduling());
  p.max_redispatches = spec.fault_tolerance().job_retry_num();
  return p;
}

}  // namespace trainctl::sched
