// Usage accounting end to end: a 2-replica, 1-cpu job that runs 5 s is charged about 10
// CPU-seconds to its project in `trainctl usage` and GET /v1/usage, and still is after the job is
// deleted and after trainctld restarts (the hourly rows outlive the jobs and are read back from
// the store); with authentication, a project's member sees that project's rows alone, a viewer
// and an admin every project's.
#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/integration/http_client.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace usage_test {

constexpr char kJob[] = R"(
displayName: usage
project: acct
workerPools:
- {name: chief, replicaCount: 1, command: [/bin/sleep, '5'], resources: {cpu: 1, memoryMb: 64}}
- {name: worker, replicaCount: 1, command: [/bin/sleep, '5'], resources: {cpu: 1, memoryMb: 64}}
)";

// The CPU-seconds `trainctl usage --by project -o csv` reports for `project`; -1 when none.
double CpuSecondsOf(MiniCluster& c, const std::string& project) {
  CliResult r = c.Cli({"usage", "--by", "project", "--since", "1d", "-o", "csv"});
  if (r.exit_code != 0) return -1;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    double cpu = 0;
    if (cells.size() == 7 && cells[0] == project && absl::SimpleAtod(cells[2], &cpu)) return cpu;
  }
  return -1;
}

TEST_CASE(
    "usage: a 2-replica 1-cpu job that ran 5 s counts about 10 cpu-seconds, after its "
    "deletion and a restart too",
    "[integration][usage]") {
  AgentOptions room;
  room.cpus = 2;
  MiniCluster c(1, room);
  const std::string id = c.Submit(c.Spec(kJob));
  REQUIRE(c.WaitForEnd(id, std::chrono::seconds(60)).state() == v1::JOB_STATE_SUCCEEDED);
  double cpu = -1;
  auto about_ten = [&] {
    cpu = CpuSecondsOf(c, "acct");
    return cpu >= 8 && cpu <= 14;
  };
  CHECK(Eventually(about_ten, std::chrono::seconds(20)));
  INFO("cpu-seconds: " << cpu);

  // The REST API answers the same row.
  httplib::Result rest = Http(c)->Get("/v1/usage?by=project");
  REQUIRE(rest);
  INFO(rest->body);
  REQUIRE(rest->status == 200);
  v1::GetUsageResponse over_rest;
  REQUIRE(google::protobuf::util::JsonStringToMessage(rest->body, &over_rest).ok());
  REQUIRE(over_rest.rows_size() == 1);
  CHECK(over_rest.rows(0).key() == "acct");
  CHECK(over_rest.rows(0).cpu_seconds() >= 8);
  CHECK(over_rest.rows(0).cpu_seconds() <= 14);
  CHECK(over_rest.rows(0).runs() == 2);
  httplib::Result bad_rest = Http(c)->Get("/v1/usage?by=team");
  REQUIRE(bad_rest);
  CHECK(bad_rest->status == 400);

  // The table names the project; another grouping sees the same run.
  CliResult table = c.Cli({"usage"});
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("CPU-HOURS") && Catch::Contains("acct"));
  CliResult by_node = c.Cli({"usage", "--by", "node", "-o", "json"});
  REQUIRE(by_node.exit_code == 0);
  CHECK_THAT(by_node.out, Catch::Contains("\"runs\": \"2\""));
  CliResult bad = c.Cli({"usage", "--by", "team"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--by must be project, user, label:KEY or node"));

  // Deleting the job leaves its usage.
  REQUIRE(c.Cli({"delete", id}).exit_code == 0);
  CHECK(about_ten());

  // So does a restart: the rows are the store's.
  c.KillDaemon(SIGTERM);
  c.StartDaemon();
  CHECK(Eventually(about_ten, std::chrono::seconds(30)));
  INFO("cpu-seconds after the restart: " << cpu);
}

constexpr char kProjectJob[] = R"(
displayName: usage-PROJECT
project: PROJECT
workerPools:
- {name: chief, replicaCount: 1, command: [/bin/sleep, '2'], resources: {cpu: 0.5, memoryMb: 16}}
)";

// `trainctl admin token create ARGS` as the admin; REQUIREs success, returns the bearer token.
std::string CreateToken(MiniCluster& c, std::vector<std::string> args) {
  args.insert(args.begin(), {"admin", "token", "create"});
  CliResult r = c.Cli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return std::string(absl::StripAsciiWhitespace(r.out));
}

// The projects of GET /v1/usage?by=project's rows with CPU-seconds above zero, as `token` sees
// them; {"HTTP <status>"} when it is refused.
std::set<std::string> ProjectsSeenBy(MiniCluster& c, const std::string& token) {
  httplib::Result r = Https(c)->Get("/v1/usage?by=project", {{"Authorization", "Bearer " + token}});
  if (!r) return {"no answer"};
  if (r->status != 200) return {"HTTP " + std::to_string(r->status) + ": " + r->body};
  v1::GetUsageResponse resp;
  if (!google::protobuf::util::JsonStringToMessage(r->body, &resp).ok()) return {"bad JSON"};
  std::set<std::string> out;
  for (const v1::UsageRow& row : resp.rows()) {
    if (row.cpu_seconds() > 0) out.insert(row.key());
  }
  return out;
}

TEST_CASE(
    "usage: a member sees its own project's usage alone, a viewer and an admin every project's",
    "[integration][usage][tls][auth]") {
  ClusterOptions o;
  o.agents = 1;
  o.tls = true;
  MiniCluster c(o);
  for (const char* project : {"team-a", "team-b"}) {
    std::string spec = c.Spec(kProjectJob);
    for (size_t at; (at = spec.find("PROJECT")) != std::string::npos;) spec.replace(at, 7, project);
    const std::string id = c.Submit(spec);
    REQUIRE(c.WaitForEnd(id, std::chrono::seconds(60)).state() == v1::JOB_STATE_SUCCEEDED);
  }
  const std::string admin(absl::StripAsciiWhitespace(ReadTextFile(c.AdminTokenPath())));
  const std::string viewer = CreateToken(c, {"--owner", "vic", "--role", "viewer"});
  const std::string alice =
      CreateToken(c, {"--owner", "alice", "--role", "member", "--project", "team-a"});
  const std::string bob =
      CreateToken(c, {"--owner", "bob", "--role", "member", "--project", "team-b"});

  // The projects `token` sees once they are what `want` says, else the last seen.
  auto seen_by = [&](const std::string& token, const std::set<std::string>& want) {
    std::set<std::string> seen;
    Eventually(
        [&] {
          seen = ProjectsSeenBy(c, token);
          return seen == want;
        },
        std::chrono::seconds(20));
    return absl::StrJoin(seen, ", ");
  };
  const std::set<std::string> both = {"team-a", "team-b"};
  CHECK(seen_by(admin, both) == "team-a, team-b");
  CHECK(seen_by(viewer, both) == "team-a, team-b");
  CHECK(seen_by(alice, {"team-a"}) == "team-a");
  CHECK(seen_by(bob, {"team-b"}) == "team-b");

  // The CLI asks the same service: alice's table names team-a, never team-b.
  CliResult table = c.CliAs(alice, {"usage", "--by", "project", "-o", "csv"});
  INFO(table.err);
  REQUIRE(table.exit_code == 0);
  CHECK(absl::StrContains(table.out, "team-a,"));
  CHECK_FALSE(absl::StrContains(table.out, "team-b"));
  // By another dimension too: a member's rows by node hold only its project's runs.
  CliResult by_node = c.CliAs(alice, {"usage", "--by", "node", "-o", "json"});
  REQUIRE(by_node.exit_code == 0);
  CHECK_THAT(by_node.out, Catch::Contains("\"runs\": \"1\""));
}

}  // namespace usage_test
}  // namespace trainctl::testing
