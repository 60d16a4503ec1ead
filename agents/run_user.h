// Who a replica runs as. An agent running as root never starts a replica as itself: it picks a
// user for each launch and the child switches to it before exec (spawn.h). An agent that is not
// root runs every replica as itself and switches nothing.
//
// The user is, first found wins:
//   1. the agent's --run-as entry for the launch's project (the host owner's word);
//   2. the project quota's runAsUser, carried in LaunchReplica.run_as_user (the admin's word);
//   3. the agent's --default-run-as-user (default "nobody").
// A user whose uid is 0 runs only where the agent has --allow-root-replicas; a quota's runAsUser
// "root" is how a project asks for it. Both refusals, and a user the host does not know, are
// INVALID_ARGUMENT launch failures whose message names the user and where it came from.
//
//   RunAsPolicy policy{.by_project = {{"team-a", "alice"}}};
//   absl::StatusOr<std::optional<RunUser>> user = ResolveRunUser(policy, launch, geteuid() == 0);
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
  std::string default_user = "nobody";
  // A replica may run as uid 0.
  bool allow_root = false;
};

// A user name picked for a launch, and what picked it, in words for error messages
// ("--run-as team-a=alice", "the runAsUser of project team-a's quota", "--default-run-as-user").
struct RunUserChoice {
  std::string name;
  std::string source;
};

// Steps 1-3 of the file comment. Pure.
RunUserChoice ChooseRunUser(const RunAsPolicy& policy, absl::string_view project,
                            absl::string_view quota_user);

// A resolved user, all the child needs to become it.
struct RunUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  // Its supplementary groups (getgrouplist: its primary group included).
  std::vector<gid_t> groups;
  // Its home directory, for HOME.
  std::string home;
};

// Looks `choice` up in the user database. INVALID_ARGUMENT naming the user and its source when
// it does not exist; INTERNAL when the lookup itself fails.
absl::StatusOr<RunUser> LookUpRunUser(const RunUserChoice& choice);

// The user `launch` runs as: nullopt when `agent_is_root` is false (the replica runs as the
// agent), else the chosen and looked-up user. INVALID_ARGUMENT for an unknown user, or a uid 0
// user without policy.allow_root (the message names --allow-root-replicas).
absl::StatusOr<std::optional<RunUser>> ResolveRunUser(const RunAsPolicy& policy,
                                                      const trainctl::v1::LaunchReplica& launch,
                                                      bool agent_is_root);

// Parses --run-as's "project=user,project=user" (empty text: no entries). Projects must be DNS
// labels and unique, users portable user names. INVALID_ARGUMENT naming --run-as otherwise.
absl::StatusOr<std::map<std::string, std::string>> ParseRunAs(absl::string_view text);

// `env` ("NAME=VALUE" entries) with HOME, USER and LOGNAME, where present, set to `user`'s: a
// replica sees its own user's home, not the agent's.
std::vector<std::string> WithUserEnvironment(std::vector<std::string> env, const RunUser& user);

}  // namespace trainctl::agent
