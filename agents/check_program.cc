#include "agents/check_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agents/run_files.h"
#include "agents/spawn.h"

namespace trainctl::agent {
namespace {

constexpr size_t kMaxLine = 512;
// How often a running program's status is looked at; also the longest a timeout overshoots.
constexpr absl::Duration kTick = absl::Milliseconds(10);

// Keeps the first line of everything fed to it.
class FirstLine {
 public:
  void Feed(const char* data, size_t size) {
    if (done_) return;
    for (size_t i = 0; i < size; ++i) {
      if (data[i] == '\n' || line_.size() >= kMaxLine) {
        done_ = true;
        return;
      }
      line_.push_back(data[i]);
    }
  }
  std::string Take() {
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    return SanitizeUtf8(line_);
  }

 private:
  std::string line_;
  bool done_ = false;
};

// Reads whatever the non-blocking `fd` holds. Returns false once every writer has closed it.
bool Drain(int fd, FirstLine& line) {
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      line.Feed(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

void Reap(pid_t pid, int* status) {
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

ProgramOutcome RunProgram(const ProgramRequest& request) {
  ProgramOutcome outcome;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    outcome.error = absl::StrCat("pipe: ", std::strerror(errno));
    return outcome;
  }
  const int read_fd = fds[0];
  fcntl(read_fd, F_SETFL, fcntl(read_fd, F_GETFL) | O_NONBLOCK);
  SpawnRequest spawn;
  spawn.argv = {request.path};
  spawn.env = MergeEnvironment(CurrentEnvironment(), request.env);
  spawn.working_dir = request.working_dir;
  spawn.output_fd = fds[1];
  absl::StatusOr<pid_t> spawned = SpawnProcess(spawn);
  close(fds[1]);  // The child holds its own copies; EOF comes when they are all closed.
  if (!spawned.ok()) {
    close(read_fd);
    outcome.error = std::string(spawned.status().message());
    return outcome;
  }
  const pid_t pid = *spawned;
  const absl::Time deadline = absl::Now() + request.timeout;
  FirstLine line;
  bool open = true;
  int status = 0;
  while (true) {
    // Looked at without reaping: while the leader is a zombie its pid, and so the group id,
    // cannot be reused, so the group can be killed safely.
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      kill(-pid, SIGKILL);  // Whatever it left behind in its group.
      Reap(pid, &status);
      outcome.end =
          WIFEXITED(status) ? ProgramOutcome::End::kExited : ProgramOutcome::End::kSignaled;
      break;
    }
    const bool timed_out = absl::Now() >= deadline;
    if (timed_out || (request.cancelled && request.cancelled())) {
      kill(-pid, SIGKILL);
      Reap(pid, &status);
      outcome.end = timed_out ? ProgramOutcome::End::kTimedOut : ProgramOutcome::End::kCancelled;
      break;
    }
    pollfd p{open ? read_fd : -1, POLLIN, 0};
    const absl::Duration wait = std::min(kTick, deadline - absl::Now());
    poll(&p, 1, static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(wait))));
    if (open) open = Drain(read_fd, line);
  }
  if (open) Drain(read_fd, line);
  close(read_fd);
  if (outcome.end == ProgramOutcome::End::kExited) outcome.exit_code = WEXITSTATUS(status);
  if (outcome.end == ProgramOutcome::End::kSignaled) outcome.signal = WTERMSIG(status);
  outcome.first_line = line.Take();
  return outcome;
}

CheckResult ProgramCheckResult(const std::string& item, const ProgramRequest& request,
                               const ProgramOutcome& outcome) {
  CheckResult result;
  result.item = item;
  result.threshold = "exit status 0";
  std::string fallback;
  switch (outcome.end) {
    case ProgramOutcome::End::kExited:
      result.passed = outcome.exit_code == 0;
      result.measured = absl::StrCat("exit status ", outcome.exit_code);
      fallback = absl::StrCat(request.path, " exited with status ", outcome.exit_code);
      break;
    case ProgramOutcome::End::kSignaled:
      result.measured = absl::StrCat("killed by signal ", outcome.signal);
      fallback = absl::StrCat(request.path, " was killed by signal ", outcome.signal, " (",
                              strsignal(outcome.signal), ")");
      break;
    case ProgramOutcome::End::kTimedOut:
      result.measured = "timed out";
      result.message = absl::StrCat("timed out after ", absl::FormatDuration(request.timeout));
      return result;
    case ProgramOutcome::End::kCancelled:
      result.measured = "cancelled";
      result.message = "cancelled: the agent is stopping";
      return result;
    case ProgramOutcome::End::kNotStarted:
      result.measured = "not started";
      result.message = SanitizeUtf8(outcome.error);
      return result;
  }
  result.message = outcome.first_line.empty() ? fallback : outcome.first_line;
  return result;
}

}  // namespace trainctl::agent
