// Jobs that ended leave trainctld's memory (--finished-job-cache) and are served from the
// database with real processes: get, list (with filters), logs, events, watch, a retried create
// with the same request id, cancel and delete all work on a job the scheduler no longer holds,
// and a restarted trainctld loads only the live jobs and, after a burst of failures, no more
// ended ones than --finished-job-cache-jobs.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

constexpr char kHelloJob[] = R"(
displayName: hello
labels: {team: vision}
workerPools:
- name: main
  replicaCount: 1
  command: [sh, -c, "echo hello from the past"]
  resources: {cpu: 0.1, memoryMb: 64}
)";

constexpr char kSleepingJob[] = R"(
displayName: long
workerPools:
- name: main
  replicaCount: 1
  command: [sh, -c, "exec sleep 300"]
  resources: {cpu: 0.1, memoryMb: 64}
)";

constexpr char kQuickFailure[] = R"(
displayName: quick-failure
workerPools:
- name: main
  replicaCount: 1
  command: [sh, -c, "echo 'ValueError: bad learning rate' >&2; exit 3"]
  resources: {cpu: 0.1, memoryMb: 64}
)";

TEST_CASE("after a burst of quick failures a restart loads no more than the ended jobs kept",
          "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  // Every failure is within the cache time; only the count bounds what is loaded.
  o.daemon_args = {"--finished-job-cache", "1h", "--finished-job-cache-jobs", "3"};
  MiniCluster c(o);
  const std::string live = c.Submit(kSleepingJob);
  std::vector<std::string> failed;
  for (int i = 0; i < 8; ++i) failed.push_back(c.Submit(kQuickFailure));
  for (const std::string& id : failed) CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_FAILED);
  c.WaitForState(live, v1::JOB_STATE_RUNNING);

  c.KillDaemon(SIGTERM);
  c.StartDaemon();
  // The live job and the three failures that ended last.
  CHECK_THAT(ReadTextFile(c.dir() + "/trainctld.log"),
             Catch::Contains("loaded 4 live or recently ended jobs"));
  // Every failure still answers, those not loaded from the database.
  for (const std::string& id : failed) {
    CliResult got = c.Cli({"get", id});
    INFO(got.err);
    CHECK(got.exit_code == 0);
    CHECK_THAT(got.out, Catch::Contains(id) && Catch::Contains("FAILED"));
  }
  CHECK(c.GetJob(live).state() == v1::JOB_STATE_RUNNING);
}

TEST_CASE("a job that left memory is still served from the database, across a restart",
          "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  // Ended jobs leave memory at once.
  o.daemon_args = {"--finished-job-cache", "0s"};
  MiniCluster c(o);
  const std::string spec = c.WriteFile("hello.yaml", kHelloJob);
  CliResult submitted = c.Cli({"submit", "-f", spec, "--request-id", "req-hello"});
  REQUIRE(submitted.exit_code == 0);
  const std::string id(absl::StripTrailingAsciiWhitespace(submitted.out));
  const std::string live = c.Submit(kSleepingJob);
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  c.WaitForState(live, v1::JOB_STATE_RUNNING);

  // get: the whole job, attempts included.
  v1::Job got = c.GetJob(id);
  CHECK(got.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(got.attempts_size() == 1);
  // list: newest first, with the label filter and a terminal state filter.
  CliResult listed = c.Cli({"list", "-l", "team=vision"});
  CHECK(listed.exit_code == 0);
  CHECK_THAT(listed.out, Catch::Contains(id) && !Catch::Contains(live));
  v1::ListJobsRequest succeeded;
  succeeded.add_states(v1::JOB_STATE_SUCCEEDED);
  {
    grpc::ClientContext ctx;
    v1::ListJobsResponse resp;
    REQUIRE(c.jobs().ListJobs(&ctx, succeeded, &resp).ok());
    REQUIRE(resp.jobs_size() == 1);
    CHECK(resp.jobs(0).id() == id);
  }
  // logs: the run's node from the database, the log from its agent.
  CliResult logs = c.Cli({"logs", id});
  INFO(logs.err);
  CHECK(logs.exit_code == 0);
  CHECK_THAT(logs.out, Catch::Contains("hello from the past"));
  // events, and a watch (`wait`) that sees the one state there is.
  CHECK_FALSE(c.ListEvents(id, "", "JobSucceeded").empty());
  CliResult waited = c.Cli({"wait", id});
  CHECK(waited.exit_code == 0);
  CHECK_THAT(waited.out, Catch::Contains("SUCCEEDED"));
  CliResult described = c.Cli({"describe", id});
  CHECK(described.exit_code == 0);
  CHECK_THAT(described.out, Catch::Contains("JobSucceeded"));
  // A retried create with the same request id is the same job; another spec is refused.
  CliResult retried = c.Cli({"submit", "-f", spec, "--request-id", "req-hello"});
  CHECK(retried.exit_code == 0);
  CHECK(absl::StripTrailingAsciiWhitespace(retried.out) == id);
  CliResult other =
      c.Cli({"submit", "-f", c.WriteFile("other.yaml", kSleepingJob), "--request-id", "req-hello"});
  CHECK(other.exit_code != 0);
  CHECK_THAT(other.err, Catch::Contains("ALREADY_EXISTS") &&
                            Catch::Contains("requestId req-hello already created job " + id));
  // cancel answers the ended job as it is.
  CliResult cancelled = c.Cli({"cancel", id});
  CHECK(cancelled.exit_code == 0);
  CHECK(c.GetJob(id).state() == v1::JOB_STATE_SUCCEEDED);

  // A restart loads the running job alone, and still serves the other from the database.
  c.KillDaemon(SIGTERM);
  c.StartDaemon();
  CHECK_THAT(ReadTextFile(c.dir() + "/trainctld.log"),
             Catch::Contains("loaded 1 live or recently ended jobs"));
  CHECK(c.GetJob(id).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(c.GetJob(live).state() == v1::JOB_STATE_RUNNING);

  // delete: a job only the database holds goes too, with its events.
  CliResult deleted = c.Cli({"delete", id});
  INFO(deleted.err);
  CHECK(deleted.exit_code == 0);
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_id(id);
  v1::Job gone;
  CHECK(c.jobs().GetJob(&ctx, req, &gone).error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(c.ListEvents(id, "", "").empty());
  CHECK(c.ListEvents("", "", "JobDeleted").size() == 1);
}

}  // namespace
}  // namespace trainctl::testing
