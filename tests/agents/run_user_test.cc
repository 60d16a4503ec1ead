// Who replicas run as (run_user.h): the choice between --run-as, the quota's runAsUser and
// --default-run-as-user, user lookup, the root refusal, --run-as parsing and the user's env.
#include "agents/run_user.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"

namespace trainctl::agent {
namespace {

trainctl::v1::LaunchReplica LaunchFor(const std::string& project, const std::string& quota_user,
                                      uint32_t project_uid = 0) {
  trainctl::v1::LaunchReplica launch;
  launch.set_project(project);
  launch.set_run_as_user(quota_user);
  launch.set_project_uid(project_uid);
  return launch;
}

TEST_CASE("ChooseRunUser: the agent's --run-as, then the quota's user, then the default",
          "[run_user]") {
  RunAsPolicy policy;
  policy.by_project = {{"team-a", "alice"}};
  policy.default_user = "fallback";
  struct Row {
    std::string project;
    std::string quota_user;
    std::string want_name;
    std::string want_source;
  };
  const Row rows[] = {
      // The host owner's map wins over what the admin set in the quota.
      {"team-a", "bob", "alice", "--run-as team-a=alice"},
      {"team-a", "", "alice", "--run-as team-a=alice"},
      {"team-b", "bob", "bob", "the runAsUser of project team-b's quota"},
      {"team-b", "", "fallback", "--default-run-as-user"},
      {"", "", "fallback", "--default-run-as-user"},
  };
  for (const Row& row : rows) {
    INFO(row.project << " / " << row.quota_user);
    RunUserChoice choice = ChooseRunUser(policy, row.project, row.quota_user);
    CHECK(choice.name == row.want_name);
    CHECK(choice.source == row.want_source);
  }
  CHECK(ChooseRunUser(RunAsPolicy{}, "x", "").name == "nobody");  // a launch without a uid
  // An explicit --default-run-as-user wins over the project's uid.
  CHECK(ChooseRunUser(policy, "team-b", "", 65536).name == "fallback");
}

TEST_CASE("ChooseRunUser: without --default-run-as-user, the project's own uid", "[run_user]") {
  RunAsPolicy policy;
  policy.by_project = {{"team-a", "alice"}};
  RunUserChoice own = ChooseRunUser(policy, "team-b", "", 65537);
  CHECK(own.name == "trainctl-team-b");
  CHECK(own.project_uid == uid_t{65537});
  CHECK(own.source == "the uid of project team-b (trainctld --replica-uid-range)");
  // --run-as and the quota's user still come first.
  CHECK(ChooseRunUser(policy, "team-a", "", 65536).name == "alice");
  CHECK(ChooseRunUser(policy, "team-b", "bob", 65537).name == "bob");
  CHECK_FALSE(ChooseRunUser(policy, "team-b", "bob", 65537).project_uid.has_value());
}

TEST_CASE("ResolveRunUser: a project's uid needs no passwd entry and gets the run dir as home",
          "[run_user]") {
  RunAsPolicy policy;
  policy.project_uid_gids = {4242};
  absl::StatusOr<std::optional<RunUser>> own =
      ResolveRunUser(policy, LaunchFor("team-b", "", 65537), true, "/work/jobs/j-1/chief-0");
  REQUIRE(own.ok());
  REQUIRE(own->has_value());
  const RunUser& user = **own;
  CHECK(user.name == "trainctl-team-b");
  CHECK(user.uid == 65537);
  CHECK(user.gid == 65537);
  CHECK(user.groups == std::vector<gid_t>{4242});  // --project-uid-groups only
  CHECK(user.home == "/work/jobs/j-1/chief-0");
  CHECK(user.project_uid);
  // An agent that is not root switches nothing.
  CHECK_FALSE(ResolveRunUser(policy, LaunchFor("team-b", "", 65537), false)->has_value());
}

TEST_CASE("LookUpGroups resolves --project-uid-groups and names an unknown group", "[run_user]") {
  absl::StatusOr<std::vector<gid_t>> root = LookUpGroups({"root"});
  REQUIRE(root.ok());
  CHECK(*root == std::vector<gid_t>{0});
  CHECK(LookUpGroups({}).value().empty());
  absl::StatusOr<std::vector<gid_t>> unknown = LookUpGroups({"root", "no-such-group-tc"});
  CHECK(unknown.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(unknown.status().message() ==
        "--project-uid-groups: no group \"no-such-group-tc\" on this host");
}

TEST_CASE("LookUpRunUser resolves a user with its groups, and names an unknown one", "[run_user]") {
  absl::StatusOr<RunUser> nobody = LookUpRunUser({"nobody", "--default-run-as-user"});
  REQUIRE(nobody.ok());
  CHECK(nobody->name == "nobody");
  CHECK(nobody->uid != 0);
  CHECK(!nobody->home.empty());
  // getgrouplist lists the primary group too.
  CHECK(std::find(nobody->groups.begin(), nobody->groups.end(), nobody->gid) !=
        nobody->groups.end());

  absl::StatusOr<RunUser> root = LookUpRunUser({"root", "x"});
  REQUIRE(root.ok());
  CHECK(root->uid == 0);

  absl::StatusOr<RunUser> unknown = LookUpRunUser({"no-such-user-tc", "--run-as team-a=..."});
  CHECK(unknown.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(unknown.status().message() ==
        "cannot run the replica as user \"no-such-user-tc\" (from --run-as team-a=...): no such "
        "user on this node");
}

TEST_CASE("ResolveRunUser: no switch unless root, and root only when allowed", "[run_user]") {
  RunAsPolicy policy;
  // An agent that is not root runs replicas as itself, whatever the policy says.
  absl::StatusOr<std::optional<RunUser>> as_agent =
      ResolveRunUser(policy, LaunchFor("team-a", "root"), /*agent_is_root=*/false);
  REQUIRE(as_agent.ok());
  CHECK(!as_agent->has_value());

  absl::StatusOr<std::optional<RunUser>> as_nobody =
      ResolveRunUser(policy, LaunchFor("team-a", ""), /*agent_is_root=*/true);
  REQUIRE(as_nobody.ok());
  REQUIRE(as_nobody->has_value());
  CHECK((*as_nobody)->name == "nobody");

  absl::StatusOr<std::optional<RunUser>> refused =
      ResolveRunUser(policy, LaunchFor("team-a", "root"), /*agent_is_root=*/true);
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(refused.status().message() ==
        "refusing to run the replica as root (user \"root\", from the runAsUser of project "
        "team-a's quota): this agent runs replicas as root only with --allow-root-replicas");

  policy.default_user = "root";
  CHECK(absl::StrContains(ResolveRunUser(policy, LaunchFor("team-a", ""), true).status().message(),
                          "from --default-run-as-user): this agent runs replicas as root only with "
                          "--allow-root-replicas"));
  policy.allow_root = true;
  absl::StatusOr<std::optional<RunUser>> allowed =
      ResolveRunUser(policy, LaunchFor("team-a", ""), true);
  REQUIRE(allowed.ok());
  REQUIRE(allowed->has_value());
  CHECK((*allowed)->uid == 0);

  CHECK(ResolveRunUser(policy, LaunchFor("team-a", "no-such-user-tc"), true).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("ParseRunAs takes project=user pairs", "[run_user]") {
  struct Row {
    std::string text;
    bool ok;
    std::map<std::string, std::string> want;
  };
  const Row rows[] = {
      {"", true, {}},
      {"team-a=alice", true, {{"team-a", "alice"}}},
      {"team-a=alice,team-b=svc_b.1", true, {{"team-a", "alice"}, {"team-b", "svc_b.1"}}},
      {"team-a=alice,", true, {{"team-a", "alice"}}},
      {"team-a", false, {}},
      {"team-a=", false, {}},
      {"=alice", false, {}},
      {"Team_A=alice", false, {}},
      {"team-a=-x", false, {}},
      {"team-a=a b", false, {}},
      {"team-a=alice,team-a=bob", false, {}},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    absl::StatusOr<std::map<std::string, std::string>> got = ParseRunAs(row.text);
    CHECK(got.ok() == row.ok);
    if (got.ok()) CHECK(*got == row.want);
    if (!got.ok()) CHECK(absl::StartsWith(got.status().message(), "--run-as"));
  }
}

TEST_CASE("WithUserEnvironment gives the passed HOME, USER and LOGNAME the user's values",
          "[run_user]") {
  RunUser user;
  user.name = "alice";
  user.home = "/home/alice";
  CHECK(WithUserEnvironment({"PATH=/bin", "HOME=/root", "USER=root", "LANG=C"}, user) ==
        std::vector<std::string>{"PATH=/bin", "HOME=/home/alice", "USER=alice", "LANG=C"});
  // Not passed: not added.
  CHECK(WithUserEnvironment({"PATH=/bin"}, user) == std::vector<std::string>{"PATH=/bin"});
}

TEST_CASE("WithUserEnvironment gives a project's uid HOME, USER and LOGNAME, passed or not",
          "[run_user]") {
  RunUser user;
  user.name = "trainctl-team-a";
  user.home = "/work/jobs/j-1/chief-0";
  user.project_uid = true;
  CHECK(WithUserEnvironment({"PATH=/bin", "HOME=/root"}, user) ==
        std::vector<std::string>{"PATH=/bin", "HOME=/work/jobs/j-1/chief-0", "USER=trainctl-team-a",
                                 "LOGNAME=trainctl-team-a"});
}

}  // namespace
}  // namespace trainctl::agent
