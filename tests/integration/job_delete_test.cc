// Deleting jobs with real processes: `trainctl delete` refuses a live job and deletes one that
// ended, for good (a restart of trainctld does not bring it back); trainctld's --job-retention
// deletes jobs that ended longer ago by itself and never a live one.
#include <signal.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

constexpr char kLongJob[] = R"(
displayName: long
workerPools:
- name: main
  replicaCount: 1
  command: [sh, -c, "exec sleep 300"]
  resources: {cpu: 0.1, memoryMb: 64}
)";

constexpr char kShortJob[] = R"(
displayName: short
workerPools:
- name: main
  replicaCount: 1
  command: [/bin/true]
  resources: {cpu: 0.1, memoryMb: 64}
)";

// GetJob's status for `id`.
grpc::StatusCode GetStatus(MiniCluster& c, const std::string& id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetJobRequest req;
  req.set_id(id);
  v1::Job job;
  return c.jobs().GetJob(&ctx, req, &job).error_code();
}

TEST_CASE("trainctl delete refuses a live job and deletes one that ended, across a restart",
          "[integration]") {
  MiniCluster c(1);
  const std::string id = c.Submit(kLongJob);
  c.WaitForState(id, v1::JOB_STATE_RUNNING);

  CliResult live = c.Cli({"delete", id});
  CHECK(live.exit_code != 0);
  CHECK_THAT(live.err, Catch::Contains("FAILED_PRECONDITION") &&
                           Catch::Contains(absl::StrCat(
                               "job ", id,
                               " is RUNNING; only a job that ended can be deleted (cancel it "
                               "first)")));
  CHECK(GetStatus(c, id) == grpc::StatusCode::OK);

  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForState(id, v1::JOB_STATE_CANCELLED);
  CliResult deleted = c.Cli({"delete", id});
  INFO(deleted.err);
  REQUIRE(deleted.exit_code == 0);
  CHECK(deleted.out == id + " deleted\n");
  CHECK(GetStatus(c, id) == grpc::StatusCode::NOT_FOUND);
  CHECK(c.ListEvents(id, "", "").empty());
  // The deletion itself is recorded, in an event of no job.
  const std::vector<v1::Event> recorded = c.ListEvents("", "", "JobDeleted");
  REQUIRE(recorded.size() == 1);
  CHECK_THAT(recorded[0].reason(), Catch::Contains(absl::StrCat("job ", id,
                                                                " (project default, "
                                                                "CANCELLED) deleted")));
  CliResult listed = c.Cli({"list"});
  CHECK_THAT(listed.out + listed.err, !Catch::Contains(id));

  CliResult again = c.Cli({"delete", id});
  CHECK(again.exit_code != 0);
  CHECK_THAT(again.err, Catch::Contains("NOT_FOUND"));

  // Gone for good: a restarted trainctld loads no trace of it.
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  CHECK(GetStatus(c, id) == grpc::StatusCode::NOT_FOUND);
  CHECK(c.ListEvents(id, "", "").empty());
}

TEST_CASE("job retention deletes the jobs that ended longer ago, never a live one",
          "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--job-retention", "2s"};
  MiniCluster c(o);
  const std::string live = c.Submit(kLongJob);
  const std::string ended = c.Submit(kShortJob);
  c.WaitForState(ended, v1::JOB_STATE_SUCCEEDED);
  c.WaitForState(live, v1::JOB_STATE_RUNNING);
  // Deleted by a pass of the retention (every 200 ms with 2s), 2 s after it ended.
  CHECK(Eventually([&] { return GetStatus(c, ended) == grpc::StatusCode::NOT_FOUND; }));
  CHECK(GetStatus(c, ended) == grpc::StatusCode::NOT_FOUND);
  CHECK(c.ListEvents(ended, "", "").empty());
  // The running job stays, however long it runs.
  CHECK(c.GetJob(live).state() == v1::JOB_STATE_RUNNING);
  CHECK_FALSE(c.ListEvents(live, "", "").empty());
}

}  // namespace
}  // namespace trainctl::testing
