// Replicas are not root, end to end: agents with their real defaults run each project's replicas
// under a uid of the project's own (the same on every host, kept across restarts of trainctld),
// so that projects cannot read each other's environments or files nor signal each other's
// processes; a quota's runAsUser or an agent's --run-as picks another user, and a root replica
// runs only on an agent with --allow-root-replicas. Skipped when the tests do not run as root.
#include <google/protobuf/util/json_util.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

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

// The project's uid, as `trainctl quota get` shows it ("" when it has none).
std::string ProjectUid(MiniCluster& c, const std::string& project) {
  CliResult r = c.Cli({"quota", "get", project, "-o", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  v1::Project p;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &p).ok());
  return p.replica_uid() == 0 ? "" : absl::StrCat(p.replica_uid());
}

void SetQuota(MiniCluster& c, const std::string& project, const std::string& user) {
  CliResult r = c.Cli({"quota", "set", project, "--run-as-user", user});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

TEST_CASE("agents run replicas under the project's uid, the quota's user, or root if allowed",
          "[integration][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: agents switch no users, skipped");
    return;
  }
  AgentOptions agent;
  agent.root_replicas = false;  // the agent's real defaults
  MiniCluster c(1, agent);

  CHECK(ProjectUid(c, "team-a").empty());
  const std::string own = RunIdJob(c, "team-a");
  CHECK(own == "65536\n");  // the first of the default --replica-uid-range
  CHECK(ProjectUid(c, "team-a") == "65536");

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
  const std::string team_b = RunIdJob(c, "team-b");  // its first job gives it its uid
  CHECK(team_b == ProjectUid(c, "team-b") + "\n");
  CHECK(team_b != UidOf("nobody") + "\n");
}

// A job of `project` on the node labelled host=`host` whose one replica runs `script`.
std::string ScriptJob(const std::string& project, const std::string& host,
                      const std::string& script, const std::string& extra = "") {
  return absl::StrCat("displayName: probe\nproject: ", project,
                      "\nworkerPools:\n- name: chief\n  replicaCount: 1\n"
                      "  command: [/bin/sh, -c, '",
                      script, "']\n  resources: {cpu: 0.1}\n  nodeSelector: {host: ", host, "}\n",
                      extra);
}

// Runs a ScriptJob to its end and returns its output.
std::string RunScript(MiniCluster& c, const std::string& project, const std::string& host,
                      const std::string& script) {
  const std::string id = c.Submit(ScriptJob(project, host, script));
  v1::Job ended = c.WaitForEnd(id);
  CHECK(ended.state() == v1::JOB_STATE_SUCCEEDED);
  CliResult logs = c.Cli({"logs", id, "--replica", "chief-0"});
  INFO(logs.err);
  REQUIRE(logs.exit_code == 0);
  return logs.out;
}

TEST_CASE("projects run under uids of their own: one cannot read or signal another's replicas",
          "[integration][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: agents switch no users, skipped");
    return;
  }
  ClusterOptions opts;
  opts.agent.root_replicas = false;  // the agents' real defaults
  opts.agent_args = {{0, {"--labels", "host=n0"}}, {1, {"--labels", "host=n1"}}};
  MiniCluster c(opts);

  // team-b's replica: a secret in its environment, a file in its run dir, then it waits.
  const std::string victim =
      c.Submit(ScriptJob("team-b", "n0", "echo private > mine && chmod 644 mine && exec sleep 300",
                         "  env: {TEAMB_SECRET: s3cr3t-of-team-b}\n  secretEnv: [TEAMB_SECRET]\n"));
  const v1::Job running = c.WaitForJob(victim, [](const v1::Job& j) {
    return j.state() == v1::JOB_STATE_RUNNING && j.replicas_size() > 0 && j.replicas(0).pid() > 0;
  });
  const std::string pid = absl::StrCat(running.replicas(0).pid());
  const std::string run_dir = c.AgentWorkDir(0) + "/jobs/" + victim + "/chief-0";
  const std::string file = run_dir + "/mine";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (access(file.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(access(file.c_str(), F_OK) == 0);
  // Root sees the secret where a replica of the same uid would.
  std::ifstream environ("/proc/" + pid + "/environ");
  std::string env((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
  REQUIRE(absl::StrContains(env, "TEAMB_SECRET=s3cr3t-of-team-b"));

  // team-a's replica on the same node tries.
  const std::string probe = RunScript(
      c, "team-a", "n0",
      absl::StrCat("id -u; cat /proc/", pid, "/environ >/dev/null 2>&1 && echo environ=read; ",
                   "cat ", file, " >/dev/null 2>&1 && echo file=read; ", "ls ", run_dir,
                   " >/dev/null 2>&1 && echo dir=listed; ", "kill -0 ", pid,
                   " 2>&1; echo kill=$?"));
  INFO(probe);
  CHECK_FALSE(absl::StrContains(probe, "environ=read"));
  CHECK_FALSE(absl::StrContains(probe, "file=read"));
  CHECK_FALSE(absl::StrContains(probe, "dir=listed"));
  CHECK(absl::StrContains(probe, "Operation not permitted"));  // EPERM, not ESRCH
  CHECK(absl::StrContains(probe, "kill=1"));
  const std::string uid_a = ProjectUid(c, "team-a");
  const std::string uid_b = ProjectUid(c, "team-b");
  CHECK(absl::StartsWith(probe, uid_a + "\n"));
  CHECK(uid_a != uid_b);
  CHECK(c.GetJob(victim).state() == v1::JOB_STATE_RUNNING);

  // The same uid on the other host, and after a restart of trainctld; a new project gets a
  // new one.
  CHECK(RunScript(c, "team-a", "n1", "id -u") == uid_a + "\n");
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  CHECK(ProjectUid(c, "team-a") == uid_a);
  CHECK(RunScript(c, "team-a", "n1", "id -u") == uid_a + "\n");
  const std::string uid_c = RunScript(c, "team-c", "n0", "id -u");
  CHECK(uid_c == ProjectUid(c, "team-c") + "\n");
  CHECK(uid_c != uid_a + "\n");
  CHECK(uid_c != uid_b + "\n");
  REQUIRE(c.Cli({"cancel", victim}).exit_code == 0);
  c.WaitForEnd(victim);
}

}  // namespace
}  // namespace trainctl::testing
