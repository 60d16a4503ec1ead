// An agent running as root starts replicas as other users (run_user.h) with its real defaults:
// the project's own uid (nobody for a launch without one) unless --run-as, the quota's runAsUser
// or --default-run-as-user says otherwise, and root only with --allow-root-replicas. Skipped
// when the tests do not run as root.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "agents/run_user.h"
#include "tests/agents/agent_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::AgentFixture;
using ::trainctl::agent::testing::IsExited;
using ::trainctl::agent::testing::IsRegister;
using ::trainctl::agent::testing::Launch;
using ::trainctl::v1::AgentMessage;
using ::trainctl::v1::SchedulerMessage;

// `script` run by /bin/sh for project team-a, whose quota says `quota_user`.
SchedulerMessage LaunchScript(const std::string& replica, const std::string& script,
                              const std::string& quota_user = "") {
  SchedulerMessage m = Launch(replica, {"/bin/sh", "-c", script});
  m.mutable_launch()->set_project("team-a");
  m.mutable_launch()->set_run_as_user(quota_user);
  return m;
}

// The run's exit report, then its whole output.
std::pair<trainctl::v1::ReplicaExited, std::string> Finish(AgentFixture& f,
                                                           const std::string& replica) {
  const std::string run_id = absl::StrCat("j-agent/1/", replica, "/0");
  std::optional<AgentMessage> exited = f.scheduler().Next(
      [&](const AgentMessage& m) { return IsExited(m) && m.replica_exited().run_id() == run_id; });
  REQUIRE(exited);
  SchedulerMessage read;
  static uint64_t next_request = 1;
  const uint64_t request = next_request++;
  read.mutable_read_log()->set_request_id(request);
  read.mutable_read_log()->set_run_id(run_id);
  f.scheduler().Send(read);
  std::optional<AgentMessage> log = f.scheduler().Next([&](const AgentMessage& m) {
    return m.has_log_data() && m.log_data().request_id() == request;
  });
  REQUIRE(log);
  return {exited->replica_exited(), log->log_data().data()};
}

uid_t UidOf(const std::string& name) { return LookUpRunUser({name, "test"})->uid; }

TEST_CASE("by default a replica runs as nobody, in a directory of its own", "[agent][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: the agent switches no users, skipped");
    return;
  }
  // The real defaults, over the fixture's 0700 temp work dir.
  AgentFixture f([](Agent::Options& o) { o.run_as = RunAsPolicy{}; });
  REQUIRE(f.scheduler().Next(IsRegister));
  SchedulerMessage launch =
      LaunchScript("worker-0", "id -u; echo home=$HOME; touch mine && echo wrote");
  const std::string checkpoints = f.work_dir() + "/checkpoints/j-agent";
  launch.mutable_launch()->set_checkpoint_dir(checkpoints);
  f.scheduler().Send(launch);
  auto [exited, output] = Finish(f, "worker-0");
  CHECK(exited.exit_code() == 0);
  const uid_t nobody = UidOf("nobody");
  CHECK(output ==
        absl::StrCat(nobody, "\nhome=", LookUpRunUser({"nobody", "t"})->home, "\nwrote\n"));
  // Its working and checkpoint directories, and its log, are its own.
  struct stat st;
  REQUIRE(stat((f.work_dir() + "/jobs/j-agent/worker-0").c_str(), &st) == 0);
  CHECK(st.st_uid == nobody);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(stat(checkpoints.c_str(), &st) == 0);
  CHECK(st.st_uid == nobody);
  REQUIRE(stat((f.work_dir() + "/logs/j-agent/attempt-1/worker-0.restart-0.log").c_str(), &st) ==
          0);
  CHECK(st.st_uid == nobody);
  CHECK((st.st_mode & 0777) == 0600);  // its user's and root's alone
  REQUIRE(stat((f.work_dir() + "/logs/j-agent/attempt-1").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  // Everyone may search the 0700 temp work dir now, and jobs/, but only root lists them.
  REQUIRE(stat(f.work_dir().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0711);
  REQUIRE(stat((f.work_dir() + "/jobs").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0711);
}

TEST_CASE("a launch with its project's uid runs under it, its run dir as HOME", "[agent][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: the agent switches no users, skipped");
    return;
  }
  AgentFixture f([](Agent::Options& o) { o.run_as = RunAsPolicy{}; });  // the real defaults
  REQUIRE(f.scheduler().Next(IsRegister));
  SchedulerMessage launch = LaunchScript(
      "worker-0", "id -u; id -g; id -G; echo $HOME $USER $LOGNAME; touch mine && echo wrote");
  launch.mutable_launch()->set_project_uid(65999);
  const std::string checkpoints = f.work_dir() + "/checkpoints/j-agent";
  launch.mutable_launch()->set_checkpoint_dir(checkpoints);
  f.scheduler().Send(launch);
  auto [exited, output] = Finish(f, "worker-0");
  CHECK(exited.exit_code() == 0);
  const std::string run_dir = f.work_dir() + "/jobs/j-agent/worker-0";
  // No supplementary groups but its own gid; no passwd entry needed.
  CHECK(output == absl::StrCat("65999\n65999\n65999\n", run_dir,
                               " trainctl-team-a trainctl-team-a\nwrote\n"));
  struct stat st;
  for (const std::string& path :
       {run_dir, run_dir + "/mine", checkpoints,
        f.work_dir() + "/logs/j-agent/attempt-1/worker-0.restart-0.log"}) {
    INFO(path);
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK(st.st_uid == 65999);
    CHECK(st.st_gid == 65999);
  }

  // An explicit --default-run-as-user wins over the project's uid.
  AgentFixture opted([](Agent::Options& o) {
    o.run_as = RunAsPolicy{};
    o.run_as.default_user = "daemon";
  });
  REQUIRE(opted.scheduler().Next(IsRegister));
  SchedulerMessage daemon = LaunchScript("worker-1", "id -u");
  daemon.mutable_launch()->set_project_uid(65999);
  opted.scheduler().Send(daemon);
  CHECK(Finish(opted, "worker-1").second == absl::StrCat(UidOf("daemon"), "\n"));
}

TEST_CASE("the agent's --run-as, then the quota's runAsUser, picks the user", "[agent][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: the agent switches no users, skipped");
    return;
  }
  AgentFixture f([](Agent::Options& o) {
    o.run_as = RunAsPolicy{};
    o.run_as.by_project = {{"team-a", "daemon"}};
  });
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(LaunchScript("worker-0", "id -u", "nobody"));
  CHECK(Finish(f, "worker-0").second == absl::StrCat(UidOf("daemon"), "\n"));

  SchedulerMessage other = LaunchScript("worker-1", "id -u", "daemon");
  other.mutable_launch()->set_project("team-b");  // not in --run-as: the quota's user
  f.scheduler().Send(other);
  CHECK(Finish(f, "worker-1").second == absl::StrCat(UidOf("daemon"), "\n"));
}

TEST_CASE("a root replica needs --allow-root-replicas", "[agent][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: the agent switches no users, skipped");
    return;
  }
  SECTION("refused without it, naming the flag") {
    AgentFixture f([](Agent::Options& o) { o.run_as = RunAsPolicy{}; });
    REQUIRE(f.scheduler().Next(IsRegister));
    f.scheduler().Send(LaunchScript("worker-0", "id -u", "root"));
    auto [exited, output] = Finish(f, "worker-0");
    CHECK(exited.launch_failed());
    CHECK(exited.launch_error_is_user());
    CHECK(exited.launch_error() ==
          "refusing to run the replica as root (user \"root\", from the runAsUser of project "
          "team-a's quota): this agent runs replicas as root only with --allow-root-replicas");
    CHECK(output.empty());
  }
  SECTION("run as root with it") {
    AgentFixture f([](Agent::Options& o) {
      o.run_as = RunAsPolicy{};
      o.run_as.allow_root = true;
    });
    REQUIRE(f.scheduler().Next(IsRegister));
    f.scheduler().Send(LaunchScript("worker-0", "id -u", "root"));
    CHECK(Finish(f, "worker-0").second == "0\n");
    // The default is still nobody.
    f.scheduler().Send(LaunchScript("worker-1", "id -u"));
    CHECK(Finish(f, "worker-1").second == absl::StrCat(UidOf("nobody"), "\n"));
  }
}

TEST_CASE("an unknown user fails the launch, naming the user and where it came from",
          "[agent][run_as]") {
  if (geteuid() != 0) {
    WARN("not root: the agent switches no users, skipped");
    return;
  }
  AgentFixture f([](Agent::Options& o) { o.run_as = RunAsPolicy{}; });
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(LaunchScript("worker-0", "id -u", "no-such-user-tc"));
  trainctl::v1::ReplicaExited exited = Finish(f, "worker-0").first;
  CHECK(exited.launch_failed());
  CHECK(exited.launch_error_is_user());
  CHECK(exited.launch_error() ==
        "cannot run the replica as user \"no-such-user-tc\" (from the runAsUser of project "
        "team-a's quota): no such user on this node");
}

}  // namespace
}  // namespace trainctl::agent
