// RunTool (tool_run.h): posix_spawn, two pipes drained with poll, the timeout and the tick.
#include "agents/tool_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agents/spawn.h"
#include "agents/unique_fd.h"
#include "common/os_error.h"

namespace trainctl::agent {
namespace tool_run_internal {

constexpr size_t kStderrKept = 64 << 10;
// The longest a wait for output lasts before the tool's status, timeout and tick are looked at.
constexpr absl::Duration kPollSlice = absl::Milliseconds(50);

// A pipe's read end that appends what it reads to a string, within limits.
struct Reader {
  UniqueFd fd;
  std::string* out = nullptr;
  size_t max = 0;
  // Keep the tail (stderr) rather than the head (stdout).
  bool keep_tail = false;
  bool open = true;

  void Append(const char* data, size_t size) {
    if (keep_tail) {
      out->append(data, size);
      if (out->size() > max) out->erase(0, out->size() - max);
      return;
    }
    if (out->size() < max) out->append(data, std::min(size, max - out->size()));
  }
  // Reads what the non-blocking pipe holds; closes it at EOF.
  void Drain() {
    char buf[16384];
    while (open) {
      ssize_t n = read(fd.get(), buf, sizeof(buf));
      if (n > 0) {
        Append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      open = false;
      fd.reset();
    }
  }
};

void ReapTool(pid_t pid, int* status) {
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

// Starts the tool with `out_fd` and `err_fd` as its stdout and stderr. Sets `error` on failure.
pid_t SpawnTool(const ToolRequest& request, int out_fd, int err_fd, std::string* error) {
  if (request.argv.empty()) {
    *error = "empty command";
    return -1;
  }
  absl::StatusOr<std::string> path =
      ResolveCommand(request.argv[0], SearchPathOf(request.env),
                     request.working_dir.empty() ? "." : request.working_dir);
  if (!path.ok()) {
    *error = std::string(path.status().message());
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!request.working_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, request.working_dir.c_str());
  }
  std::vector<char*> argv = CStringArray(request.argv);
  std::vector<char*> envp = CStringArray(request.env);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, path->c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    *error = absl::StrCat("cannot run ", *path, ": ", ErrnoText(rc));
    return -1;
  }
  return pid;
}

// A pipe whose ends are both >= 3 (so that dup2 onto 0..2 in the child never clobbers one) and
// close-on-exec; the read end non-blocking.
bool MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  UniqueFd r(fds[0]);
  UniqueFd w(fds[1]);
  *read_end = UniqueFd(fcntl(r.get(), F_DUPFD_CLOEXEC, 3));
  *write_end = UniqueFd(fcntl(w.get(), F_DUPFD_CLOEXEC, 3));
  if (read_end->get() < 0 || write_end->get() < 0) return false;
  fcntl(read_end->get(), F_SETFL, fcntl(read_end->get(), F_GETFL) | O_NONBLOCK);
  return true;
}

}  // namespace tool_run_internal

std::string ToolOutcome::Describe(absl::Duration timeout) const {
  switch (end) {
    case End::kExited: {
      std::string line = LastLine(stderr_text);
      if (line.empty()) line = LastLine(stdout_text);
      return line.empty() ? absl::StrCat("exit status ", exit_code)
                          : absl::StrCat("exit status ", exit_code, ": ", line);
    }
    case End::kSignaled:
      return absl::StrCat("killed by signal ", signal);
    case End::kTimedOut:
      return absl::StrCat("timed out after ", absl::FormatDuration(timeout));
    case End::kNotStarted:
      return absl::StrCat("not started: ", error);
    case End::kCancelled:
      return "cancelled";
  }
  return "";
}

std::string LastLine(absl::string_view text) {
  text = absl::StripTrailingAsciiWhitespace(text);
  const size_t newline = text.rfind('\n');
  if (newline != absl::string_view::npos) text.remove_prefix(newline + 1);
  return std::string(absl::StripAsciiWhitespace(text));
}

ToolOutcome RunTool(const ToolRequest& request) {
  using tool_run_internal::Reader;
  ToolOutcome outcome;
  const absl::Time start = absl::Now();
  Reader out;
  Reader err;
  UniqueFd out_w;
  UniqueFd err_w;
  if (!tool_run_internal::MakePipe(&out.fd, &out_w) ||
      !tool_run_internal::MakePipe(&err.fd, &err_w)) {
    outcome.error = absl::StrCat("pipe: ", ErrnoText(errno));
    return outcome;
  }
  out.out = &outcome.stdout_text;
  out.max = request.max_stdout;
  err.out = &outcome.stderr_text;
  err.max = tool_run_internal::kStderrKept;
  err.keep_tail = true;
  const pid_t pid = tool_run_internal::SpawnTool(request, out_w.get(), err_w.get(), &outcome.error);
  out_w.reset();  // The child holds its own copies; EOF comes when they are all closed.
  err_w.reset();
  if (pid < 0) return outcome;

  const absl::Time deadline = start + request.timeout;
  absl::Time next_tick = start + request.tick_every;
  int status = 0;
  while (true) {
    // Looked at without reaping: while the leader is a zombie its pid, and so the group id,
    // cannot be reused, so the group can be killed safely.
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      kill(-pid, SIGKILL);  // Whatever it left behind in its group.
      tool_run_internal::ReapTool(pid, &status);
      outcome.end = WIFEXITED(status) ? ToolOutcome::End::kExited : ToolOutcome::End::kSignaled;
      break;
    }
    const absl::Time now = absl::Now();
    const bool cancelled = request.cancelled != nullptr && request.cancelled->load();
    if (now >= deadline || cancelled) {
      kill(-pid, SIGKILL);
      tool_run_internal::ReapTool(pid, &status);
      outcome.end = cancelled ? ToolOutcome::End::kCancelled : ToolOutcome::End::kTimedOut;
      break;
    }
    if (request.tick && now >= next_tick) {
      request.tick();
      next_tick = absl::Now() + request.tick_every;
    }
    pollfd fds[2] = {{out.open ? out.fd.get() : -1, POLLIN, 0},
                     {err.open ? err.fd.get() : -1, POLLIN, 0}};
    const absl::Duration wait =
        std::min({tool_run_internal::kPollSlice, deadline - now,
                  request.tick ? next_tick - now : tool_run_internal::kPollSlice,
                  // Both pipes at EOF: the tool is exiting; look again soon.
                  out.open || err.open ? tool_run_internal::kPollSlice : absl::Milliseconds(2)});
    poll(fds, 2, static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(wait))));
    out.Drain();
    err.Drain();
  }
  out.Drain();
  err.Drain();
  if (outcome.end == ToolOutcome::End::kExited) outcome.exit_code = WEXITSTATUS(status);
  if (outcome.end == ToolOutcome::End::kSignaled) outcome.signal = WTERMSIG(status);
  outcome.elapsed = absl::Now() - start;
  return outcome;
}

}  // namespace trainctl::agent
