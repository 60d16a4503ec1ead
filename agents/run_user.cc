#include "agents/run_user.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/flag_values.h"
#include "common/names.h"

namespace trainctl::agent {
namespace {

// getpwnam_r's scratch space grows up to this before a lookup is given up.
constexpr size_t kMaxPasswdBuffer = 1 << 20;

}  // namespace

std::string ProjectUserName(absl::string_view project) {
  return absl::StrCat("trainctl-", project);
}

RunUserChoice ChooseRunUser(const RunAsPolicy& policy, absl::string_view project,
                            absl::string_view quota_user, uint32_t project_uid) {
  auto it = policy.by_project.find(std::string(project));
  if (it != policy.by_project.end()) {
    return {it->second, absl::StrCat("--run-as ", project, "=", it->second)};
  }
  if (!quota_user.empty()) {
    return {std::string(quota_user),
            absl::StrCat("the runAsUser of project ", project, "'s quota")};
  }
  if (!policy.default_user.empty()) return {policy.default_user, "--default-run-as-user"};
  if (project_uid != 0) {
    return {ProjectUserName(project),
            absl::StrCat("the uid of project ", project, " (trainctld --replica-uid-range)"),
            static_cast<uid_t>(project_uid)};
  }
  return {"nobody", "the launch, which carries no project uid"};
}

absl::StatusOr<RunUser> LookUpRunUser(const RunUserChoice& choice) {
  long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(hint > 0 ? static_cast<size_t>(hint) : 4096);
  struct passwd pw;
  struct passwd* found = nullptr;
  int error;
  while ((error = getpwnam_r(choice.name.c_str(), &pw, buffer.data(), buffer.size(), &found)) ==
             ERANGE &&
         buffer.size() < kMaxPasswdBuffer) {
    buffer.resize(buffer.size() * 2);
  }
  if (found == nullptr &&
      (error == 0 || error == ENOENT || error == ESRCH || error == EBADF || error == EPERM)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot run the replica as user \"", choice.name,
                                                   "\" (from ", choice.source,
                                                   "): no such user on this node"));
  }
  if (found == nullptr) {
    return absl::InternalError(absl::StrCat("cannot look up user \"", choice.name, "\" (from ",
                                            choice.source, "): ", std::strerror(error)));
  }
  RunUser user;
  user.name = choice.name;
  user.uid = pw.pw_uid;
  user.gid = pw.pw_gid;
  user.home = pw.pw_dir != nullptr ? pw.pw_dir : "/";
  int count = 64;
  user.groups.resize(count);
  while (getgrouplist(pw.pw_name, pw.pw_gid, user.groups.data(), &count) < 0) {
    // `count` now says how many there are.
    user.groups.resize(std::max<size_t>(static_cast<size_t>(count), user.groups.size() * 2));
    count = static_cast<int>(user.groups.size());
  }
  user.groups.resize(count);
  return user;
}

absl::StatusOr<std::optional<RunUser>> ResolveRunUser(const RunAsPolicy& policy,
                                                      const trainctl::v1::LaunchReplica& launch,
                                                      bool agent_is_root,
                                                      const std::string& run_dir) {
  if (!agent_is_root) return std::nullopt;
  const RunUserChoice choice =
      ChooseRunUser(policy, launch.project(), launch.run_as_user(), launch.project_uid());
  if (choice.project_uid) {
    RunUser own;
    own.name = choice.name;
    own.uid = *choice.project_uid;
    own.gid = static_cast<gid_t>(*choice.project_uid);
    own.groups = policy.project_uid_gids;
    own.home = run_dir.empty() ? "/" : run_dir;
    own.project_uid = true;
    return std::optional<RunUser>(std::move(own));
  }
  absl::StatusOr<RunUser> user = LookUpRunUser(choice);
  if (!user.ok()) return user.status();
  if (user->uid == 0 && !policy.allow_root) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refusing to run the replica as root (user \"", choice.name, "\", from ", choice.source,
        "): this agent runs replicas as root only with --allow-root-replicas"));
  }
  return std::optional<RunUser>(*std::move(user));
}

absl::StatusOr<std::vector<gid_t>> LookUpGroups(const std::vector<std::string>& names) {
  std::vector<gid_t> gids;
  for (const std::string& name : names) {
    std::vector<char> buffer(4096);
    struct group gr;
    struct group* found = nullptr;
    int error;
    while ((error = getgrnam_r(name.c_str(), &gr, buffer.data(), buffer.size(), &found)) ==
               ERANGE &&
           buffer.size() < kMaxPasswdBuffer) {
      buffer.resize(buffer.size() * 2);
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--project-uid-groups: no group \"", name, "\" on this host",
          error != 0 && error != ENOENT ? absl::StrCat(" (", std::strerror(error), ")") : ""));
    }
    gids.push_back(gr.gr_gid);
  }
  return gids;
}

absl::StatusOr<std::map<std::string, std::string>> ParseRunAs(absl::string_view text) {
  std::map<std::string, std::string> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (!absl::StrContains(item, '=') || !IsDnsLabel(kv.first, 63) || !IsUserName(kv.second)) {
      return BadFlagValue("--run-as",
                          "project=user pairs separated by commas (a project name, a user name "
                          "of letters, digits, '.', '_' and '-')",
                          item);
    }
    if (!out.emplace(kv.first, kv.second).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--run-as: project \"", kv.first, "\" is given twice"));
    }
  }
  return out;
}

std::vector<std::string> WithUserEnvironment(std::vector<std::string> env, const RunUser& user) {
  bool home = false, user_name = false, logname = false;
  for (std::string& entry : env) {
    const absl::string_view name = absl::string_view(entry).substr(0, entry.find('='));
    if (name == "HOME") {
      entry = absl::StrCat("HOME=", user.home);
      home = true;
    } else if (name == "USER" || name == "LOGNAME") {
      (name == "USER" ? user_name : logname) = true;
      entry = absl::StrCat(name, "=", user.name);
    }
  }
  if (user.project_uid) {
    if (!home) env.push_back(absl::StrCat("HOME=", user.home));
    if (!user_name) env.push_back(absl::StrCat("USER=", user.name));
    if (!logname) env.push_back(absl::StrCat("LOGNAME=", user.name));
  }
  return env;
}

}  // namespace trainctl::agent
