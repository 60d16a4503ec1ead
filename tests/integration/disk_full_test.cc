// trainctld on a full disk: its data dir is a small tmpfs that the test fills up. A commit that
// fails does not end the daemon: the turn's callers hear RESOURCE_EXHAUSTED "no space left on",
// changes are refused while reads keep answering and running replicas keep running, gRPC health
// says NOT_SERVING, an agent's report stays unacknowledged, and once the file system is grown
// everything resumes by itself: the report is applied, submits work, nothing acknowledged is lost.
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "tests/integration/health_client.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

Serving Health(MiniCluster& c) {
  absl::StatusOr<Serving> s =
      CheckHealth(grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials()));
  REQUIRE(s.ok());
  return *s;
}

TEST_CASE("a full data dir refuses changes, keeps reads and replicas, and recovers by itself",
          "[integration][disk_full]") {
  if (!CanMountTmpfs()) {
    WARN("skipped: mounting a tmpfs needs root");
    return;
  }
  ClusterOptions o;
  o.agents = 1;
  o.data_dir_tmpfs_mb = 6;
  MiniCluster c(o);
  REQUIRE(Health(c) == Serving::kServing);
  const std::string go = c.dir() + "/go";
  const std::string ends = c.Submit(c.Spec(R"(
displayName: ends-while-full
workerPools:
- name: chief
  replicaCount: 1
  command: ["WORKLOAD", "--wait-file", ")" +
                                           go + R"(", "--exit", "0"]
)"));
  const std::string keeps = c.Submit(c.Spec(R"(
displayName: keeps-running
workerPools:
- name: chief
  replicaCount: 1
  command: ["WORKLOAD", "--sleep", "600"]
)"));
  const int64_t ends_pid = c.WaitForState(ends, v1::JOB_STATE_RUNNING).replicas(0).pid();
  const v1::Job running = c.WaitForState(keeps, v1::JOB_STATE_RUNNING);
  const int64_t pid = running.replicas(0).pid();
  REQUIRE(pid > 0);

  FillUp(c.DataDir() + "/filler");
  // A few commits may still get in (SQLite writes its log over space it already has); then a
  // submit's commit fails, and submits are refused from then on, each with the reason.
  std::vector<std::string> accepted;
  const std::string more = c.WriteFile("more.yaml", c.Spec(R"(
displayName: more
workerPools:
- name: chief
  replicaCount: 1
  command: ["WORKLOAD"]
)"));
  CliResult refused;
  for (int i = 0; i < 200; ++i) {
    refused = c.Cli({"submit", "-f", more});
    if (refused.exit_code != 0) break;
    accepted.push_back(refused.out);
  }
  INFO(refused.out << refused.err);
  REQUIRE(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("RESOURCE_EXHAUSTED") &&
                              Catch::Contains("no space left on " + c.DataDir()));
  CHECK(Eventually([&] { return Health(c) == Serving::kNotServing; }));
  // A replica exits now: its report cannot be committed until space returns.
  CHECK(close(open(go.c_str(), O_WRONLY | O_CREAT, 0600)) == 0);
  CHECK(Eventually([&] { return !PidAlive(static_cast<pid_t>(ends_pid)); }));

  // Reads answer; the job whose replica ended is not done yet (its exit is not durable), the
  // other replica runs on.
  CliResult nodes = c.Cli({"nodes"});
  CHECK(nodes.exit_code == 0);
  CHECK_THAT(nodes.out, Catch::Contains("node-0"));
  CHECK(c.Cli({"get", keeps}).exit_code == 0);
  CHECK(c.GetJob(ends).state() == v1::JOB_STATE_RUNNING);
  CHECK(PidAlive(static_cast<pid_t>(pid)));
  CliResult still = c.Cli({"submit", "-f", more});
  CHECK(still.exit_code != 0);
  CHECK_THAT(still.err, Catch::Contains("no space left on"));

  // Space returns: the tmpfs grows. Writes resume, the agent registers again and resends the
  // exit, and the job succeeds; the other replica never stopped.
  REQUIRE(mount(nullptr, c.DataDir().c_str(), nullptr, MS_REMOUNT, "size=64m") == 0);
  CHECK(Eventually([&] { return Health(c) == Serving::kServing; }));
  c.WaitForState(ends, v1::JOB_STATE_SUCCEEDED);
  const v1::Job after = c.GetJob(keeps);
  CHECK(after.state() == v1::JOB_STATE_RUNNING);
  CHECK(after.replicas(0).pid() == pid);
  CHECK(after.attempts_size() == 1);
  CHECK(PidAlive(static_cast<pid_t>(pid)));
  const std::string later = c.Submit(c.Spec(R"(
displayName: after
workerPools:
- name: chief
  replicaCount: 1
  command: ["WORKLOAD"]
)"));
  c.WaitForState(later, v1::JOB_STATE_SUCCEEDED);
  // Every acknowledged submit exists.
  for (const std::string& out : accepted) {
    const std::string id(absl::StripAsciiWhitespace(out));
    CHECK(c.GetJob(id).id() == id);
  }
  const std::string log = ReadTextFile(c.dir() + "/trainctld.log");
  CHECK_THAT(log, Catch::Contains("refusing changes until a write succeeds") &&
                      Catch::Contains("writes to the database work again"));
}

}  // namespace
}  // namespace trainctl::testing
