// trainctl-shim: the supervisor of one replica process. The agent starts one per replica; it
// forks and execs the replica, passes the agent's signals on to the replica's process group,
// reaps the replica and writes down how it ended. The agent may die and come back meanwhile: the
// replica keeps its parent, and the outcome waits in the run dir. The protocol (command line,
// files, ready line, signals) is documented in shim_protocol.h.
//
// A node runs hundreds of these, so the shim stays a few hundred KiB: one thread, statically
// linked, C library calls only, no heap, no stdio, no exceptions. Its memory is its stack, a few
// fixed buffers and the pages of code it touches.
//
// The order of events:
//   1. parse the arguments; setsid(); write shim.pid
//   2. block the signals it handles and open a signalfd for them, so that none is lost before the
//      replica exists; SIGPIPE is ignored (the agent may close the ready pipe's read end)
//   3. fork; the child makes only async-signal-safe calls before exec and reports a failure
//      through a close-on-exec pipe, whose EOF without data means execve succeeded
//   4. write status "running" and the ready line
//   5. read the signalfd (waking once a second to cap the log, with --max-log-bytes): forward
//      signals; on SIGCHLD see whether the replica ended, and if so,
//      SIGKILL what is left of its group while the leader is still a zombie (its pid, and so the
//      group id, cannot have been reused yet), then reap it
//   6. cap the log a last time, write the final status and exit 0
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>  // rename() only; no streams
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agents/shim/log_cap.h"
#include "agents/shim/private_tmp.h"
#include "agents/shim/shim_protocol.h"
#include "agents/shim/shim_util.h"

extern char** environ;

namespace trainctl::shim {
namespace {

constexpr char kUsage[] =
    "usage: trainctl-shim --run-dir DIR --exec PATH [--cwd DIR]\n"
    "           [--uid N --gid N [--groups N,N,...]] [--cgroup JOIN_FILE]...\n"
    "           [--memory-events FILE] [--log-file PATH --max-log-bytes N] [--lock-fd N]\n"
    "           [--private-tmp JOB_DIR] [--ready-fd N] -- ARGV0 [ARGS...]\n";

// More than the hierarchies a host can mount.
constexpr int kMaxCgroups = 32;
// close_range(2)'s flag (linux/close_range.h), called through syscall(2): not every C library
// the shim builds with wraps it.
constexpr unsigned kCloseRangeCloexec = 1U << 2;

// What the command line asks for. Strings point into argv.
struct Config {
  const char* run_dir = nullptr;
  const char* exec = nullptr;
  const char* cwd = nullptr;
  bool has_uid = false;
  bool has_gid = false;
  bool has_groups = false;
  uid_t uid = 0;
  gid_t gid = 0;
  size_t group_count = 0;  // in g_groups
  const char* cgroups[kMaxCgroups] = {};
  int cgroup_count = 0;
  const char* memory_events = nullptr;
  const char* log_file = nullptr;
  uint64_t max_log_bytes = 0;
  int lock_fd = -1;
  int ready_fd = -1;
  // --private-tmp: the job's directory's paths (private_tmp.h).
  PrivateTmp private_tmp;
  char** argv = nullptr;  // after "--", nullptr-terminated
};

// The replica's supplementary groups. Static, so that it costs only the pages a long list
// touches.
gid_t g_groups[NGROUPS_MAX];

// A child's report of why it could not exec, sent through the exec pipe. One write of 12 bytes,
// so it arrives whole.
struct ChildFailure {
  int stage;  // index into kChildStages
  int error;
  int step;  // kMount: the PrivateTmpStep that failed
};
enum ChildStage { kStdio, kUser, kChdir, kExec, kMount };
const char* const kChildStages[] = {kStageStdio, kStageUser, kStageChdir, kStageExec, kStageMount};

// Writes the run dir's file `name`, saying so on stderr when that fails.
bool WriteRunFile(const Config& config, const char* name, const char* text, size_t size) {
  if (ReplaceFile(config.run_dir, name, text, size)) return true;
  int error = errno;
  Message message;
  message.Add("cannot write ")
      .Add(config.run_dir)
      .Add("/")
      .Add(name)
      .Add(": ")
      .Add(ErrorText(error));
  Say(message.c_str());
  errno = error;
  return false;
}

// The status of a launch that failed at `stage`; `error_text` is the last line, free-form.
bool WriteFailedStatus(const Config& config, const char* stage, int error, int64_t start_ms,
                       const char* error_text) {
  Text<PATH_MAX + 512> status;
  status.Line("state", kStateFailed)
      .Line("failed_stage", stage)
      .Line("failed_errno", error)
      .Line("start_time_ms", start_ms)
      .Line("end_time_ms", NowMs())
      .Line("error", error_text);
  return WriteRunFile(config, kStatusFile, status.c_str(), status.size());
}

void WriteReadyLine(int ready_fd, const char* line, size_t size) {
  if (ready_fd >= 0) WriteAll(ready_fd, line, size);  // EPIPE: the agent is gone; fine
}

// The shim's own failure: says `message` on stderr and, where it can, in the status file and
// the ready line (stage "shim"). Returns the shim's exit status.
int FailShim(const Config& config, const char* message, int error, int64_t start_ms) {
  Say(message);
  if (config.run_dir != nullptr) {
    WriteFailedStatus(config, kStageShim, error, start_ms, message);
  }
  Text<64> ready;
  ready.Add(kReadyFailed).Add(" ").Add(kStageShim).Add(" ").AddNumber(error).Add("\n");
  WriteReadyLine(config.ready_fd, ready.c_str(), ready.size());
  return kShimFailedExitCode;
}

// An fd option's value: an open fd above stdio.
bool ParseFd(const char* text, int* fd) {
  uint64_t value;
  if (!ParseNumber(text, INT_MAX, &value) || value < 3) return false;
  *fd = static_cast<int>(value);
  return fcntl(*fd, F_GETFD) >= 0;
}

bool ParseGroups(const char* text, size_t* count) {
  *count = 0;
  while (*text != '\0') {
    uint64_t gid;
    const char* end;
    if (*count == NGROUPS_MAX || !ParseNumber(text, UINT32_MAX - 1, &gid, &end)) return false;
    if (*end == ',' && end[1] != '\0') {
      text = end + 1;
    } else if (*end == '\0') {
      text = end;
    } else {
      return false;
    }
    g_groups[(*count)++] = static_cast<gid_t>(gid);
  }
  return true;
}

// Fills `config` from argv; false with `error` describing the problem. Options parsed before the
// problem (--run-dir, --ready-fd) stay set, so the failure can be reported there.
bool ParseArgs(int argc, char** argv, Config* config, Message* error) {
  int i = 1;
  for (; i < argc; ++i) {
    const char* flag = argv[i];
    if (strcmp(flag, "--") == 0) break;
    if (i + 1 >= argc) {
      error->Add(flag).Add(" needs a value");
      return false;
    }
    const char* value = argv[++i];
    uint64_t number = 0;
    bool ok = true;
    if (strcmp(flag, "--run-dir") == 0) {
      config->run_dir = value;
    } else if (strcmp(flag, "--exec") == 0) {
      config->exec = value;
    } else if (strcmp(flag, "--cwd") == 0) {
      config->cwd = value;
    } else if (strcmp(flag, "--uid") == 0) {
      ok = config->has_uid = ParseNumber(value, UINT32_MAX - 1, &number);
      config->uid = static_cast<uid_t>(number);
    } else if (strcmp(flag, "--gid") == 0) {
      ok = config->has_gid = ParseNumber(value, UINT32_MAX - 1, &number);
      config->gid = static_cast<gid_t>(number);
    } else if (strcmp(flag, "--groups") == 0) {
      ok = config->has_groups = ParseGroups(value, &config->group_count);
    } else if (strcmp(flag, "--cgroup") == 0) {
      ok = config->cgroup_count < kMaxCgroups;
      if (ok) config->cgroups[config->cgroup_count++] = value;
    } else if (strcmp(flag, "--memory-events") == 0) {
      config->memory_events = value;
    } else if (strcmp(flag, "--log-file") == 0) {
      config->log_file = value;
    } else if (strcmp(flag, "--max-log-bytes") == 0) {
      ok = ParseNumber(value, INT64_MAX, &config->max_log_bytes);
    } else if (strcmp(flag, "--lock-fd") == 0) {
      ok = ParseFd(value, &config->lock_fd);
    } else if (strcmp(flag, "--private-tmp") == 0) {
      ok = config->private_tmp.Init(value);
    } else if (strcmp(flag, "--ready-fd") == 0) {
      ok = ParseFd(value, &config->ready_fd);
      if (!ok) config->ready_fd = -1;
    } else {
      error->Add("unknown flag ").Add(flag);
      return false;
    }
    if (!ok) {
      error->Add("bad value for ").Add(flag).Add(": \"").Add(value).Add("\"");
      return false;
    }
  }
  if (config->run_dir == nullptr || config->exec == nullptr) {
    error->Add("--run-dir and --exec are required");
    return false;
  }
  if (i + 1 >= argc) {
    error->Add("no replica command after --");
    return false;
  }
  if (config->has_uid != config->has_gid || (config->has_groups && !config->has_uid)) {
    error->Add("--uid and --gid go together, and --groups needs them");
    return false;
  }
  config->argv = argv + i + 1;
  return true;
}

// Ensures fds 0-2 are open (on /dev/null where they were not), so that no fd the shim opens
// takes their place.
void OpenStdio() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0 && null_fd != fd) close(null_fd);  // cannot happen: the lowest fd is taken
  }
}

bool SetCloseOnExec(int fd) {
  int flags = fcntl(fd, F_GETFD);
  return flags >= 0 && fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0;
}

// The signals the shim handles, all blocked and read from its signalfd.
const int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  sigaddset(&set, ShimForwardSignal());
  return set;
}

// Runs in the forked child and becomes the replica. Async-signal-safe calls only. Never returns.
[[noreturn]] void ExecReplica(const Config& config, int report_fd) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);  // fails for KILL/STOP
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  setsid();
  ChildFailure failure{kStdio, 0, 0};
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0 && (null_fd == 0 || dup2(null_fd, 0) == 0)) {
    if (null_fd != 0) close(null_fd);
    // While still the shim's user, who owns the cgroups. "0" names the writer.
    for (int i = 0; i < config.cgroup_count; ++i) {
      int fd = open(config.cgroups[i], O_WRONLY | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t ignored = write(fd, "0", 1);
      (void)ignored;
      close(fd);
    }
    // Mounts need root too (private_tmp.h).
    failure.stage = kMount;
    if (!config.private_tmp.set || EnterPrivateTmp(config.private_tmp, &failure.step)) {
      // Groups first, then gid, then uid: after setuid the others are no longer allowed.
      failure.stage = kUser;
      if (!config.has_uid || (setgroups(config.group_count, g_groups) == 0 &&
                              setgid(config.gid) == 0 && setuid(config.uid) == 0)) {
        // As the replica's user: it must be able to enter its own directory.
        failure.stage = kChdir;
        if (config.cwd == nullptr || chdir(config.cwd) == 0) {
          // Whatever else the shim holds ends at exec; the exec pipe too, which tells the shim
          // that exec succeeded. Best effort: kernels before 5.11 lack the flag.
          syscall(SYS_close_range, 3, ~0U, kCloseRangeCloexec);
          failure.stage = kExec;
          execve(config.exec, config.argv, environ);
        }
      }
    }
  }
  failure.error = errno;
  ssize_t ignored = write(report_fd, &failure, sizeof(failure));
  (void)ignored;
  _exit(127);
}

// The line the child's failure gets in the status file and on stderr.
void DescribeFailure(const Config& config, const ChildFailure& failure, Message* text) {
  switch (failure.stage) {
    case kStdio:
      text->Add("cannot open /dev/null as stdin");
      break;
    case kUser:
      text->Add("cannot switch to uid ").AddNumber(config.uid).Add(" gid ").AddNumber(config.gid);
      break;
    case kChdir:
      text->Add("cannot enter working directory ").Add(config.cwd);
      break;
    case kMount:
      DescribePrivateTmpStep(config.private_tmp, failure.step, text);
      break;
    default:
      text->Add("cannot execute ").Add(config.exec);
      break;
  }
  text->Add(": ").Add(ErrorText(failure.error));
}

// True once the replica ended; it is left a zombie, to be reaped after its group was killed.
bool ReplicaEnded(pid_t child) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  while (waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != EINTR) return true;  // cannot happen for our own child; reaping will say
  }
  return info.si_pid == child;
}

// Passes signals on to the replica's group until the replica ends, capping the log meanwhile.
// Returns its wait status.
int Supervise(pid_t child, int signal_fd, LogCapper* log_cap) {
  const int forward_signal = ShimForwardSignal();
  bool ended = false;
  int64_t next_check_ms = MonotonicMs() + kLogCapCheckMs;
  while (!ended) {
    if (log_cap->active()) {
      const int64_t now_ms = MonotonicMs();
      if (now_ms >= next_check_ms) {
        log_cap->Check();
        next_check_ms = now_ms + kLogCapCheckMs;
      }
      struct pollfd readable = {signal_fd, POLLIN, 0};
      const int ready = poll(&readable, 1, static_cast<int>(next_check_ms - now_ms));
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    }
    struct signalfd_siginfo infos[4];
    ssize_t n = read(signal_fd, infos, sizeof(infos));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Cannot happen; without the signalfd, at least wait for the end.
      siginfo_t info;
      while (waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT) != 0 &&
             errno == EINTR) {
      }
      break;
    }
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(infos[0]) && !ended; ++i) {
      const int sig = static_cast<int>(infos[i].ssi_signo);
      if (sig == SIGCHLD) {
        ended = ReplicaEnded(child);
      } else if (sig == forward_signal) {
        const int wanted = infos[i].ssi_int;
        if (infos[i].ssi_code == SI_QUEUE && wanted >= 1 && wanted < NSIG) kill(-child, wanted);
      } else {
        kill(-child, sig);
      }
    }
  }
  // No straggler of the group outlives its leader. ESRCH: there was none.
  kill(-child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Whether the "oom_kill N" line of memory.events / memory.oom_control says N > 0.
bool SawOomKill(const char* memory_events) {
  int fd = open(memory_events, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[4096];
  size_t size = ReadAll(fd, text, sizeof(text) - 1);
  close(fd);
  text[size] = '\0';
  static constexpr char kKey[] = "oom_kill ";
  for (const char* line = text; *line != '\0';) {
    if (strncmp(line, kKey, sizeof(kKey) - 1) == 0) {
      uint64_t kills;
      const char* end;
      return ParseNumber(line + sizeof(kKey) - 1, UINT64_MAX, &kills, &end) && kills > 0;
    }
    const char* newline = strchr(line, '\n');
    if (newline == nullptr) break;
    line = newline + 1;
  }
  return false;
}

int Main(int argc, char** argv) {
  OpenStdio();
  signal(SIGPIPE, SIG_IGN);
  Config config;
  {
    Message error;
    if (!ParseArgs(argc, argv, &config, &error)) {
      const int exit_code = FailShim(config, error.c_str(), EINVAL, NowMs());
      WriteAll(2, kUsage, sizeof(kUsage) - 1);
      return exit_code;
    }
  }
  if (config.lock_fd >= 0) SetCloseOnExec(config.lock_fd);
  if (config.ready_fd >= 0) SetCloseOnExec(config.ready_fd);
  // EPERM: the agent made the shim a session leader already.
  setsid();

  {
    Text<128> pid_file;
    pid_file.Line("pid", getpid())
        .Line("start_ticks", static_cast<long long>(StartTicksOf(getpid())));
    if (!WriteRunFile(config, kShimPidFile, pid_file.c_str(), pid_file.size())) {
      int error = errno;
      Message message;
      message.Add("cannot write ")
          .Add(config.run_dir)
          .Add("/")
          .Add(kShimPidFile)
          .Add(": ")
          .Add(ErrorText(error));
      return FailShim(config, message.c_str(), error, NowMs());
    }
  }

  sigset_t handled = HandledSignals();
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  const int signal_fd = signalfd(-1, &handled, SFD_CLOEXEC);
  int exec_pipe[2];
  if (signal_fd < 0 || pipe2(exec_pipe, O_CLOEXEC) != 0) {
    int error = errno;
    Message message;
    message.Add(signal_fd < 0 ? "signalfd: " : "pipe: ").Add(ErrorText(error));
    return FailShim(config, message.c_str(), error, NowMs());
  }

  const int64_t start_ms = NowMs();
  const pid_t child = fork();
  if (child < 0) {
    int error = errno;
    Message message;
    message.Add("fork: ").Add(ErrorText(error));
    return FailShim(config, message.c_str(), error, start_ms);
  }
  if (child == 0) ExecReplica(config, exec_pipe[1]);
  close(exec_pipe[1]);

  ChildFailure failure{kExec, 0, 0};
  const size_t got = ReadAll(exec_pipe[0], &failure, sizeof(failure));
  close(exec_pipe[0]);
  if (got != 0) {
    Message text;
    const char* stage;
    if (got == sizeof(failure) && failure.stage >= kStdio && failure.stage <= kMount) {
      stage = kChildStages[failure.stage];
      DescribeFailure(config, failure, &text);
    } else {  // cannot happen: the report is one small write
      stage = kStageShim;
      failure.error = EPROTO;
      text.Add("the replica's child failed before exec and its report was cut short");
    }
    Say(text.c_str());
    WriteFailedStatus(config, stage, failure.error, start_ms, text.c_str());
    Text<64> ready;
    ready.Add(kReadyFailed).Add(" ").Add(stage).Add(" ").AddNumber(failure.error).Add("\n");
    WriteReadyLine(config.ready_fd, ready.c_str(), ready.size());
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    return 0;
  }

  // execve succeeded: the replica runs (or ran: a zombie still has its /proc/<pid>/stat).
  const long long start_ticks = static_cast<long long>(StartTicksOf(child));
  {
    Text<256> status;
    status.Line("state", kStateRunning)
        .Line("pid", child)
        .Line("start_ticks", start_ticks)
        .Line("start_time_ms", start_ms);
    WriteRunFile(config, kStatusFile, status.c_str(), status.size());
    Text<128> ready;
    ready.Add(kReadyStarted).Add(" ").AddNumber(child).Add(" ").AddNumber(start_ticks);
    ready.Add(" ").AddNumber(start_ms).Add("\n");
    WriteReadyLine(config.ready_fd, ready.c_str(), ready.size());
    if (config.ready_fd >= 0) close(config.ready_fd);
  }

  LogCapper log_cap;
  if (config.log_file != nullptr && config.max_log_bytes > 0) {
    log_cap.Open(config.log_file, static_cast<int64_t>(config.max_log_bytes));
  }
  const int wait_status = Supervise(child, signal_fd, &log_cap);
  log_cap.Check();
  const int64_t end_ms = NowMs();
  const bool oom_killed = config.memory_events != nullptr && SawOomKill(config.memory_events);
  Text<512> status;
  status.Line("state", kStateExited)
      .Line("pid", child)
      .Line("start_ticks", start_ticks)
      .Line("start_time_ms", start_ms)
      .Line("end_time_ms", end_ms);
  if (WIFSIGNALED(wait_status)) {
    status.Line("signal", WTERMSIG(wait_status));
  } else {
    status.Line("exit_code", WEXITSTATUS(wait_status));
  }
  status.Line("core_dumped", WIFSIGNALED(wait_status) && WCOREDUMP(wait_status) ? 1 : 0)
      .Line("oom_killed", oom_killed ? 1 : 0);
  return WriteRunFile(config, kStatusFile, status.c_str(), status.size()) ? 0 : kShimFailedExitCode;
}

}  // namespace
}  // namespace trainctl::shim

int main(int argc, char** argv) { return trainctl::shim::Main(argc, argv); }
