// Who a replica runs as. An agent running as root never starts a replica as itself: it picks a
// user for each launch and the child switches to it before exec (spawn.h). An agent that is not
// root runs every replica as itself and switches nothing.
//
// The user is, first found wins:
//   1. the agent's --run-as entry for the launch's project (the host owner's word);
//   2. the project quota's runAsUser, carried in LaunchReplica.run_as_user (the admin's word);
//   3. the agent's --default-run-as-user, where the host owner set one (an opt-out of 4);
//   4. the project's own uid, carried in LaunchReplica.project_uid (trainctld gives each project
//      one, the same on every host): that uid with a gid of the same number, no passwd entry,
//      the agent's --project-uid-groups as its supplementary groups, named
//      "trainctl-<project>", its home the run's directory;
//   5. nobody (a launch from a trainctld that gives no uids).
// A user whose uid is 0 runs only where the agent has --allow-root-replicas; a quota's runAsUser
// "root" is how a project asks for it. Both refusals, and a user the host does not know, are
// INVALID_ARGUMENT launch failures whose message names the user and where it came from.
//
//   RunAsPolicy policy{.by_project = {{"team-a", "alice"}}};
//   absl::StatusOr<std::optional<RunUser>> user =
//       ResolveRunUser(policy, launch, geteuid() == 0, run_dir);
//
// Thread-safe: the functions keep no state (getpwnam_r and getgrouplist are reentrant).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

// The agent's side of the choice: its --run-as, --default-run-as-user and --allow-root-replicas.
struct RunAsPolicy {
  // Project -> user name.
  std::map<std::string, std::string> by_project;
  // --default-run-as-user; empty: each project's own uid (step 4 of the file comment).
  std::string default_user;
  // --project-uid-groups, looked up (LookUpGroups): the supplementary groups of replicas that
  // run under their project's uid, e.g. a group that may read a shared dataset directory.
  std::vector<std::string> project_uid_groups;
  std::vector<gid_t> project_uid_gids;
  // A replica may run as uid 0.
  bool allow_root = false;
};

// The user picked for a launch, and what picked it, in words for error messages
// ("--run-as team-a=alice", "the runAsUser of project team-a's quota", "--default-run-as-user").
struct RunUserChoice {
  std::string name;
  std::string source;
  // Set for the project's own uid (step 4): `name` is then "trainctl-<project>", in no user
  // database.
  std::optional<uid_t> project_uid = std::nullopt;
};

// The name a project's own uid goes by (USER, LOGNAME): "trainctl-<project>".
std::string ProjectUserName(absl::string_view project);

// Steps 1-5 of the file comment. Pure. `project_uid` 0: the launch carries none.
RunUserChoice ChooseRunUser(const RunAsPolicy& policy, absl::string_view project,
                            absl::string_view quota_user, uint32_t project_uid = 0);

// A resolved user, all the child needs to become it.
struct RunUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  // Its supplementary groups (getgrouplist: its primary group included).
  std::vector<gid_t> groups;
  // Its home directory, for HOME.
  std::string home;
  // A project's own uid (no passwd entry): WithUserEnvironment sets HOME, USER and LOGNAME
  // whether or not the agent passes them.
  bool project_uid = false;
};

// Looks `choice` up in the user database. INVALID_ARGUMENT naming the user and its source when
// it does not exist; INTERNAL when the lookup itself fails.
absl::StatusOr<RunUser> LookUpRunUser(const RunUserChoice& choice);

// The user `launch` runs as: nullopt when `agent_is_root` is false (the replica runs as the
// agent), else the chosen and looked-up user; a project's own uid gets `run_dir` as its home.
// INVALID_ARGUMENT for an unknown user, or a uid 0 user without policy.allow_root (the message
// names --allow-root-replicas).
absl::StatusOr<std::optional<RunUser>> ResolveRunUser(const RunAsPolicy& policy,
                                                      const trainctl::v1::LaunchReplica& launch,
                                                      bool agent_is_root,
                                                      const std::string& run_dir = "");

// The gids of the groups named (--project-uid-groups). INVALID_ARGUMENT naming the flag and the
// first group this host does not know.
absl::StatusOr<std::vector<gid_t>> LookUpGroups(const std::vector<std::string>& names);

// Parses --run-as's "project=user,project=user" (empty text: no entries). Projects must be DNS
// labels and unique, users portable user names. INVALID_ARGUMENT naming --run-as otherwise.
absl::StatusOr<std::map<std::string, std::string>> ParseRunAs(absl::string_view text);

// `env` ("NAME=VALUE" entries) with HOME, USER and LOGNAME, where present, set to `user`'s: a
// replica sees its own user's home, not the agent's. For a project's own uid they are added
// where absent.
std::vector<std::string> WithUserEnvironment(std::vector<std::string> env, const RunUser& user);

}  // namespace trainctl::agent
