// Starting a program of the agent's own (the health check program, the startup script:
// check_program.h), and the command resolution and environments replicas share with it. The only
// place in the agent that forks; that happens once per check interval at most. Replicas are never
// started this way: their trainctl-shim is posix_spawned (shim_spawn.h), so a launch copies none of
// the agent's page tables.
//
// SpawnProcess() resolves the command through PATH, builds every array the child needs, then
// forks; the child only makes async-signal-safe calls (open, write, setsid, dup2, setgroups,
// setgid, setuid, chdir, execve) before it execs. An exec failure comes back to the parent through
// a close-on-exec pipe, so a successful return means the new program is running.
//
// Errors follow one rule: INVALID_ARGUMENT means the failure is the user's (the command does not
// exist or cannot be executed); any other code is the host's (fork, pipe, chdir failures).
//
//   SpawnRequest req{{"/etc/trainctl/health.sh"}, env, "/var/lib/trainctl-agent", output_fd};
//   absl::StatusOr<pid_t> pid = SpawnProcess(req);
//
// Thread-safe: the functions keep no state; SpawnProcess may be called from any thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/run_user.h"

namespace trainctl::agent {

struct SpawnRequest {
  // Command followed by its arguments; argv[0] is looked up in the PATH of `env` unless it
  // contains a '/'. Must not be empty.
  std::vector<std::string> argv;
  // The child's complete environment, "NAME=VALUE" entries.
  std::vector<std::string> env;
  // The child's working directory; must exist. Relative commands resolve against it.
  std::string working_dir;
  // Becomes the child's stdout and stderr. Not owned; the caller closes it after the call.
  int output_fd = -1;
  // The child moves itself into each of these cgroups (their join files, one per hierarchy,
  // see RunCgroups::Created) before exec, in order. Best effort: a failed write leaves it where the
  // agent is in that hierarchy.
  std::vector<std::string> cgroup_join_paths;
  // Where set, the child becomes this user after joining its cgroups (which root owns) and
  // before chdir and exec: setgroups(user->groups), setgid(user->gid), setuid(user->uid), in that
  // order. The working directory must be usable by it. REQUIRES: the caller runs as root. Unset:
  // the child runs as the caller.
  std::optional<RunUser> user;
};

// Starts the process in a new session (its pid is also its process group id) with stdin from
// /dev/null, a cleared signal mask, default signal dispositions and no file descriptor but 0-2.
// Returns its pid once execve succeeded; the caller must reap it with waitpid(). On failure no
// child is left behind.
absl::StatusOr<pid_t> SpawnProcess(const SpawnRequest& request);

// `strings` as execve's argv or envp: pointers into them, then a null. Valid while `strings` is
// unchanged.
std::vector<char*> CStringArray(const std::vector<std::string>& strings);

// Finds the file execve() should run for `command`, like execvp(): a command with a '/' is taken
// as a path (relative to `working_dir`); otherwise each directory of `search_path`
// (colon-separated, an empty entry meaning `working_dir`) is tried in order. Returns an absolute
// or working-dir-relative path, or INVALID_ARGUMENT "command not found: <command>" /
// "cannot execute <path>: Permission denied".
absl::StatusOr<std::string> ResolveCommand(const std::string& command,
                                           const std::string& search_path,
                                           const std::string& working_dir);

// The PATH entry of `env` ("NAME=VALUE" entries), or a default search path when it has none.
std::string SearchPathOf(const std::vector<std::string>& env);

// The agent's environment `base` ("NAME=VALUE" entries) overlaid with `overlay`: variables of
// `overlay` replace those of the same name and the others are appended, in name order.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base,
                                          const std::map<std::string, std::string>& overlay);

// This process's environment as "NAME=VALUE" entries.
std::vector<std::string> CurrentEnvironment();

// The PATH a replica gets when the agent's own environment has none to pass on.
inline constexpr char kDefaultReplicaPath[] =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The entries of `env` whose names are in `names`, in `env`'s order, plus kDefaultReplicaPath
// when that leaves no PATH: what a replica inherits from the agent (--pass-env). Nothing else of
// the agent's environment (its credentials, its config) reaches a job.
std::vector<std::string> PassedEnvironment(const std::vector<std::string>& env,
                                           const std::vector<std::string>& names);

}  // namespace trainctl::agent
