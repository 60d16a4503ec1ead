// The retry engine end to end (R3-R10): real crashes, signals, OOM kills and launch failures on
// real agents, and what trainctl decided about each.
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// Small backoffs keep the tests quick; the defaults are covered by the unit tests.
// REPLICA scope: these jobs follow one replica's restarts while its peer runs on.
constexpr char kFastBackoff[] = R"(
  restartScope: REPLICA
  restartBackoff: {initial: 100ms, max: 400ms}
  retryBackoff: {initial: 200ms, max: 400ms}
)";

// A chief that ends the job (exit 0) once DIR/healthy-<attempt> exists, and one worker running
// WORKER_ARGS, then marking the attempt healthy and sleeping.
std::string Job(const std::string& worker_args, const std::string& scheduling = "") {
  return absl::StrCat(R"(
displayName: retry-test
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'while [ ! -e DIR/healthy-$TRAINCTL_ATTEMPT ]; do sleep 0.05; done']
- name: worker
  replicaCount: 1
  command: [/bin/sh, -c, 'WORKLOAD )",
                      worker_args, R"( && touch DIR/healthy-$TRAINCTL_ATTEMPT && exec sleep 300']
  resources: {memoryMb: 64}
scheduling:)",
                      kFastBackoff, scheduling);
}

const v1::Replica& Worker(const v1::Job& job) { return job.replicas(1); }

TEST_CASE("a transient crash restarts the replica in place, then the job succeeds",
          "[integration][retry]") {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(Job("--fail-times 2 --fail-code 134")));
  // Its third run may end before a poll sees it running: wait for it to have been started.
  v1::Job running = c.WaitForJob(id, [](const v1::Job& j) {
    return j.replicas_size() == 2 && j.replicas(1).restart_count() == 2;
  });
  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  CHECK(job.attempts_size() == 1);
  CHECK(Worker(job).restart_count() == 2);
  CHECK(Worker(job).charged_restarts() == 2);
  CHECK(Worker(job).name() == "worker-0");
  CHECK(Worker(job).rank() == 1);
  // Same node for every run (R4).
  CliResult events = c.Cli({"events", id, "-o", "json"});
  REQUIRE(events.exit_code == 0);
  CHECK(events.out.find("default: transient exit code 134") != std::string::npos);
  CHECK(events.out.find(absl::StrCat("restarting it in place on ", Worker(running).node())) !=
        std::string::npos);
  for (int restart = 0; restart <= 2; ++restart) {
    CliResult logs = c.Cli({"logs", id, "--replica", "worker-0", "--attempt", "1", "--restart",
                            absl::StrCat(restart)});
    INFO(logs.err);
    CHECK(logs.exit_code == 0);
  }
}

TEST_CASE("six crashes of a replica retry the job, attempt 2 succeeds (R5)",
          "[integration][retry]") {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(Job("--fail-times 6 --fail-code 134")));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(90));
  REQUIRE(job.state() == v1::JOB_STATE_SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  const v1::Attempt& first = job.attempts(0);
  CHECK(first.state() == v1::JOB_STATE_FAILED);
  CHECK(first.failure_class() == "TRANSIENT");
  CHECK(first.decision() == "RETRY_JOB");
  CHECK(first.replica() == "worker-0");
  CHECK(first.budgets_left().job_retries() == 2);
  CHECK(first.reason() ==
        "Replica worker-0 exited with a non-zero status of 134. Termination reason: Error.");
  CHECK(job.attempts(1).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(job.budgets_used().job_retries() == 1);
  CHECK(Worker(job).restart_count() == 0);  // counted per attempt
}

TEST_CASE("exhausted retries fail the job with the R8 message", "[integration][retry]") {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(Job("--stderr \"Segmentation fault (core dumped)\" --exit 139",
                                       "  maxReplicaRestarts: 1\n  maxJobRetries: 1\n")));
  CliResult wait = c.Cli({"wait", id});
  CHECK(wait.exit_code == 1);
  v1::Job job = c.GetJob(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().message() ==
        "Replica worker-0 exited with a non-zero status of 139. Termination reason: Error.");
  CHECK(job.error().reason() == "TRANSIENT");
  CHECK(job.error().output_tail().find("Segmentation fault") != std::string::npos);
  CHECK(job.attempts_size() == 2);
  CHECK(job.attempts(1).decision() == "FAIL_JOB");
  CHECK(job.budgets_used().job_retries() == 1);
  // describe tells the story: the error, its output, the attempts and the decisions.
  CliResult describe = c.Cli({"describe", id});
  INFO(describe.out);
  CHECK(describe.exit_code == 0);
  for (const char* want : {"exited with a non-zero status of 139", "Segmentation fault",
                           "RETRY_JOB", "FAIL_JOB", "TRANSIENT"}) {
    CHECK(describe.out.find(want) != std::string::npos);
  }
}

TEST_CASE("a user error fails the job at once, with the replica's output", "[integration][retry]") {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(Job("--stderr \"ValueError: bad learning rate\" --exit 3")));
  v1::Job job = c.WaitForEnd(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 3);
  CHECK(job.error().reason() == "USER_ERROR");
  CHECK(job.error().message() ==
        "Replica worker-0 exited with a non-zero status of 3. Termination reason: Error.");
  CHECK(job.error().output_tail().find("ValueError: bad learning rate") != std::string::npos);
  CHECK(Worker(job).restart_count() == 0);
  CHECK(job.attempts_size() == 1);
}

TEST_CASE("a replica over its memory limit is killed and the job fails with the OOM message",
          "[integration][retry]") {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(Job("--alloc-until-killed")));
  v1::Job job = c.WaitForEnd(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 8);
  CHECK(job.error().reason() == "OUT_OF_MEMORY");
  CHECK(job.error().message() ==
        "Replica worker-0 ran out of memory and exited with a non-zero status of 137.");
  CHECK(Worker(job).oom_killed());
}

TEST_CASE("replicas resume from their checkpoint across restarts and attempts (R10, R22)",
          "[integration][retry]") {
  MiniCluster c(2);
  std::string id = c.Submit(
      c.Spec(Job("--checkpoint --fail-times 2 --fail-code 134", "  maxReplicaRestarts: 1\n")));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(60));
  REQUIRE(job.state() == v1::JOB_STATE_SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  CliResult second_run =
      c.Cli({"logs", id, "--replica", "worker-0", "--attempt", "1", "--restart", "1"});
  CHECK(second_run.out.find("resumed from step 1") != std::string::npos);
  CliResult retried =
      c.Cli({"logs", id, "--replica", "worker-0", "--attempt", "2", "--restart", "0"});
  CHECK(retried.out.find("resumed from step 2") != std::string::npos);
}

TEST_CASE("internal launch failures retry the job twice, then fail it (R9)",
          "[integration][retry]") {
  AgentOptions opts;
  opts.extra_args = {"--inject-launch-failures", "-1"};
  MiniCluster c(2, opts);
  std::string id = c.Submit(c.Spec(Job("")));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(60));
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 13);
  CHECK(job.error().message().rfind("Internal error occurred for the current attempt.", 0) == 0);
  REQUIRE(job.attempts_size() == 3);
  for (const v1::Attempt& a : job.attempts()) CHECK(a.failure_class() == "INTERNAL");
  CHECK(job.budgets_used().internal_retries() == 2);
  CHECK(job.budgets_used().job_retries() == 0);  // a separate budget
}

TEST_CASE("a command that does not exist is the user's error", "[integration][retry]") {
  MiniCluster c(1);
  std::string id = c.Submit(R"(
displayName: typo
workerPools:
- {name: chief, replicaCount: 1, command: [trian.py]}
)");
  v1::Job job = c.WaitForEnd(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 3);
  CHECK(job.error().message().find("could not start") != std::string::npos);
  CHECK(job.error().message().find("trian.py") != std::string::npos);
  CHECK(job.attempts_size() == 1);
}

TEST_CASE("exit-code rules override the default classification", "[integration][retry]") {
  MiniCluster c(2);
  SECTION("RESTART turns a user error into an in-place restart") {
    std::string id = c.Submit(c.Spec(Job("--fail-times 1 --fail-code 3", R"(
  exitCodeRules:
  - {exitCodes: [3], action: RESTART}
)")));
    v1::Job job = c.WaitForEnd(id);
    CHECK(job.state() == v1::JOB_STATE_SUCCEEDED);
    CHECK(Worker(job).restart_count() == 1);
  }
  SECTION("FAIL_JOB turns a transient crash into a failure") {
    std::string id = c.Submit(c.Spec(Job("--exit 134", R"(
  exitCodeRules:
  - {exitCodes: [134], action: FAIL_JOB}
)")));
    v1::Job job = c.WaitForEnd(id);
    CHECK(job.state() == v1::JOB_STATE_FAILED);
    CHECK(Worker(job).restart_count() == 0);
    CHECK(job.attempts(0).matched_rule() == "exitCodeRules[0]");
  }
}

TEST_CASE("replicas stopped for the host's retirement move to another node at once, uncharged",
          "[integration][retry]") {
  // A node-lost timeout far beyond the wait below: the move must come from the stop's report,
  // not from the agent going silent.
  ClusterOptions o;
  o.daemon_args = {"--node-lost-timeout", "120s"};
  MiniCluster c(o);
  std::string id = c.Submit(c.Spec(R"(
displayName: moved
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --trap-term, --sleep, "300"]
scheduling:
  retryBackoff: {initial: 100ms}
)"));
  v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const int from = running.replicas(0).node() == "node-0" ? 0 : 1;
  // What the unit's ExecStop= runs for a host being retired, while the agent still runs.
  CliResult stopped = c.StopReplicas(from, "10s");
  REQUIRE(stopped.exit_code == 0);
  v1::Job moved = c.WaitForJob(id, [](const v1::Job& j) {
    return j.replicas(0).moves() == 1 && j.replicas(0).state() == v1::REPLICA_STATE_RUNNING;
  });
  CHECK(moved.replicas(0).node() == (from == 0 ? "node-1" : "node-0"));
  CHECK(moved.replicas(0).name() == "chief-0");
  CHECK(moved.replicas(0).rank() == 0);
  CHECK(moved.replicas(0).restart_count() == 1);
  CHECK(moved.replicas(0).charged_restarts() == 0);
  CHECK(moved.attempts_size() == 1);
  CHECK(moved.budgets_used().job_retries() == 0);
  CHECK(moved.budgets_used().internal_retries() == 0);
  CHECK(moved.budgets_used().redispatches() == 0);
  // The stopped replica exited 0 after SIGTERM; that did not end the job as a success.
  CHECK(moved.state() == v1::JOB_STATE_RUNNING);
}

TEST_CASE("a job timeout stops the replicas and fails the job", "[integration][retry]") {
  MiniCluster c(1);
  std::string id = c.Submit(c.Spec(R"(
displayName: slow
workerPools:
- {name: chief, replicaCount: 1, command: [WORKLOAD, --trap-term, --sleep, "300"]}
scheduling:
  timeout: 1s
)"));
  v1::Job job = c.WaitForEnd(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 4);
  CHECK(job.error().message().find("timeout") != std::string::npos);
  c.WaitForJob(id,
               [](const v1::Job& j) { return j.replicas(0).state() == v1::REPLICA_STATE_STOPPED; });
  CliResult logs = c.Cli({"logs", id, "--replica", "chief-0"});
  CHECK(logs.out.find("got SIGTERM") != std::string::npos);  // stopped gracefully
}

}  // namespace
}  // namespace trainctl::testing
