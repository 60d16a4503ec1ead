// FailureClassifier on its own (R4-R10, R16): one row per way a run ends, with the class, the
// rule, the remedy and the event it gets before any budget is looked at.
#include "scheduler/failure_classifier.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <functional>
#include <string>

#include "model/model_proto.h"

namespace trainctl::sched {
namespace {

// The defaults ApplyDefaults writes into a spec: 6, 134, 11 and 139 and SIGABRT and SIGSEGV are
// transient; restart on transient failure.
RetryPolicy DefaultPolicy() {
  RetryPolicy p;
  p.transient_exit_codes = {6, 11, 134, 139};
  p.transient_signals = {SIGABRT, SIGSEGV};
  return p;
}

Replica Worker() {
  Replica r;
  r.name = "worker-1";
  r.pool = "worker";
  r.rank = 2;
  r.node = "node-a";
  return r;
}

Failure Code(int code) {
  Failure f;
  f.report.set_exit_code(code);
  f.report.set_output_tail("RuntimeError: boom\n");
  return f;
}
Failure Killed(int signal) {
  Failure f;
  f.report.set_signal(signal);
  return f;
}
Failure Oom() {
  Failure f = Killed(SIGKILL);
  f.report.set_oom_killed(true);
  return f;
}
Failure LaunchFailed(bool user) {
  Failure f;
  f.report.set_launch_failed(true);
  f.report.set_launch_error(user ? "command not found: trian.py" : "fork: out of pids");
  f.report.set_launch_error_is_user(user);
  return f;
}
Failure Of(Failure::Kind kind) {
  Failure f;
  f.kind = kind;
  return f;
}
// `f` with the host's check run after the exit attached.
Failure Checked(Failure f, bool passed, const std::string& phase = "exit") {
  v1::CheckRun* run = f.report.mutable_checks();
  run->set_phase(phase);
  run->set_passed(passed);
  v1::CheckResult* item = run->add_items();
  item->set_item("gpu-ecc");
  item->set_passed(passed);
  item->set_message("3 uncorrectable errors");
  return f;
}
Failure Preflight() {
  Failure f = Checked(Failure{}, false, "preflight");
  f.report.set_preflight_failed(true);
  return f;
}
Failure StoppedByRequest(Failure f) {
  f.report.set_stopped_by_request(true);
  return f;
}
Failure NodeShutdown(Failure f) {
  f.report.set_node_shutdown(true);
  return f;
}

RetryPolicy::Rule RuleOf(std::set<int> codes, v1::FailureAction action,
                         std::set<std::string> pools = {}, std::set<int> signals = {}) {
  RetryPolicy::Rule r;
  r.exit_codes = std::move(codes);
  r.signals = std::move(signals);
  r.pools = std::move(pools);
  r.action = action;
  return r;
}

TEST_CASE("Classify: one row per way a run ends") {
  auto defaults = [](RetryPolicy*) {};
  struct Row {
    const char* what;  // the situation and the requirement it proves
    std::function<void(RetryPolicy*)> policy;
    Failure failure;
    FailureClass failure_class;
    const char* rule;
    Remedy remedy;
    const char* event_type;
  };
  const Row rows[] = {
      {"R6: exit 0 succeeds", defaults, Code(0), FailureClass::kNone, "", Remedy::kSucceed,
       "ReplicaExited"},
      {"R4/R8: a transient exit code restarts in place", defaults, Code(134),
       FailureClass::kTransient, "default: transient exit code 134", Remedy::kRestart,
       "ReplicaExited"},
      {"R8: a transient signal restarts in place", defaults, Killed(SIGSEGV),
       FailureClass::kTransient, "default: transient signal SIGSEGV", Remedy::kRestart,
       "ReplicaExited"},
      {"R8: restartPolicy NEVER turns a transient failure into a job retry",
       [](RetryPolicy* p) { p->restart_policy = v1::RESTART_POLICY_NEVER; }, Code(134),
       FailureClass::kTransient, "default: transient exit code 134", Remedy::kRetryJob,
       "ReplicaExited"},
      {"R8: any other non-zero exit is the user's and fails the job", defaults, Code(1),
       FailureClass::kUserError, "default: non-zero exit is a user error", Remedy::kFail,
       "ReplicaExited"},
      {"restartPolicy ON_FAILURE restarts a user error",
       [](RetryPolicy* p) { p->restart_policy = v1::RESTART_POLICY_ON_FAILURE; }, Code(1),
       FailureClass::kUserError, "restartPolicy ON_FAILURE", Remedy::kRestart, "ReplicaExited"},
      {"R8: out of memory fails the job, even when killed by a signal", defaults, Oom(),
       FailureClass::kOutOfMemory, "default: out of memory", Remedy::kFail, "ReplicaExited"},
      {"a command that cannot start is the user's", defaults, LaunchFailed(true),
       FailureClass::kUserError, "default: the command cannot start", Remedy::kFail,
       "ReplicaExited"},
      {"R9: a launch the host failed is internal", defaults, LaunchFailed(false),
       FailureClass::kInternal, "default: internal error", Remedy::kInternalRetry, "ReplicaExited"},
      {"R9: an adopted run that ended with no status is internal", defaults, Failure{},
       FailureClass::kInternal, "default: internal error", Remedy::kInternalRetry, "ReplicaExited"},
      {"R9: a run its restarted agent lost is internal", defaults, Of(Failure::Kind::kLost),
       FailureClass::kInternal, "default: internal error", Remedy::kInternalRetry, "ReplicaLost"},
      {"R9: a launch never confirmed is internal", defaults, Of(Failure::Kind::kLaunchTimeout),
       FailureClass::kInternal, "default: internal error", Remedy::kInternalRetry,
       "LaunchTimedOut"},
      {"a hung replica restarts in place", defaults, Of(Failure::Kind::kHung), FailureClass::kHung,
       "hangTimeout", Remedy::kRestart, "ReplicaHung"},
      {"R18: its node's agent shut down: it moves, charging nothing", defaults,
       NodeShutdown(Code(143)), FailureClass::kNone, "", Remedy::kMove, "ReplicaExited"},
      {"R18: a shutdown wins over a failing check", defaults,
       NodeShutdown(Checked(Code(143), false)), FailureClass::kNone, "", Remedy::kMove,
       "ReplicaExited"},
      {"R16 s1: a failed preflight is a host fault", defaults, Preflight(),
       FailureClass::kHostFault, "faultTolerance.jobRetryNum", Remedy::kRedispatch,
       "ReplicaExited"},
      {"R16 s2: a crash with a failing exit check is a host fault", defaults,
       Checked(Code(1), false), FailureClass::kHostFault, "faultTolerance.jobRetryNum",
       Remedy::kRedispatch, "ReplicaExited"},
      {"R16 s3: a kill with a failing exit check is a host fault", defaults,
       Checked(Killed(SIGKILL), false), FailureClass::kHostFault, "faultTolerance.jobRetryNum",
       Remedy::kRedispatch, "ReplicaExited"},
      {"R16: a clean exit with failing checks is not a host fault", defaults,
       Checked(Code(0), false), FailureClass::kNone, "", Remedy::kSucceed, "ReplicaExited"},
      {"R16: a stop trainctl asked for is not a host fault", defaults,
       StoppedByRequest(Checked(Code(143), false)), FailureClass::kUserError,
       "default: non-zero exit is a user error", Remedy::kFail, "ReplicaExited"},
      {"a crash with passing checks is the user's", defaults, Checked(Code(1), true),
       FailureClass::kUserError, "default: non-zero exit is a user error", Remedy::kFail,
       "ReplicaExited"},
      {"R10: a RESTART rule restarts what would fail",
       [](RetryPolicy* p) { p->rules = {RuleOf({42}, v1::FAILURE_ACTION_RESTART)}; }, Code(42),
       FailureClass::kUserError, "exitCodeRules[0]", Remedy::kRestart, "ReplicaExited"},
      {"R10: an IGNORE rule restarts uncharged",
       [](RetryPolicy* p) { p->rules = {RuleOf({42}, v1::FAILURE_ACTION_IGNORE)}; }, Code(42),
       FailureClass::kUserError, "exitCodeRules[0]", Remedy::kRestartUncharged, "ReplicaExited"},
      {"R10: a RETRY_JOB rule asks for a new attempt",
       [](RetryPolicy* p) { p->rules = {RuleOf({42}, v1::FAILURE_ACTION_RETRY_JOB)}; }, Code(42),
       FailureClass::kUserError, "exitCodeRules[0]", Remedy::kRetryJob, "ReplicaExited"},
      {"R10: a FAIL_JOB rule overrides a transient default",
       [](RetryPolicy* p) { p->rules = {RuleOf({134}, v1::FAILURE_ACTION_FAIL_JOB)}; }, Code(134),
       FailureClass::kTransient, "exitCodeRules[0]", Remedy::kFail, "ReplicaExited"},
      {"R10: the first matching rule wins; a rule of another pool does not match",
       [](RetryPolicy* p) {
         p->rules = {RuleOf({42}, v1::FAILURE_ACTION_FAIL_JOB, {"chief"}),
                     RuleOf({7}, v1::FAILURE_ACTION_FAIL_JOB),
                     RuleOf({42}, v1::FAILURE_ACTION_IGNORE, {"worker"}),
                     RuleOf({42}, v1::FAILURE_ACTION_FAIL_JOB)};
       },
       Code(42), FailureClass::kUserError, "exitCodeRules[2]", Remedy::kRestartUncharged,
       "ReplicaExited"},
      {"R10: a rule matches a signal",
       [](RetryPolicy* p) { p->rules = {RuleOf({}, v1::FAILURE_ACTION_RETRY_JOB, {}, {SIGTERM})}; },
       Killed(SIGTERM), FailureClass::kUserError, "exitCodeRules[0]", Remedy::kRetryJob,
       "ReplicaExited"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    RetryPolicy policy = DefaultPolicy();
    row.policy(&policy);
    const Classification c = Classify(policy, Worker(), row.failure);
    CHECK(FailureClassName(c.failure_class) == FailureClassName(row.failure_class));
    CHECK(c.rule == row.rule);
    CHECK(static_cast<int>(c.remedy) == static_cast<int>(row.remedy));
    CHECK(c.event_type == row.event_type);
  }
}

TEST_CASE("Classify: the error a failure would end the job with") {
  const RetryPolicy p = DefaultPolicy();
  const Classification user = Classify(p, Worker(), Code(3));
  CHECK(user.error.code == absl::StatusCode::kInvalidArgument);
  CHECK(user.error.reason == FailureClass::kUserError);
  CHECK(user.error.message ==
        "Replica worker-1 exited with a non-zero status of 3. Termination reason: Error.");
  CHECK(user.error.replica == "worker-1");
  CHECK(user.error.node == "node-a");
  CHECK(user.error.output_tail == "RuntimeError: boom\n");
  CHECK(user.explanation == "Replica worker-1 on node-a exited with status 3 (class USER_ERROR)");

  const Classification oom = Classify(p, Worker(), Oom());
  CHECK(oom.error.code == absl::StatusCode::kResourceExhausted);
  CHECK(oom.error.message ==
        "Replica worker-1 ran out of memory and exited with a non-zero status of 137.");
  CHECK(oom.fail_hint == "; raise its resources.memoryMb");

  const Classification internal = Classify(p, Worker(), Of(Failure::Kind::kLost));
  CHECK(internal.error.code == absl::StatusCode::kInternal);
  CHECK(internal.error.message ==
        "Internal error occurred for the current attempt. Replica worker-1 on node node-a was "
        "lost: its agent restarted and no longer runs it.");

  const Classification preflight = Classify(p, Worker(), Preflight());
  CHECK(preflight.error.code == absl::StatusCode::kUnavailable);
  CHECK(preflight.error.reason == FailureClass::kHostFault);
  CHECK(preflight.error.message ==
        "Replica worker-1 could not start: node node-a failed its preflight check: item gpu-ecc "
        "failed: 3 uncorrectable errors.");
  CHECK(preflight.replica_message == "node node-a failed its preflight check (HOST_FAULT)");

  const Classification crash = Classify(p, Worker(), Checked(Killed(SIGKILL), false));
  CHECK(crash.error.message ==
        "Replica worker-1 was killed by SIGKILL while node node-a failed its health check: item "
        "gpu-ecc failed: 3 uncorrectable errors.");

  const Classification moved = Classify(p, Worker(), NodeShutdown(Code(143)));
  CHECK(moved.replica_message == "stopped by its node's shutdown; moving");
}

TEST_CASE("IsHostFault: a failed preflight, or an abnormal exit on a failing host") {
  CHECK(IsHostFault(Preflight().report));
  CHECK(IsHostFault(Checked(Code(1), false).report));
  CHECK(IsHostFault(Checked(Killed(SIGSEGV), false).report));
  CHECK(IsHostFault(Checked(LaunchFailed(false), false).report));
  CHECK_FALSE(IsHostFault(Checked(Code(0), false).report));  // a clean exit
  CHECK_FALSE(IsHostFault(StoppedByRequest(Checked(Code(143), false)).report));
  CHECK_FALSE(IsHostFault(Checked(Code(1), true).report));  // the host passed
  CHECK_FALSE(IsHostFault(Code(1).report));                 // no check ran
}

TEST_CASE("DescribeExit says how a run ended") {
  struct Row {
    Failure failure;
    const char* words;
  };
  const Row rows[] = {
      {Code(3), "exited with status 3"},
      {Code(0), "exited with status 0"},
      {Killed(SIGSEGV), "was killed by SIGSEGV"},
      {Killed(42), "was killed by signal 42"},
      {Oom(), "ran out of memory"},
      {LaunchFailed(true), "could not start: command not found: trian.py"},
      {NodeShutdown(Code(143)), "was stopped because its node's agent shut down"},
      {Failure{},
       "ended with an unknown status (its agent restarted and adopted it, so it could not reap "
       "it)"},
  };
  for (const Row& row : rows) CHECK(DescribeExit(row.failure.report) == row.words);
}

}  // namespace
}  // namespace trainctl::sched
