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
#include "common/names.h"

namespace trainctl::agent {
namespace {

// getpwnam_r's scratch space grows up to this before a lookup is given up.
constexpr size_t kMaxPasswdBuffer = 1 << 20;

}  // namespace

RunUserChoice ChooseRunUser(const RunAsPolicy& policy, absl::string_view project,
                            absl::string_view quota_user) {
  auto it = policy.by_project.find(std::string(project));
  if (it != policy.by_project.end()) {
    return {it->second, absl::StrCat("--run-as ", project, "=", it->second)};
  }
  if (!quota_user.empty()) {
    return {std::string(quota_user),
            absl::StrCat("the runAsUser of project ", project, "'s quota")};
  }
  return {policy.default_user, "--default-run-as-user"};
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
                                                      bool agent_is_root) {
  if (!agent_is_root) return std::nullopt;
  const RunUserChoice choice = ChooseRunUser(policy, launch.project(), launch.run_as_user());
  absl::StatusOr<RunUser> user = LookUpRunUser(choice);
  if (!user.ok()) return user.status();
  if (user->uid == 0 && !policy.allow_root) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refusing to run the replica as root (user \"", choice.name, "\", from ", choice.source,
        "): this agent runs replicas as root only with --allow-root-replicas"));
  }
  return std::optional<RunUser>(*std::move(user));
}

absl::StatusOr<std::map<std::string, std::string>> ParseRunAs(absl::string_view text) {
  std::map<std::string, std::string> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (!absl::StrContains(item, '=') || !IsDnsLabel(kv.first, 63) || !IsUserName(kv.second)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--run-as: expected project=user pairs separated by commas (a project name, a user "
          "name of letters, digits, '.', '_' and '-'), got \"",
          item, "\""));
    }
    if (!out.emplace(kv.first, kv.second).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--run-as: project \"", kv.first, "\" is given twice"));
    }
  }
  return out;
}

std::vector<std::string> WithUserEnvironment(std::vector<std::string> env, const RunUser& user) {
  for (std::string& entry : env) {
    const absl::string_view name = absl::string_view(entry).substr(0, entry.find('='));
    if (name == "HOME") {
      entry = absl::StrCat("HOME=", user.home);
    } else if (name == "USER" || name == "LOGNAME") {
      entry = absl::StrCat(name, "=", user.name);
    }
  }
  return env;
}

}  // namespace trainctl::agent
