// Fair share end to end: with room for two jobs at a time, a project that queued 8 jobs first
// does not hold the cluster until they drain; the project that queued just after it gets its
// turn as soon as the first project has used more.
#include <algorithm>
#include <catch2/catch.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

std::string ShortJob(const std::string& project) {
  return absl::StrCat(R"(
displayName: short
project: )",
                      project, R"(
workerPools:
- {name: chief, replicaCount: 1, command: [/bin/sleep, '0.4'], resources: {cpu: 1}}
)");
}

TEST_CASE("fair share: a project that queues after another gets its turn before the first drains",
          "[integration][fair_share]") {
  AgentOptions room_for_two;
  room_for_two.cpus = 2;
  MiniCluster c(1, room_for_two);
  std::vector<std::pair<std::string, std::string>> jobs;  // (id, project)
  for (const std::string project : {"team-a", "team-b"}) {
    for (int i = 0; i < 8; ++i) jobs.push_back({c.Submit(c.Spec(ShortJob(project))), project});
  }
  std::vector<std::pair<int64_t, std::string>> starts;  // (start ms, project)
  for (const auto& [id, project] : jobs) {
    const v1::Job done = c.WaitForEnd(id, std::chrono::seconds(60));
    REQUIRE(done.state() == v1::JOB_STATE_SUCCEEDED);
    starts.push_back({TimestampToMs(done.start_time()), project});
  }
  std::sort(starts.begin(), starts.end());
  int b_first = 0;
  for (int i = 0; i < 8; ++i) b_first += starts[i].second == "team-b" ? 1 : 0;
  // By submission alone none of team-b's would start among the first 8.
  INFO("team-b's jobs among the first 8 started: " << b_first);
  CHECK(b_first >= 3);

  // `trainctl projects` shows both with their weight and a share from what they used.
  CliResult projects = c.Cli({"projects"});
  REQUIRE(projects.exit_code == 0);
  CHECK_THAT(projects.out, Catch::Contains("WEIGHT") && Catch::Contains("SHARE"));
  CliResult a = c.Cli({"quota", "get", "team-a"});
  REQUIRE(a.exit_code == 0);
  CHECK_THAT(a.out, Catch::Contains("CPU-h"));
}

}  // namespace
}  // namespace trainctl::testing
