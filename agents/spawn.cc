#include "agents/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/shim_status.h"
#include "agents/unique_fd.h"
#include "common/os_error.h"

extern char** environ;

namespace trainctl::agent {
namespace {

// What a child that could not exec writes to the status pipe.
struct ChildFailure {
  enum Stage : int { kStdio = 1, kChdir = 2, kExec = 3, kUser = 4 };
  int stage;
  int error;
};

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir == ".") return name;
  if (dir.back() == '/') return dir + name;
  return absl::StrCat(dir, "/", name);
}

// Moves `fd` to a number >= 3, so that the child's dup2() onto 0..2 neither clobbers it nor
// (for an fd already there) leaves it close-on-exec. Closes `fd`; -1 on failure.
int AboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

// Moves the calling process into each cgroup whose join file (RunCgroups::Created) is listed
// in the nullptr-terminated `join_paths`, ignoring failures. Async-signal-safe.
void JoinCgroups(char* const* join_paths) {
  for (; *join_paths != nullptr; ++join_paths) {
    int fd = open(*join_paths, O_WRONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t ignored = write(fd, "0", 1);  // "0" names the writer.
    (void)ignored;
    close(fd);
  }
}

// The user a child becomes, as plain values the child can use without allocating.
struct ChildUser {
  bool set = false;
  uid_t uid = 0;
  gid_t gid = 0;
  const gid_t* groups = nullptr;
  size_t group_count = 0;
};

// Becomes `user` for good: groups first, then gid, then uid (after setuid the others are no longer
// allowed). Runs in the forked child, which has one thread, so glibc's wrappers change just it.
// Async-signal-safe. False with errno set on failure.
bool BecomeUser(const ChildUser& user) {
  return setgroups(user.group_count, user.groups) == 0 && setgid(user.gid) == 0 &&
         setuid(user.uid) == 0;
}

// Runs in the forked child: async-signal-safe calls only. Never returns.
[[noreturn]] void ExecChild(const char* path, char* const* argv, char* const* envp,
                            const char* working_dir, char* const* cgroup_procs,
                            const ChildUser& user, int null_fd, int output_fd, int status_fd) {
  // First, while still root: the cgroups are root's.
  JoinCgroups(cgroup_procs);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);  // fails for KILL/STOP
  setsid();
  ChildFailure failure{ChildFailure::kStdio, 0};
  if (dup2(null_fd, 0) >= 0 && dup2(output_fd, 1) >= 0 && dup2(output_fd, 2) >= 0) {
    // Whatever else the agent inherited or opened ends at exec; the status pipe too, which
    // tells the parent that exec succeeded. Best effort: kernels before 5.11 lack the flag.
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    failure.stage = ChildFailure::kUser;
    if (!user.set || BecomeUser(user)) {
      // As the user: it must be able to enter its own directory.
      failure.stage = ChildFailure::kChdir;
      if (chdir(working_dir) == 0) {
        execve(path, argv, envp);
        failure.stage = ChildFailure::kExec;
      }
    }
  }
  failure.error = errno;
  ssize_t ignored = write(status_fd, &failure, sizeof(failure));
  (void)ignored;
  _exit(127);
}

}  // namespace

std::vector<char*> CStringArray(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

absl::StatusOr<std::string> ResolveCommand(const std::string& command,
                                           const std::string& search_path,
                                           const std::string& working_dir) {
  if (command.empty()) return absl::InvalidArgumentError("empty command");
  auto relative_to_working_dir = [&](const std::string& path) {
    return path[0] == '/' ? path : JoinPath(working_dir, path);
  };
  if (command.find('/') != std::string::npos) {
    std::string path = relative_to_working_dir(command);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        return absl::InvalidArgumentError(absl::StrCat("command not found: ", command));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("cannot execute ", command, ": ", ErrnoText(errno)));
    }
    if (S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot execute ", command, ": ", ErrnoText(EISDIR)));
    }
    if (access(path.c_str(), X_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot execute ", command, ": ", ErrnoText(errno)));
    }
    return path;
  }
  std::string not_executable;
  for (absl::string_view dir : absl::StrSplit(search_path, ':')) {
    std::string base = dir.empty() ? working_dir : relative_to_working_dir(std::string(dir));
    std::string candidate = JoinPath(base, command);
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (not_executable.empty()) not_executable = candidate;
  }
  if (!not_executable.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot execute ", not_executable, ": ", ErrnoText(EACCES)));
  }
  return absl::InvalidArgumentError(absl::StrCat("command not found: ", command));
}

std::string SearchPathOf(const std::vector<std::string>& env) {
  for (const std::string& entry : env) {
    if (absl::StartsWith(entry, "PATH=")) return entry.substr(5);
  }
  return "/usr/local/bin:/usr/bin:/bin";
}

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base,
                                          const std::map<std::string, std::string>& overlay) {
  std::vector<std::string> out;
  out.reserve(base.size() + overlay.size());
  for (const std::string& entry : base) {
    std::string name = entry.substr(0, entry.find('='));
    if (overlay.count(name) == 0) out.push_back(entry);
  }
  for (const auto& [name, value] : overlay) out.push_back(absl::StrCat(name, "=", value));
  return out;
}

std::vector<std::string> PassedEnvironment(const std::vector<std::string>& env,
                                           const std::vector<std::string>& names) {
  std::vector<std::string> out;
  bool has_path = false;
  for (const std::string& entry : env) {
    const std::string name = entry.substr(0, entry.find('='));
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    has_path = has_path || name == "PATH";
    out.push_back(entry);
  }
  if (!has_path) out.push_back(kDefaultReplicaPath);
  return out;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

absl::StatusOr<pid_t> SpawnProcess(const SpawnRequest& request) {
  if (request.argv.empty()) return absl::InvalidArgumentError("empty command");
  std::string path;
  {
    absl::StatusOr<std::string> resolved =
        ResolveCommand(request.argv[0], SearchPathOf(request.env), request.working_dir);
    if (!resolved.ok()) return resolved.status();
    path = *std::move(resolved);
  }
  std::vector<char*> argv = CStringArray(request.argv);
  std::vector<char*> envp = CStringArray(request.env);
  std::vector<char*> cgroup_procs = CStringArray(request.cgroup_join_paths);
  ChildUser user;
  if (request.user) {
    user.set = true;
    user.uid = request.user->uid;
    user.gid = request.user->gid;
    user.groups = request.user->groups.data();
    user.group_count = request.user->groups.size();
  }

  UniqueFd null_fd(AboveStdio(open("/dev/null", O_RDONLY | O_CLOEXEC)));
  if (null_fd.get() < 0) {
    return absl::InternalError(absl::StrCat("cannot open /dev/null: ", ErrnoText(errno)));
  }
  UniqueFd output_fd(fcntl(request.output_fd, F_DUPFD_CLOEXEC, 3));
  if (output_fd.get() < 0) {
    return absl::InternalError(absl::StrCat("cannot duplicate the log fd: ", ErrnoText(errno)));
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", ErrnoText(errno)));
  }
  UniqueFd status_read(pipe_fds[0]);
  UniqueFd status_write(AboveStdio(pipe_fds[1]));
  if (status_write.get() < 0) {
    return absl::InternalError(absl::StrCat("pipe: ", ErrnoText(errno)));
  }

  pid_t pid = fork();
  if (pid < 0) return absl::UnavailableError(absl::StrCat("fork: ", ErrnoText(errno)));
  if (pid == 0) {
    ExecChild(path.c_str(), argv.data(), envp.data(), request.working_dir.c_str(),
              cgroup_procs.data(), user, null_fd.get(), output_fd.get(), status_write.get());
  }
  status_write.reset();

  ChildFailure failure{0, 0};
  size_t got = 0;
  while (got < sizeof(failure)) {
    ssize_t n =
        read(status_read.get(), reinterpret_cast<char*>(&failure) + got, sizeof(failure) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == 0) return pid;  // EOF: execve closed the pipe, the program runs.

  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (got < sizeof(failure)) {
    return absl::InternalError("the child failed before exec and its report was cut short");
  }
  switch (failure.stage) {
    case ChildFailure::kExec:
      if (IsUserExecError(failure.error)) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot execute ", request.argv[0], ": ", ErrnoText(failure.error)));
      }
      return absl::InternalError(
          absl::StrCat("cannot execute ", request.argv[0], ": ", ErrnoText(failure.error)));
    case ChildFailure::kChdir:
      return absl::InternalError(
          absl::StrCat("cannot enter working directory ", request.working_dir,
                       request.user ? absl::StrCat(" as user ", request.user->name) : "", ": ",
                       ErrnoText(failure.error)));
    case ChildFailure::kUser:
      return absl::InternalError(absl::StrCat("cannot switch to user ",
                                              request.user ? request.user->name : "?", ": ",
                                              ErrnoText(failure.error)));
    default:
      return absl::InternalError(
          absl::StrCat("cannot set up stdin/stdout/stderr: ", ErrnoText(failure.error)));
  }
}

}  // namespace trainctl::agent
