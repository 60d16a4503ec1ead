#include "agents/shim_spawn.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/pidfd.h"
#include "agents/shim/shim_protocol.h"
#include "agents/spawn.h"
#include "agents/unique_fd.h"

namespace trainctl::agent {
namespace {

// The fds the shim gets besides 0-2 (shim_protocol.h).
constexpr int kLockFd = 3;
constexpr int kReadyFd = 4;
constexpr int kFirstFreeFd = 5;

// A close-on-exec copy of `fd` numbered at least kFirstFreeFd, so that the dup2() onto 0..4 in
// the child never finds a source fd already in place (where it would keep its close-on-exec flag)
// or overwritten by an earlier dup2.
int HighCopy(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, kFirstFreeFd); }

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// The shim's argv for `request`; the fds it names are the ones SpawnShim sets up.
std::vector<std::string> ShimArgv(const ShimRequest& request) {
  std::vector<std::string> argv = {"trainctl-shim", "--run-dir", request.run_dir, "--exec",
                                   request.exec_path};
  if (!request.working_dir.empty()) {
    argv.insert(argv.end(), {"--cwd", request.working_dir});
  }
  if (request.user) {
    argv.insert(argv.end(), {"--uid", std::to_string(request.user->uid), "--gid",
                             std::to_string(request.user->gid)});
    if (!request.user->groups.empty()) {
      argv.insert(argv.end(), {"--groups", absl::StrJoin(request.user->groups, ",")});
    }
  }
  for (const std::string& procs : request.cgroup_join_paths) {
    argv.insert(argv.end(), {"--cgroup", procs});
  }
  if (!request.memory_events.empty()) {
    argv.insert(argv.end(), {"--memory-events", request.memory_events});
  }
  if (request.max_log_bytes > 0 && !request.log_path.empty()) {
    argv.insert(argv.end(), {"--log-file", request.log_path, "--max-log-bytes",
                             std::to_string(request.max_log_bytes)});
  }
  if (request.lock_fd >= 0) argv.insert(argv.end(), {"--lock-fd", std::to_string(kLockFd)});
  if (!request.private_tmp.empty()) argv.insert(argv.end(), {"--private-tmp", request.private_tmp});
  argv.insert(argv.end(), {"--ready-fd", std::to_string(kReadyFd), "--"});
  argv.insert(argv.end(), request.argv.begin(), request.argv.end());
  return argv;
}

}  // namespace

std::string DefaultShimPath() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir.resize(dir.rfind('/') + 1);
    std::string path = dir + "trainctl-shim";
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "trainctl-shim";
}

absl::StatusOr<SpawnedShim> SpawnShim(const ShimRequest& request) {
  const std::vector<std::string> args = ShimArgv(request);
  std::vector<char*> argv = CStringArray(args);
  std::vector<char*> envp = CStringArray(request.env);

  UniqueFd null_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null_fd.get() < 0) return Errno("open /dev/null");
  UniqueFd null_high(HighCopy(null_fd.get()));
  UniqueFd log(HighCopy(request.log_fd));
  if (null_high.get() < 0 || log.get() < 0) return Errno("dup");
  UniqueFd lock(request.lock_fd >= 0 ? HighCopy(request.lock_fd) : -1);
  if (request.lock_fd >= 0 && lock.get() < 0) return Errno("dup");
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) return Errno("pipe");
  UniqueFd ready_read(pipe_fds[0]);
  UniqueFd ready_write_low(pipe_fds[1]);
  UniqueFd ready_write(HighCopy(ready_write_low.get()));
  if (ready_write.get() < 0) return Errno("dup");
  // The shim's end blocks: it writes one short line.
  fcntl(ready_write.get(), F_SETFL, 0);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, null_high.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, log.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, log.get(), 2);
  if (lock.get() >= 0) posix_spawn_file_actions_adddup2(&actions, lock.get(), kLockFd);
  posix_spawn_file_actions_adddup2(&actions, ready_write.get(), kReadyFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, kFirstFreeFd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The shim starts with the agent's forward signal blocked: a stop sent before the shim has made
  // its signalfd stays pending for it, instead of killing it by the signal's default action.
  sigset_t forward, all;
  sigemptyset(&forward);
  sigaddset(&forward, shim::ShimForwardSignal());
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &forward);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int error =
      posix_spawn(&pid, request.shim_path.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (error != 0) {
    return absl::InternalError(
        absl::StrCat("cannot start ", request.shim_path, ": ", std::strerror(error)));
  }
  // Our unreaped child: its pid cannot be reused before we wait for it.
  int pidfd = PidfdOpen(pid);
  if (pidfd < 0) {
    absl::Status s = Errno("pidfd_open");
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return s;
  }
  SpawnedShim out;
  out.pid = pid;
  out.pidfd = pidfd;
  out.ready_fd = ready_read.release();
  return out;
}

}  // namespace trainctl::agent
