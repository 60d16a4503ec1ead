// Replicas are not root, end to end: agents with their real defaults run replicas as nobody, a
// quota's runAsUser or an agent's --run-as picks another user, and a root replica runs only on
// an agent with --allow-root-replicas. Skipped when the tests do not run as root.
#include <pwd.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// A job of `project` whose one replica prints its uid.
std::string IdJob(const std::string& project) {
  return absl::StrCat(R"(
displayName: whoami
project: )",
                      project, R"(
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'id -u']
  resources: {cpu: 0.1}
)");
}

std::string UidOf(const char* name) {
  const struct passwd* pw = getpwnam(name);
  REQUIRE(pw != nullptr);
  return absl::StrCat(pw->pw_uid);
}

// Runs an IdJob of `project` to its end; returns what the replica printed ("" if it failed).
std::string RunIdJob(MiniCluster& c, const std::string& project, v1::Job* job = nullptr) {
  const std::string id = c.Submit(IdJob(project));
  v1::Job ended = c.WaitForEnd(id);
  if (job != nullptr) *job = ended;
  if (ended.state() != v1::JOB_STATE_SUCCEEDED) return "";
  CliResult logs = c.Cli({"logs", id, "--replica", "chief-0"});
  INFO(logs.err);
  REQUIRE(logs.exit_code == 0);
  return logs.out;
}

void SetQuota(MiniCluster& c, const std::string& project, const std::string& user) {
  CliResult r = c.Cli({"quota", "set", project, "--run-as-user", user});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

TEST_CASE("agents run replicas as nobody, the quota's user, or root only when allowed",
          "[integration][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: agents switch no users, skipped");
    return;
  }
  AgentOptions agent;
  agent.root_replicas = false;  // the agent's real defaults
  MiniCluster c(1, agent);

  CHECK(RunIdJob(c, "team-a") == UidOf("nobody") + "\n");

  SetQuota(c, "team-a", "daemon");
  CHECK(RunIdJob(c, "team-a") == UidOf("daemon") + "\n");
  CliResult shown = c.Cli({"quota", "get", "team-a"});
  CHECK(absl::StrContains(shown.out, "Run as:        daemon\n"));

  SetQuota(c, "team-r", "root");
  v1::Job refused;
  CHECK(RunIdJob(c, "team-r", &refused).empty());
  CHECK(refused.state() == v1::JOB_STATE_FAILED);
  INFO(refused.error().message());
  CHECK(absl::StrContains(refused.error().message(), "--allow-root-replicas"));
}

TEST_CASE("an agent's --run-as wins over the quota, and --allow-root-replicas permits root",
          "[integration][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: agents switch no users, skipped");
    return;
  }
  AgentOptions agent;
  agent.root_replicas = false;
  agent.extra_args = {"--run-as", "team-a=daemon", "--allow-root-replicas"};
  MiniCluster c(1, agent);

  SetQuota(c, "team-a", "nobody");
  CHECK(RunIdJob(c, "team-a") == UidOf("daemon") + "\n");
  SetQuota(c, "team-r", "root");
  CHECK(RunIdJob(c, "team-r") == "0\n");
  CHECK(RunIdJob(c, "team-b") == UidOf("nobody") + "\n");
}

}  // namespace
}  // namespace trainctl::testing
