// The retry engine's decision table (docs/developers/architecture.md) and R4-R10, one row per
// situation.
#include "scheduler/retry_engine.h"

#include <catch2/catch.hpp>
#include <functional>

#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/job_validation.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

v1::ReplicaExited Code(int c) {
  v1::ReplicaExited e;
  e.set_exit_code(c);
  e.set_output_tail("Traceback...\nRuntimeError: boom\n");
  return e;
}
v1::ReplicaExited Sig(int s) {
  v1::ReplicaExited e;
  e.set_signal(s);
  return e;
}
v1::ReplicaExited Oom() {
  v1::ReplicaExited e;
  e.set_signal(9);
  e.set_oom_killed(true);
  return e;
}
v1::ReplicaExited LaunchFail(bool user) {
  v1::ReplicaExited e;
  e.set_launch_failed(true);
  e.set_launch_error(user ? "command not found: trian.py"
                          : "fork: Resource temporarily unavailable");
  e.set_launch_error_is_user(user);
  return e;
}
Failure Exit(v1::ReplicaExited r) {
  Failure f;
  f.report = std::move(r);
  return f;
}
Failure Kind(Failure::Kind k) {
  Failure f;
  f.kind = k;
  return f;
}

// A validated job with defaults, and its worker-1 (rank 2) on node-a.
struct Situation {
  v1::Job job;
  int replica = 2;

  explicit Situation(const std::function<void(v1::JobSpec*)>& edit = nullptr) {
    // REPLICA scope: the table is about one replica's restarts (GANG has rows of its own).
    v1::JobSpec spec = testing::ReplicaScope(testing::Spec(2));
    if (edit) edit(&spec);
    REQUIRE(ValidateJobSpec(spec).ok());
    ApplyDefaults(&spec);
    *job.mutable_spec() = spec;
    const char* names[] = {"chief-0", "worker-0", "worker-1"};
    for (int i = 0; i < 3; ++i) {
      v1::Replica* r = job.add_replicas();
      r->set_name(names[i]);
      r->set_pool(i == 0 ? "chief" : "worker");
      r->set_rank(i);
      r->set_node("node-a");
    }
    job.add_attempts()->set_number(1);
  }
  v1::Replica& r() { return *job.mutable_replicas(replica); }
  RetryDecision Decide(const Failure& f, int64_t now = 1'000'000) {
    const Job domain = *JobFromProto(job);
    return DecideOnFailure(RetryPolicy::FromSpec(job.spec().scheduling()), domain,
                           domain.replicas[replica], f, FromMs(now));
  }
};

struct Row {
  const char* what;  // the situation and the requirement it proves
  std::function<void(v1::JobSpec*)> spec;
  std::function<void(Situation*)> state;
  Failure failure;
  Decision action;
  const char* failure_class;
  int code;          // JobError.code when the job fails
  const char* rule;  // prefix of the matched rule
  int64_t delay_ms;
};

TEST_CASE("DecideOnFailure follows the design's decision table") {
  auto none = [](auto*) {};
  const Row rows[] = {
      {"R6: the primary exits 0 -> SUCCEED_JOB", none, [](Situation* s) { s->replica = 0; },
       Exit(Code(0)), Decision::kSucceedJob, "", 0, "", 0},
      {"another replica exits 0 -> the job goes on", none, none, Exit(Code(0)), Decision::kContinue,
       "", 0, "", 0},
      {"R4/R8: exit 134 is transient -> restart in place, immediately", none, none, Exit(Code(134)),
       Decision::kRestartReplica, "TRANSIENT", 0, "default: transient exit code 134", 0},
      {"R8: exit 6, 11, 139 are transient too", none, none, Exit(Code(139)),
       Decision::kRestartReplica, "TRANSIENT", 0, "default: transient exit code 139", 0},
      {"R8: killed by SIGSEGV is transient", none, none, Exit(Sig(11)), Decision::kRestartReplica,
       "TRANSIENT", 0, "default: transient signal SIGSEGV", 0},
      {"restart backoff: the 3rd restart waits initial*2", none,
       [](Situation* s) {
         s->r().set_restart_count(2);
         s->r().set_charged_restarts(2);
       },
       Exit(Code(6)), Decision::kRestartReplica, "TRANSIENT", 0, "default", 2000},
      {"R5: a 6th transient failure retries the job", none,
       [](Situation* s) {
         s->r().set_restart_count(5);
         s->r().set_charged_restarts(5);
       },
       Exit(Code(134)), Decision::kRetryJob, "TRANSIENT", 3, "default", 5000},
      {"R5: retry backoff doubles with each retry", none,
       [](Situation* s) {
         s->r().set_charged_restarts(5);
         s->job.mutable_budgets_used()->set_job_retries(2);
       },
       Exit(Code(134)), Decision::kRetryJob, "TRANSIENT", 3, "default", 20000},
      {"R5: after 3 retries the job fails", none,
       [](Situation* s) {
         s->r().set_charged_restarts(5);
         s->job.mutable_budgets_used()->set_job_retries(3);
       },
       Exit(Code(134)), Decision::kFailJob, "TRANSIENT", 3, "default", 0},
      {"R8: any other non-zero exit is a user error", none, none, Exit(Code(3)), Decision::kFailJob,
       "USER_ERROR", 3, "default: non-zero exit", 0},
      {"a signal that is not transient is a user error", none, none, Exit(Sig(9)),
       Decision::kFailJob, "USER_ERROR", 3, "default", 0},
      {"a run adopted from an earlier agent ends with no status: internal, a new attempt", none,
       none, Exit(v1::ReplicaExited()), Decision::kRetryJob, "INTERNAL", 13,
       "default: internal error", 5000},
      {"R8: out of memory fails the job", none, none, Exit(Oom()), Decision::kFailJob,
       "OUT_OF_MEMORY", 8, "default: out of memory", 0},
      {"a command that does not exist is the user's error", none, none, Exit(LaunchFail(true)),
       Decision::kFailJob, "USER_ERROR", 3, "default: the command", 0},
      {"R9: a launch failure of the host is internal -> retry", none, none, Exit(LaunchFail(false)),
       Decision::kRetryJob, "INTERNAL", 13, "default: internal", 5000},
      {"R9: a lost replica is internal", none, none, Kind(Failure::Kind::kLost),
       Decision::kRetryJob, "INTERNAL", 13, "default: internal", 5000},
      {"R9: an unconfirmed launch is internal", none, none, Kind(Failure::Kind::kLaunchTimeout),
       Decision::kRetryJob, "INTERNAL", 13, "default: internal", 5000},
      {"a replica stopped by its agent's shutdown moves, charging nothing, even with exit 0", none,
       [](Situation* s) { s->replica = 0; }, Exit([] {
         v1::ReplicaExited e = Code(0);
         e.set_node_shutdown(true);
         return e;
       }()),
       Decision::kMoveReplica, "", 0, "", 0},
      {"R9: after 2 internal retries the job fails", none,
       [](Situation* s) { s->job.mutable_budgets_used()->set_internal_retries(2); },
       Kind(Failure::Kind::kLost), Decision::kFailJob, "INTERNAL", 13, "default: internal", 0},
      {"internal retries do not use the job-retry budget", none,
       [](Situation* s) { s->job.mutable_budgets_used()->set_job_retries(3); },
       Kind(Failure::Kind::kLost), Decision::kRetryJob, "INTERNAL", 13, "default", 5000},
      {"a hung replica is restarted as transient", none, none, Kind(Failure::Kind::kHung),
       Decision::kRestartReplica, "HUNG", 0, "hangTimeout", 0},
      {"restartPolicy ON_FAILURE restarts user errors",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
       },
       none, Exit(Code(1)), Decision::kRestartReplica, "USER_ERROR", 0, "restartPolicy ON_FAILURE",
       0},
      {"restartPolicy ON_FAILURE does not restart OOM",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
       },
       none, Exit(Oom()), Decision::kFailJob, "OUT_OF_MEMORY", 8, "default: out of memory", 0},
      {"restartPolicy NEVER retries the job on a transient failure",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->set_restart_policy(v1::RESTART_POLICY_NEVER);
       },
       none, Exit(Code(134)), Decision::kRetryJob, "TRANSIENT", 3, "default", 5000},
      {"maxReplicaRestarts 0 retries the job at once",
       [](v1::JobSpec* s) { s->mutable_scheduling()->set_max_replica_restarts(0); }, none,
       Exit(Code(134)), Decision::kRetryJob, "TRANSIENT", 3, "default", 5000},
  };
  for (const Row& row : rows) {
    SECTION(row.what) {
      Situation s(row.spec);
      row.state(&s);
      RetryDecision d = s.Decide(row.failure);
      CHECK(d.action == row.action);
      CHECK(FailureClassName(d.failure_class) == row.failure_class);
      CHECK(d.rule.rfind(row.rule, 0) == 0);
      CHECK(d.delay == absl::Milliseconds(row.delay_ms));
      if (row.action == Decision::kFailJob || row.action == Decision::kRetryJob) {
        CHECK(static_cast<int>(d.error.code) == row.code);
        CHECK(d.error.replica == s.r().name());
        CHECK(d.error.node == "node-a");
      }
      CHECK(!d.explanation.empty());
    }
  }
}

TEST_CASE("R8 messages are the seeds' words") {
  Situation s;
  CHECK(s.Decide(Exit(Code(3))).error.message ==
        "Replica worker-1 exited with a non-zero status of 3. Termination reason: Error.");
  CHECK(s.Decide(Exit(Oom())).error.message ==
        "Replica worker-1 ran out of memory and exited with a non-zero status of 137.");
  CHECK(s.Decide(Kind(Failure::Kind::kLost))
            .error.message.rfind("Internal error occurred for the current attempt.", 0) == 0);
  CHECK(s.Decide(Exit(LaunchFail(true))).error.message ==
        "Replica worker-1 could not start: command not found: trian.py.");
  CHECK(CapacityError("no node has 8 free gpus").message ==
        "Resources are insufficient in cluster: no node has 8 free gpus.");
  // The error carries the replica's last output, for `trainctl describe`.
  CHECK(s.Decide(Exit(Code(3))).error.output_tail == "Traceback...\nRuntimeError: boom\n");
}

TEST_CASE("exit-code rules override the classification, first match wins") {
  auto rules = [](v1::JobSpec* spec) {
    auto* s = spec->mutable_scheduling();
    v1::ExitCodeRule* fail = s->add_exit_code_rules();
    fail->add_exit_codes(134);
    fail->add_pools("chief");
    fail->set_action(v1::FAILURE_ACTION_FAIL_JOB);
    v1::ExitCodeRule* retry = s->add_exit_code_rules();
    retry->add_exit_codes(42);
    retry->add_exit_codes(134);
    retry->set_action(v1::FAILURE_ACTION_RETRY_JOB);
    v1::ExitCodeRule* restart = s->add_exit_code_rules();
    restart->add_signals("SIGTERM");
    restart->set_action(v1::FAILURE_ACTION_RESTART);
    v1::ExitCodeRule* ignore = s->add_exit_code_rules();
    ignore->add_exit_codes(7);
    ignore->set_action(v1::FAILURE_ACTION_IGNORE);
  };
  Situation s(rules);
  RetryDecision d = s.Decide(Exit(Code(42)));
  CHECK(d.action == Decision::kRetryJob);
  CHECK(d.rule == "exitCodeRules[1]");
  // Rule 0 is for the chief only: worker-1's 134 matches rule 1.
  CHECK(s.Decide(Exit(Code(134))).rule == "exitCodeRules[1]");
  s.replica = 0;
  CHECK(s.Decide(Exit(Code(134))).action == Decision::kFailJob);
  s.replica = 2;
  d = s.Decide(Exit(Sig(15)));
  CHECK(d.action == Decision::kRestartReplica);
  CHECK(d.charged_restarts == 1);
  // IGNORE restarts without charging, even past the budget.
  s.r().set_charged_restarts(5);
  s.r().set_restart_count(5);
  d = s.Decide(Exit(Code(7)));
  CHECK(d.action == Decision::kRestartReplica);
  CHECK(d.charged_restarts == 5);
  CHECK(d.delay == absl::Seconds(16));  // backoff still applies: 1s * 2^4
}

TEST_CASE("progress resets the restart budget after a stable period (progress-aware budgets)") {
  Situation s;
  const int64_t start = 1'000'000;
  s.r().set_charged_restarts(5);
  s.r().set_restart_count(5);
  *s.r().mutable_start_time() = MsToTimestamp(start);
  *s.r().mutable_last_progress_time() = MsToTimestamp(start + 60'000);
  // Progress, but the run lasted less than progressResetPeriod (1h): budget used up.
  CHECK(s.Decide(Exit(Code(134)), start + 30 * 60'000).action == Decision::kRetryJob);
  // Progress and a stable hour: the count restarts from zero.
  RetryDecision d = s.Decide(Exit(Code(134)), start + 61 * 60'000);
  CHECK(d.action == Decision::kRestartReplica);
  CHECK(d.progress_reset);
  CHECK(d.charged_restarts == 1);
  // A long run without progress does not reset anything.
  s.r().clear_last_progress_time();
  CHECK(s.Decide(Exit(Code(134)), start + 61 * 60'000).action == Decision::kRetryJob);
}

TEST_CASE("BackoffDelayMs grows by the multiplier up to max") {
  BackoffPolicy b{1000, 5000, 2};
  CHECK(BackoffDelayMs(b, 1) == 1000);
  CHECK(BackoffDelayMs(b, 2) == 2000);
  CHECK(BackoffDelayMs(b, 3) == 4000);
  CHECK(BackoffDelayMs(b, 4) == 5000);
  CHECK(BackoffDelayMs(BackoffPolicy{0, 0, 2}, 3) == 0);
}

}  // namespace
}  // namespace trainctl::sched
