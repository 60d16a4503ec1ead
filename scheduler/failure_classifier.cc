#include "scheduler/failure_classifier.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/enum_names.h"
#include "common/signals.h"
#include "model/model_proto.h"
#include "scheduler/node_health.h"

namespace trainctl::sched {
namespace {

constexpr char kInternalMessage[] = "Internal error occurred for the current attempt.";

JobError MakeError(absl::StatusCode code, FailureClass reason, std::string message,
                   const Replica& r, const v1::ReplicaExited& report) {
  JobError e;
  e.code = code;
  e.reason = reason;
  e.message = std::move(message);
  e.replica = r.name;
  e.node = r.node;
  e.output_tail = report.output_tail();
  return e;
}

// "exited with status 3" / "was killed by SIGSEGV" / ...
std::string Describe(const Failure& f) {
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
  return DescribeExit(f.report);
}

// The R8 message of a failure that ends the job.
std::string R8Message(const Replica& r, const v1::ReplicaExited& x) {
  const int code = x.has_exit_code() ? x.exit_code() : 128 + x.signal();
  if (x.oom_killed()) {
    return absl::StrCat("Replica ", r.name,
                        " ran out of memory and exited with a non-zero status of ", code, ".");
  }
  if (x.has_signal()) {
    return absl::StrCat("Replica ", r.name, " was killed by signal ", x.signal(), " (",
                        SignalName(x.signal()), "). Termination reason: Error.");
  }
  return absl::StrCat("Replica ", r.name, " exited with a non-zero status of ", x.exit_code(),
                      ". Termination reason: Error.");
}

// The first rule matching the failure, and its index; -1 when none.
int MatchRule(const RetryPolicy& p, const Replica& r, const v1::ReplicaExited& x) {
  for (size_t i = 0; i < p.rules.size(); ++i) {
    const RetryPolicy::Rule& rule = p.rules[i];
    if (!rule.pools.empty() && rule.pools.count(r.pool) == 0) continue;
    if (x.has_exit_code() && rule.exit_codes.count(x.exit_code()) > 0) return static_cast<int>(i);
    if (x.has_signal() && rule.signals.count(x.signal()) > 0) return static_cast<int>(i);
  }
  return -1;
}

// " (class TRANSIENT" and what follows it, up to the closing parenthesis.
std::string ClassTag(FailureClass c, const std::string& more = "") {
  return absl::StrCat(" (class ", FailureClassName(c), more, ")");
}

// The node's agent shut down under the replica: it moves, charging nothing.
Classification Shutdown(const Replica& r, Classification c) {
  c.remedy = Remedy::kMove;
  c.move_cause = MoveCause::kShutdown;
  c.move_reason = absl::StrCat("node ", r.node, "'s agent shut down");
  c.replica_message = "stopped by its node's shutdown; moving";
  c.explanation = absl::StrCat(c.summary, " because node ", r.node,
                               "'s agent shut down: moving it (not charged)");
  return c;
}

// Its agent had no word from the scheduler for its fence time and stopped it (node_health.h,
// "Fencing"): a partition, not the replica's doing. It moves, charging nothing.
Classification Fenced(const Replica& r, Classification c) {
  c.remedy = Remedy::kMove;
  c.move_cause = MoveCause::kLost;
  c.move_reason =
      absl::StrCat("node ", r.node, "'s agent lost touch with the scheduler and fenced it");
  c.replica_message = "stopped by its agent's fence; moving";
  c.explanation = absl::StrCat(c.summary, ": node ", r.node,
                               "'s agent had no word from the scheduler for its fence time: "
                               "moving it (not charged)");
  return c;
}

// R16 scenarios 1-3: the host failed its checks; the user's code is not to blame.
Classification HostFault(const Replica& r, const v1::ReplicaExited& x, Classification c) {
  c.failure_class = FailureClass::kHostFault;
  c.rule = "faultTolerance.jobRetryNum";
  c.remedy = Remedy::kRedispatch;
  std::string message;
  if (x.preflight_failed()) {
    c.replica_message = absl::StrCat("node ", r.node, " failed its preflight check (",
                                     FailureClassName(FailureClass::kHostFault), ")");
    message = absl::StrCat("Replica ", r.name, " could not start: node ", r.node,
                           " failed its preflight check: ", FailedItems(x.checks()), ".");
  } else {
    c.replica_message = absl::StrCat(c.summary, " on a failing host (",
                                     FailureClassName(FailureClass::kHostFault), ")");
    message = absl::StrCat("Replica ", r.name, " ", c.summary, " while node ", r.node,
                           " failed its health check: ", FailedItems(x.checks()), ".");
  }
  c.error = MakeError(absl::StatusCode::kUnavailable, FailureClass::kHostFault, message, r, x);
  c.explanation = absl::StrCat(message, " Classed as a host fault: isolating the node");
  return c;
}

// The launch's image could not be pulled because its registry could not be reached, or the pull
// timed out (ReplicaExited.registry_unavailable): not the user's fault, not the host's. A new
// attempt after a backoff, charged to maxCapacityRetries like a stockout. The agent's launch
// error names the image and the registry.
Classification RegistryUnavailable(const Replica& r, const v1::ReplicaExited& x, Classification c) {
  c.failure_class = FailureClass::kCapacity;
  c.rule = "default: image registry unavailable";
  c.remedy = Remedy::kCapacityRetry;
  c.retry_why = "its image registry could not be reached";
  c.replica_message = absl::StrCat(c.summary, " (registry unavailable)");
  c.error = MakeError(absl::StatusCode::kUnavailable, FailureClass::kCapacity,
                      absl::StrCat("Replica ", r.name,
                                   " could not start: its image registry could not be reached (",
                                   x.launch_error(), ")."),
                      r, x);
  absl::StrAppend(&c.explanation, ClassTag(c.failure_class, ", image registry unavailable"));
  return c;
}

}  // namespace

bool IsCleanExit(const v1::ReplicaExited& x) {
  return x.has_exit_code() && x.exit_code() == 0 && !x.has_signal() && !x.launch_failed() &&
         !x.registry_unavailable();
}

bool IsHostFault(const v1::ReplicaExited& x) {
  return x.preflight_failed() || (x.has_checks() && !x.checks().passed() &&
                                  !x.stopped_by_request() && !x.fenced() && !IsCleanExit(x));
}

std::string DescribeExit(const v1::ReplicaExited& x) {
  if (x.node_shutdown()) return "was stopped because its node's agent shut down";
  if (x.fenced()) {
    return "was stopped by its agent's fence (no word from the scheduler for its fence time)";
  }
  if (x.launch_failed() || x.registry_unavailable()) {
    return absl::StrCat("could not start: ", x.launch_error());
  }
  if (x.oom_killed()) return "ran out of memory";
  if (x.has_signal()) return absl::StrCat("was killed by ", SignalName(x.signal()));
  if (!x.has_exit_code()) {
    return "ended with an unknown status (its agent restarted and adopted it, so it could not "
           "reap it)";
  }
  return absl::StrCat("exited with status ", x.exit_code());
}

Classification Classify(const RetryPolicy& p, const Replica& r, const Failure& f) {
  const v1::ReplicaExited& x = f.report;
  Classification c;
  c.summary = Describe(f);
  c.event_type = f.kind == Failure::Kind::kExit   ? "ReplicaExited"
                 : f.kind == Failure::Kind::kHung ? "ReplicaHung"
                 : f.kind == Failure::Kind::kLost ? "ReplicaLost"
                                                  : "LaunchTimedOut";
  c.explanation = absl::StrCat("Replica ", r.name, " on ", r.node, " ", c.summary);
  const bool exit = f.kind == Failure::Kind::kExit;
  if (exit && x.node_shutdown()) return Shutdown(r, c);
  if (exit && x.fenced()) return Fenced(r, c);
  if (exit && IsHostFault(x)) return HostFault(r, x, c);
  // Implies launch_failed; taken alone too, so that a report without it is not a success.
  if (exit && x.registry_unavailable()) return RegistryUnavailable(r, x, c);

  if (exit && !x.launch_failed() && x.has_exit_code() && x.exit_code() == 0) {
    c.remedy = Remedy::kSucceed;
    return c;
  }

  // Failures of the system, not of the user's code: internal errors (R9).
  // A run that ended with no status at all was adopted from an earlier agent process: it is not
  // that agent's child, so how it ended cannot be known. That is not the user's fault either.
  const bool unknown_status =
      exit && !x.launch_failed() && !x.has_exit_code() && !x.has_signal() && !x.oom_killed();
  const bool internal = f.kind == Failure::Kind::kLost || f.kind == Failure::Kind::kLaunchTimeout ||
                        (x.launch_failed() && !x.launch_error_is_user()) || unknown_status;
  if (internal) {
    c.failure_class = FailureClass::kInternal;
    c.rule = "default: internal error";
    c.error = MakeError(absl::StatusCode::kInternal, FailureClass::kInternal,
                        absl::StrCat(kInternalMessage, " Replica ", r.name, " on node ", r.node,
                                     " ", c.summary, "."),
                        r, x);
    absl::StrAppend(&c.explanation, ClassTag(c.failure_class));
    c.remedy = Remedy::kInternalRetry;
    c.retry_why = "an internal error is not the user's";
    return c;
  }
  if (x.launch_failed()) {
    c.failure_class = FailureClass::kUserError;
    c.rule = "default: the command cannot start";
    c.error = MakeError(
        absl::StatusCode::kInvalidArgument, FailureClass::kUserError,
        absl::StrCat("Replica ", r.name, " could not start: ", x.launch_error(), "."), r, x);
    absl::StrAppend(&c.explanation, ClassTag(c.failure_class));
    c.remedy = Remedy::kFail;
    return c;
  }
  if (f.kind == Failure::Kind::kHung) {
    c.failure_class = FailureClass::kHung;
    c.rule = "hangTimeout";
    c.error = MakeError(
        absl::StatusCode::kInvalidArgument, FailureClass::kTransient,
        absl::StrCat("Replica ", r.name, " hung: it showed no progress for its hangTimeout."), r,
        x);
    absl::StrAppend(&c.explanation, ClassTag(c.failure_class, ", treated as transient"));
    c.remedy = Remedy::kRestart;
    return c;
  }

  // Exit-code rules override every default below.
  const int rule = MatchRule(p, r, x);
  const bool transient = (x.has_exit_code() && p.transient_exit_codes.count(x.exit_code())) ||
                         (x.has_signal() && p.transient_signals.count(x.signal()));
  c.failure_class = x.oom_killed() ? FailureClass::kOutOfMemory
                    : transient    ? FailureClass::kTransient
                                   : FailureClass::kUserError;
  c.error = MakeError(
      x.oom_killed() ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInvalidArgument,
      c.failure_class, R8Message(r, x), r, x);
  if (rule >= 0) {
    c.rule = absl::StrCat("exitCodeRules[", rule, "]");
    const v1::FailureAction action = p.rules[rule].action;
    absl::StrAppend(&c.explanation, " (", c.rule, ": ", EnumShortName(action), ")");
    switch (action) {
      case v1::FAILURE_ACTION_RESTART:
        c.remedy = Remedy::kRestart;
        break;
      case v1::FAILURE_ACTION_IGNORE:
        c.remedy = Remedy::kRestartUncharged;
        break;
      case v1::FAILURE_ACTION_RETRY_JOB:
        c.remedy = Remedy::kRetryJob;
        c.retry_why = "the rule asks for a new attempt";
        break;
      default:
        c.remedy = Remedy::kFail;
        break;
    }
    return c;
  }
  if (x.oom_killed()) {
    c.rule = "default: out of memory";
    c.remedy = Remedy::kFail;
    absl::StrAppend(&c.explanation, ClassTag(c.failure_class));
    c.fail_hint = "; raise its resources.memoryMb";
    return c;
  }
  if (transient) {
    c.rule = x.has_exit_code() ? absl::StrCat("default: transient exit code ", x.exit_code())
                               : absl::StrCat("default: transient signal ", SignalName(x.signal()));
    absl::StrAppend(&c.explanation, ClassTag(c.failure_class, absl::StrCat(", ", c.rule)));
    if (p.restart_policy == v1::RESTART_POLICY_NEVER) {
      c.remedy = Remedy::kRetryJob;
      c.retry_why = "restartPolicy NEVER restarts nothing";
    } else {
      c.remedy = Remedy::kRestart;
    }
    return c;
  }
  if (p.restart_policy == v1::RESTART_POLICY_ON_FAILURE) {
    c.rule = "restartPolicy ON_FAILURE";
    absl::StrAppend(&c.explanation,
                    ClassTag(c.failure_class, absl::StrCat(", restarted by ", c.rule)));
    c.remedy = Remedy::kRestart;
    return c;
  }
  c.rule = "default: non-zero exit is a user error";
  absl::StrAppend(&c.explanation, ClassTag(c.failure_class));
  c.remedy = Remedy::kFail;
  return c;
}

}  // namespace trainctl::sched
