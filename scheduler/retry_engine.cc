#include "scheduler/retry_engine.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/time_util.h"

namespace trainctl::sched {
namespace {

// Canonical codes (google.rpc.Code) of JobError.code.
constexpr int kCodeInvalidArgument = 3;
constexpr int kCodeResourceExhausted = 8;
constexpr int kCodeInternal = 13;

constexpr char kInternalMessage[] = "Internal error occurred for the current attempt.";

BackoffPolicy FromProto(const v1::Backoff& b) {
  return {DurationToMs(b.initial()), DurationToMs(b.max()), b.multiplier()};
}

v1::JobError MakeError(int code, const std::string& reason, std::string message,
                       const v1::Replica& r, const v1::ReplicaExited& report) {
  v1::JobError e;
  e.set_code(code);
  e.set_reason(reason);
  e.set_message(std::move(message));
  e.set_replica(r.name());
  e.set_node(r.node());
  e.set_output_tail(report.output_tail());
  return e;
}

// "exited with status 3" / "was killed by SIGSEGV" / ...
std::string Describe(const Failure& f) {
  const v1::ReplicaExited& x = f.report;
  switch (f.kind) {
    case Failure::Kind::kLost:
      return "was lost: its agent restarted and no longer runs it";
    case Failure::Kind::kHung:
      return "hung: it showed no progress for its hangTimeout";
    case Failure::Kind::kLaunchTimeout:
      return "did not start: the launch was not confirmed within launchTimeout";
    case Failure::Kind::kExit:
      break;
  }
  if (x.node_shutdown()) return "was stopped because its node's agent shut down";
  if (x.launch_failed()) return absl::StrCat("could not start: ", x.launch_error());
  if (x.oom_killed()) return "ran out of memory";
  if (x.has_signal()) return absl::StrCat("was killed by ", SignalName(x.signal()));
  if (!x.has_exit_code()) {
    return "ended with an unknown status (its agent restarted and adopted it, so it could not "
           "reap it)";
  }
  return absl::StrCat("exited with status ", x.exit_code());
}

// The R8 message of a failure that ends the job.
std::string R8Message(const v1::Replica& r, const v1::ReplicaExited& x) {
  const int code = x.has_exit_code() ? x.exit_code() : 128 + x.signal();
  if (x.oom_killed()) {
    return absl::StrCat("Replica ", r.name(),
                        " ran out of memory and exited with a non-zero status of ", code, ".");
  }
  if (x.has_signal()) {
    return absl::StrCat("Replica ", r.name(), " was killed by signal ", x.signal(), " (",
                        SignalName(x.signal()), "). Termination reason: Error.");
  }
  return absl::StrCat("Replica ", r.name(), " exited with a non-zero status of ", x.exit_code(),
                      ". Termination reason: Error.");
}

// The first rule matching the failure, and its index; -1 when none.
int MatchRule(const RetryPolicy& p, const v1::Replica& r, const v1::ReplicaExited& x) {
  for (size_t i = 0; i < p.rules.size(); ++i) {
    const RetryPolicy::Rule& rule = p.rules[i];
    if (!rule.pools.empty() && rule.pools.count(r.pool()) == 0) continue;
    if (x.has_exit_code() && rule.exit_codes.count(x.exit_code()) > 0) return static_cast<int>(i);
    if (x.has_signal() && rule.signals.count(x.signal()) > 0) return static_cast<int>(i);
  }
  return -1;
}

// Charges a job retry (or an internal retry) and decides RETRY_JOB, or FAIL_JOB when that
// budget is used up.
RetryDecision RetryOrFail(const RetryPolicy& p, const v1::Job& job, RetryDecision d, bool internal,
                          const std::string& why) {
  const int used =
      internal ? job.budgets_used().internal_retries() : job.budgets_used().job_retries();
  const int max = internal ? p.max_internal_retries : p.max_job_retries;
  const char* budget = internal ? "maxInternalRetries" : "maxJobRetries";
  if (used < max) {
    d.action = RetryAction::kRetryJob;
    d.budgets_used = job.budgets_used();
    if (internal) {
      d.budgets_used.set_internal_retries(used + 1);
    } else {
      d.budgets_used.set_job_retries(used + 1);
    }
    d.delay_ms = BackoffDelayMs(p.retry_backoff, used + 1);
    absl::StrAppend(&d.explanation, "; ", why, ": retrying the job as attempt ",
                    job.attempts_size() + 1, " (", budget, " ", used + 1, " of ", max, " used) in ",
                    d.delay_ms / 1000.0, "s");
  } else {
    d.action = RetryAction::kFailJob;
    d.budgets_used = job.budgets_used();
    absl::StrAppend(&d.explanation, "; ", why, ", and ", budget, " (", max,
                    ") is used up: failing the job");
  }
  return d;
}

// Restarts in place if the replica's budget allows (charged or not), else retries the job.
RetryDecision RestartOrRetry(const RetryPolicy& p, const v1::Job& job, const v1::Replica& r,
                             RetryDecision d, bool charge, int64_t now) {
  int32_t charged = r.charged_restarts();
  const int64_t run_start = TimestampToMs(r.start_time());
  const int64_t progress = TimestampToMs(r.last_progress_time());
  if (charge && charged > 0 && p.progress_reset_ms > 0 && run_start > 0 && progress > run_start &&
      now - run_start >= p.progress_reset_ms) {
    charged = 0;
    d.progress_reset = true;
    absl::StrAppend(&d.explanation,
                    "; it had shown progress and run stably for progressResetPeriod, so its "
                    "restart count was reset");
  }
  if (!charge || charged < p.max_replica_restarts) {
    d.action = RetryAction::kRestartReplica;
    d.charged_restarts = charge ? charged + 1 : charged;
    const int nth = r.restart_count() + 1;  // restarts in this attempt, this one included
    d.delay_ms = nth <= 1 ? 0 : BackoffDelayMs(p.restart_backoff, nth - 1);
    absl::StrAppend(
        &d.explanation, "; restarting it in place on ", r.node(), " (",
        charge ? absl::StrCat("restart ", d.charged_restarts, " of ", p.max_replica_restarts)
               : std::string("not charged"),
        ") in ", d.delay_ms / 1000.0, "s");
    return d;
  }
  return RetryOrFail(p, job, d, /*internal=*/false,
                     absl::StrCat("it failed again after its ", p.max_replica_restarts,
                                  " restarts (maxReplicaRestarts)"));
}

}  // namespace

std::string DescribeExit(const v1::ReplicaExited& exited) {
  Failure f;
  f.report = exited;
  return Describe(f);
}

int64_t BackoffDelayMs(const BackoffPolicy& b, int n) {
  if (n < 1 || b.initial_ms <= 0) return 0;
  double d = static_cast<double>(b.initial_ms) * std::pow(std::max(1.0, b.multiplier), n - 1);
  if (b.max_ms > 0) d = std::min(d, static_cast<double>(b.max_ms));
  return static_cast<int64_t>(d);
}

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return absl::StrCat("signal ", signal);
  return absl::StrCat("SIG", abbrev);
}

std::optional<int> ParseSignal(const std::string& text) {
  int n = 0;
  if (absl::SimpleAtoi(text, &n)) {
    if (n >= 1 && n < NSIG) return n;
    return std::nullopt;
  }
  std::string name = absl::AsciiStrToUpper(text);
  absl::string_view bare = absl::StripPrefix(name, "SIG");
  for (int s = 1; s < NSIG; ++s) {
    const char* abbrev = sigabbrev_np(s);
    if (abbrev != nullptr && bare == abbrev) return s;
  }
  return std::nullopt;
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
  return p;
}

RetryDecision DecideOnFailure(const RetryPolicy& p, const v1::Job& job, const v1::Replica& r,
                              const Failure& f, int64_t now) {
  const v1::ReplicaExited& x = f.report;
  RetryDecision d;
  d.summary = Describe(f);
  d.explanation = absl::StrCat("Replica ", r.name(), " on ", r.node(), " ", d.summary);

  if (f.kind == Failure::Kind::kExit && !x.launch_failed() && !x.node_shutdown() &&
      x.has_exit_code() && x.exit_code() == 0) {
    d.action = r.rank() == 0 ? RetryAction::kSucceedJob : RetryAction::kNothing;
    absl::StrAppend(&d.explanation,
                    r.rank() == 0 ? "; it is the primary: the job succeeded" : "; the job goes on");
    return d;
  }

  // Failures of the system, not of the user's code: internal errors (R9).
  // A run that ended with no status at all was adopted from an earlier agent process: it is not
  // that agent's child, so how it ended cannot be known. That is not the user's fault either.
  const bool unknown_status = f.kind == Failure::Kind::kExit && !x.launch_failed() &&
                              !x.has_exit_code() && !x.has_signal() && !x.oom_killed();
  const bool internal = f.kind == Failure::Kind::kLost || f.kind == Failure::Kind::kLaunchTimeout ||
                        x.node_shutdown() || (x.launch_failed() && !x.launch_error_is_user()) ||
                        unknown_status;
  if (internal) {
    d.failure_class = "INTERNAL";
    d.rule = "default: internal error";
    d.error = MakeError(kCodeInternal, "INTERNAL",
                        absl::StrCat(kInternalMessage, " Replica ", r.name(), " on node ", r.node(),
                                     " ", d.summary, "."),
                        r, x);
    absl::StrAppend(&d.explanation, " (class INTERNAL)");
    return RetryOrFail(p, job, d, /*internal=*/true, "an internal error is not the user's");
  }
  if (x.launch_failed()) {
    d.failure_class = "USER_ERROR";
    d.rule = "default: the command cannot start";
    d.action = RetryAction::kFailJob;
    d.error = MakeError(
        kCodeInvalidArgument, "USER_ERROR",
        absl::StrCat("Replica ", r.name(), " could not start: ", x.launch_error(), "."), r, x);
    absl::StrAppend(&d.explanation, " (class USER_ERROR): failing the job");
    return d;
  }
  if (f.kind == Failure::Kind::kHung) {
    d.failure_class = "HUNG";
    d.rule = "hangTimeout";
    d.error = MakeError(
        kCodeInvalidArgument, "TRANSIENT",
        absl::StrCat("Replica ", r.name(), " hung: it showed no progress for its hangTimeout."), r,
        x);
    absl::StrAppend(&d.explanation, " (class HUNG, treated as transient)");
    return RestartOrRetry(p, job, r, d, /*charge=*/true, now);
  }

  // Exit-code rules override every default below.
  const int rule = MatchRule(p, r, x);
  const bool transient = (x.has_exit_code() && p.transient_exit_codes.count(x.exit_code())) ||
                         (x.has_signal() && p.transient_signals.count(x.signal()));
  d.failure_class = x.oom_killed() ? "OUT_OF_MEMORY" : transient ? "TRANSIENT" : "USER_ERROR";
  d.error = MakeError(x.oom_killed() ? kCodeResourceExhausted : kCodeInvalidArgument,
                      d.failure_class, R8Message(r, x), r, x);
  if (rule >= 0) {
    d.rule = absl::StrCat("exitCodeRules[", rule, "]");
    const v1::FailureAction action = p.rules[rule].action;
    absl::StrAppend(&d.explanation, " (", d.rule, ": ",
                    absl::StripPrefix(v1::FailureAction_Name(action), "FAILURE_ACTION_"), ")");
    switch (action) {
      case v1::FAILURE_ACTION_RESTART:
        return RestartOrRetry(p, job, r, d, /*charge=*/true, now);
      case v1::FAILURE_ACTION_IGNORE:
        return RestartOrRetry(p, job, r, d, /*charge=*/false, now);
      case v1::FAILURE_ACTION_RETRY_JOB:
        return RetryOrFail(p, job, d, /*internal=*/false, "the rule asks for a new attempt");
      default:
        d.action = RetryAction::kFailJob;
        absl::StrAppend(&d.explanation, ": failing the job");
        return d;
    }
  }
  if (x.oom_killed()) {
    d.rule = "default: out of memory";
    d.action = RetryAction::kFailJob;
    absl::StrAppend(&d.explanation,
                    " (class OUT_OF_MEMORY): failing the job; raise its "
                    "resources.memoryMb");
    return d;
  }
  if (transient) {
    d.rule = x.has_exit_code() ? absl::StrCat("default: transient exit code ", x.exit_code())
                               : absl::StrCat("default: transient signal ", SignalName(x.signal()));
    absl::StrAppend(&d.explanation, " (class TRANSIENT, ", d.rule, ")");
    if (p.restart_policy == v1::RESTART_POLICY_NEVER) {
      return RetryOrFail(p, job, d, /*internal=*/false, "restartPolicy NEVER restarts nothing");
    }
    return RestartOrRetry(p, job, r, d, /*charge=*/true, now);
  }
  if (p.restart_policy == v1::RESTART_POLICY_ON_FAILURE) {
    d.rule = "restartPolicy ON_FAILURE";
    absl::StrAppend(&d.explanation, " (class USER_ERROR, restarted by ", d.rule, ")");
    return RestartOrRetry(p, job, r, d, /*charge=*/true, now);
  }
  d.rule = "default: non-zero exit is a user error";
  d.action = RetryAction::kFailJob;
  absl::StrAppend(&d.explanation, " (class USER_ERROR): failing the job");
  return d;
}

v1::JobError CapacityError(const std::string& what) {
  v1::JobError e;
  e.set_code(kCodeResourceExhausted);
  e.set_reason("CAPACITY");
  e.set_message(absl::StrCat("Resources are insufficient in cluster: ", what, "."));
  return e;
}

}  // namespace trainctl::sched
