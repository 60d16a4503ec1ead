// The monitor thread's half of ProcessLauncher: waiting on the shims (their pidfds and ready
// pipes, in one epoll set), SIGKILL deadlines, memory limits and signs of progress, and the exit
// reports. See launcher.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/launcher.h"
#include "agents/proc_stats.h"
#include "agents/progress_pattern.h"
#include "agents/progress_watch.h"
#include "agents/run_files.h"
#include "agents/shim_status.h"
#include "common/log_context.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

// Exited runs kept in memory (for idempotent Launch and exact ReadLog); older ones are forgotten.
constexpr size_t kMaxExitedRuns = 4096;
constexpr int kMaxEvents = 64;
// With Options::alive, the monitor passes at least this often.
constexpr absl::Duration kAlivePass = absl::Milliseconds(500);

std::string DescribeEnd(const ShimStatus& status) {
  if (status.signal != 0) {
    return absl::StrCat("was killed by signal ", status.signal, " (", strsignal(status.signal),
                        ")");
  }
  return absl::StrCat("exited with code ", status.exit_code);
}

}  // namespace

void ProcessLauncher::MonitorLoop() {
  absl::Time next_memory_check = absl::Now() + options_.memory_check_interval;
  absl::Time next_progress_check = absl::Now() + options_.progress_interval;
  epoll_event events[kMaxEvents];
  while (true) {
    if (options_.alive) options_.alive();
    const int timeout_ms = NextTimeoutMs(next_memory_check, next_progress_check);
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
    if (n < 0 && errno != EINTR) {
      spdlog::error("epoll_wait: {}", std::strerror(errno));
      absl::SleepFor(absl::Milliseconds(10));
    }
    std::vector<std::pair<std::string, bool>> ready;  // run id, ready pipe (else pidfd)
    {
      absl::MutexLock lock(&mu_);
      if (shutting_down_) return;
      for (int i = 0; i < n; ++i) {
        const uint64_t token = events[i].data.u64;
        if (token == 0) continue;
        auto it = tokens_.find(token);
        if (it != tokens_.end()) ready.emplace_back(it->second, (token & 1) != 0);
      }
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 != 0) continue;
      uint64_t count;
      ssize_t ignored = read(wake_fd_, &count, sizeof(count));
      (void)ignored;
    }
    // Ready lines first: a shim's start is reported before its exit.
    for (const auto& [run_id, is_ready] : ready) {
      if (is_ready) HandleReady(run_id);
    }
    for (const auto& [run_id, is_ready] : ready) {
      if (!is_ready) HandleShimExit(run_id);
    }
    CheckDeadlines();
    const absl::Time now = absl::Now();
    if (now >= next_memory_check) {
      EnforceMemoryLimits();
      next_memory_check = now + options_.memory_check_interval;
    }
    if (now >= next_progress_check) {
      if (options_.on_progress) ReportProgress();
      next_progress_check = now + options_.progress_interval;
    }
  }
}

int ProcessLauncher::NextTimeoutMs(absl::Time next_memory_check, absl::Time next_progress_check) {
  absl::Time wake = absl::InfiniteFuture();
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& run_id : live_) {
      const Run& run = runs_.at(run_id);
      if (run.state != RunState::kRunning) continue;
      if (run.stopping && !run.kill_sent) wake = std::min(wake, run.kill_at);
      if (run.memory_limit_bytes > 0) wake = std::min(wake, next_memory_check);
      if (options_.on_progress) wake = std::min(wake, next_progress_check);
    }
  }
  // The watchdog wants a pass at least every kAlivePass, idle or not.
  if (options_.alive) wake = std::min(wake, absl::Now() + kAlivePass);
  if (wake == absl::InfiniteFuture()) return -1;  // Idle: nothing to do until an event.
  const int64_t ms =
      absl::ToInt64Milliseconds(absl::Ceil(wake - absl::Now(), absl::Milliseconds(1)));
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60000));
}

void ProcessLauncher::CheckDeadlines() {
  absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  for (const std::string& run_id : live_) {
    Run& run = runs_.at(run_id);
    if (run.state != RunState::kRunning) continue;
    if (run.stopping && !run.kill_sent && run.kill_at <= now) {
      LogScope log_scope = LogScope::ForRun(run_id);
      spdlog::info("run {}: still running after its grace period; sending SIGKILL", run_id);
      SignalLocked(run_id, run, SIGKILL);
    }
  }
}

void ProcessLauncher::EnforceMemoryLimits() {
  {
    absl::MutexLock lock(&mu_);
    bool any = false;
    for (const std::string& run_id : live_) {
      const Run& run = runs_.at(run_id);
      any = any || (run.state == RunState::kRunning && run.memory_limit_bytes);
    }
    if (!any) return;
  }
  std::map<pid_t, int64_t> resident = ResidentBytesByProcessGroup();
  absl::MutexLock lock(&mu_);
  for (const std::string& run_id : live_) {
    Run& run = runs_.at(run_id);
    if (run.state != RunState::kRunning || run.memory_limit_bytes == 0 || run.oom_killed ||
        run.pid == 0) {
      continue;
    }
    auto it = resident.find(run.pid);
    if (it == resident.end() || it->second <= run.memory_limit_bytes) continue;
    LogScope log_scope = LogScope::ForRun(run_id);
    spdlog::warn("run {}: resident memory {} MiB exceeds its limit of {} MiB; killing it", run_id,
                 it->second >> 20, run.memory_limit_bytes >> 20);
    run.oom_killed = true;
    // Written before the kill: an agent that adopts the run after this one dies still reports
    // an OOM kill, not a SIGKILL from nowhere.
    const std::string marker = records_.RunDir(run_id) + "/" + kOomKillFile;
    if (int fd = open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644); fd >= 0) close(fd);
    SignalLocked(run_id, run, SIGKILL);
  }
}

void ProcessLauncher::ReportProgress() {
  std::vector<ProgressTarget> targets;
  // Runs with a progress pattern: (run, log, pattern, offset), scanned without mu_.
  struct StepScan {
    std::string run_id;
    std::string log_path;
    std::shared_ptr<const re2::RE2> pattern;
    int64_t offset = 0;
    std::optional<int64_t> step;
  };
  std::vector<StepScan> scans;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& run_id : live_) {
      const Run& run = runs_.at(run_id);
      if (run.state != RunState::kRunning) continue;
      targets.push_back({run_id, run.progress_file, run.checkpoint_dir, run.progress_ms});
      if (run.step_pattern) {
        scans.push_back({run_id, run.log_path, run.step_pattern, run.step_offset, std::nullopt});
      }
    }
  }
  if (targets.empty()) return;
  std::vector<trainctl::v1::ReplicaProgress> reports = CheckProgress(targets);
  for (StepScan& scan : scans) {
    scan.step = ScanForStep(scan.log_path, *scan.pattern, &scan.offset);
    if (!scan.step) continue;
    // A step the output shows is a sign of progress now; it wins over the progress file's.
    auto same = std::find_if(reports.begin(), reports.end(),
                             [&](const auto& p) { return p.run_id() == scan.run_id; });
    trainctl::v1::ReplicaProgress& p = same != reports.end() ? *same : reports.emplace_back();
    p.set_run_id(scan.run_id);
    p.set_time_ms(std::max(p.time_ms(), WallNowMs()));
    p.set_step(*scan.step);
  }
  {
    absl::MutexLock lock(&mu_);
    for (const StepScan& scan : scans) {
      auto it = runs_.find(scan.run_id);
      if (it != runs_.end()) it->second.step_offset = scan.offset;
    }
    for (const trainctl::v1::ReplicaProgress& progress : reports) {
      auto it = runs_.find(progress.run_id());
      if (it != runs_.end()) it->second.progress_ms = progress.time_ms();
    }
  }
  for (trainctl::v1::ReplicaProgress& progress : reports) options_.on_progress(std::move(progress));
}

void ProcessLauncher::HandleReady(const std::string& run_id) {
  LogScope log_scope = LogScope::ForRun(run_id);
  int fd = -1;
  {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end() || it->second.ready_fd < 0) return;
    fd = it->second.ready_fd;
  }
  // The shim writes one short line (atomically: it is far below PIPE_BUF), then closes.
  std::string text;
  char buf[256];
  bool eof = false;
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    eof = n == 0;
    break;
  }
  std::optional<trainctl::v1::ReplicaStarted> started;
  {
    absl::MutexLock lock(&mu_);
    Run& run = runs_[run_id];
    if (!text.empty()) {
      absl::StatusOr<ShimStatus> line = ParseReadyLine(text);
      if (line.ok() && line->state == ShimStatus::State::kRunning) {
        run.pid = line->pid;
        run.progress_ms = line->start_time_ms;
        started.emplace();
        started->set_run_id(run_id);
        started->set_pid(line->pid);
        started->set_start_time_ms(line->start_time_ms);
        // A stop asked for before the replica existed was queued by the shim; a memory limit can
        // only be watched from now on.
      } else if (!line.ok()) {
        spdlog::warn("run {}: unreadable ready line from its shim: {}", run_id,
                     std::string(line.status().message()));
      }
      eof = true;  // One line is all a shim writes.
    }
    if (eof) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      close(fd);
      run.ready_fd = -1;
    }
  }
  if (started) {
    spdlog::info("run {}: replica pid {} started", run_id, started->pid());
    if (options_.on_started) options_.on_started(*std::move(started));
  }
}

void ProcessLauncher::HandleShimExit(const std::string& run_id) {
  LogScope log_scope = LogScope::ForRun(run_id);
  HandleReady(run_id);  // Whatever the shim said before it ended comes first.
  pid_t shim_pid = 0;
  bool adopted = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end() || it->second.pidfd < 0) return;
    Run& run = it->second;
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, run.pidfd, nullptr);
    close(run.pidfd);
    run.pidfd = -1;
    shim_pid = run.shim_pid;
    adopted = run.adopted;
    tokens_.erase(run.token);
    tokens_.erase(run.token + 1);
    run.token = 0;
  }
  if (!adopted) {
    int status = 0;
    while (waitpid(shim_pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      spdlog::warn("run {}: its shim (pid {}) ended abnormally (wait status {})", run_id, shim_pid,
                   status);
    }
  }
  ReportEnd(run_id);
}

void ProcessLauncher::ReportEnd(const std::string& run_id) {
  LogScope log_scope = LogScope::ForRun(run_id);
  const std::string run_dir = records_.RunDir(run_id);
  absl::StatusOr<ShimStatus> status = ReadShimStatus(run_dir);
  trainctl::v1::ReplicaExited exited;
  exited.set_run_id(run_id);
  exited.set_end_time_ms(WallNowMs());
  std::string log_path, argv0, working_dir, user_name, exclusive_cpus;
  bool has_memory_limit = false;
  pid_t pid = 0;
  {
    absl::MutexLock lock(&mu_);
    Run& run = runs_[run_id];
    run.state = RunState::kExiting;
    live_.erase(run_id);
    exited.set_stopped_by_request(run.stopped_by_request);
    exited.set_node_shutdown(run.stopped_by_node ||
                             access((run_dir + "/" + kNodeStopFile).c_str(), F_OK) == 0);
    exited.set_fenced(run.fenced || access((run_dir + "/" + kFenceFile).c_str(), F_OK) == 0);
    exited.set_oom_killed(run.oom_killed ||
                          access((run_dir + "/" + kOomKillFile).c_str(), F_OK) == 0);
    log_path = run.log_path;
    has_memory_limit = run.memory_limit_bytes > 0;
    argv0 = run.argv0;
    working_dir = run.working_dir;
    user_name = run.user_name;
    exclusive_cpus = run.exclusive_cpus;
    pid = run.pid;
  }
  std::string how;
  if (status.ok() && status->state == ShimStatus::State::kFailed) {
    absl::Status error =
        LaunchErrorOf(*status, argv0.empty() ? "the command" : argv0, working_dir, user_name);
    exited.set_launch_failed(true);
    exited.set_launch_error(SanitizeUtf8(error.message()));
    exited.set_launch_error_is_user(absl::IsInvalidArgument(error));
    if (status->end_time_ms > 0) exited.set_end_time_ms(status->end_time_ms);
    how = absl::StrCat("failed to start: ", error.message());
  } else if (status.ok() && status->state == ShimStatus::State::kExited) {
    if (status->signal != 0) {
      exited.set_signal(status->signal);
    } else {
      exited.set_exit_code(status->exit_code);
    }
    if (status->end_time_ms > 0) exited.set_end_time_ms(status->end_time_ms);
    if (status->oom_killed) exited.set_oom_killed(true);
    pid = status->pid;
    how = DescribeEnd(*status);
  } else {
    // The shim died before it could say (SIGKILLed by someone): what is left of the replica is
    // killed with its cgroups below, and its end cannot be known.
    if (status.ok() && status->state == ShimStatus::State::kRunning) {
      ProcStat stat;
      if (ReadProcStat(status->pid, &stat) && stat.state != 'Z' &&
          stat.start_ticks == status->start_ticks) {
        spdlog::warn("run {}: its shim is gone; killing replica pid {}", run_id, status->pid);
        kill(-status->pid, SIGKILL);
      }
      how = "is gone with its shim (its exit status is unknown)";
    } else {
      exited.set_launch_failed(true);
      exited.set_launch_error("the replica's trainctl-shim ended before it started the replica");
      exited.set_launch_error_is_user(false);
      how = "never started: its shim ended first";
    }
  }
  const bool died_by_sigkill = exited.has_signal() && exited.signal() == SIGKILL;
  if (has_memory_limit && !exited.oom_killed() && isolation_.SawOomKill(run_id, died_by_sigkill)) {
    spdlog::warn("run {}: the kernel killed it for exceeding its memory cgroup's limit", run_id);
    exited.set_oom_killed(true);
  }
  // A container's cgroup lies in the run's: it goes first.
  if (options_.on_run_end) options_.on_run_end(run_id);
  // Exclusive CPUs are free only once the run's cgroups (and whatever was left in them) are gone,
  // and a relaunch must find them free; other runs are reported first, since removing cgroups
  // takes a while and the scheduler waits for the exit.
  const bool release_first = !exclusive_cpus.empty();
  if (release_first) isolation_.Release(run_id);
  exited.set_output_tail(ReadOutputTail(log_path));
  spdlog::info("run {}: pid {} {}{}", run_id, pid, how,
               exited.oom_killed()           ? " (memory limit exceeded)"
               : exited.stopped_by_request() ? " (stopped by request)"
                                             : "");
  if (options_.on_exited) options_.on_exited(exited);
  if (!release_first) isolation_.Release(run_id);
  absl::MutexLock lock(&mu_);
  runs_[run_id].state = RunState::kExited;
  exited_order_.push_back(run_id);
  ForgetOldRunsLocked();
}

bool ProcessLauncher::LogFinal(const std::string& run_id) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  // Unknown: it ended before this launcher adopted the work dir's runs, or was forgotten since.
  return it == runs_.end() || it->second.state == RunState::kExited;
}

pid_t ProcessLauncher::ProcessGroupOf(const std::string& run_id) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end() || it->second.state != RunState::kRunning) return 0;
  return it->second.pid;
}

void ProcessLauncher::ForgetOldRunsLocked() {
  while (exited_order_.size() > kMaxExitedRuns) {
    runs_.erase(exited_order_.front());
    exited_order_.pop_front();
  }
}

void ProcessLauncher::ReportLaunchFailure(const std::string& run_id, const absl::Status& error,
                                          int log_fd, const trainctl::v1::CheckRun* preflight,
                                          bool fenced) {
  LogScope log_scope = LogScope::ForRun(run_id);
  const bool is_user = error.code() == absl::StatusCode::kInvalidArgument;
  spdlog::info("run {}: launch failed ({}): {}", run_id, is_user ? "user error" : "host error",
               std::string(error.message()));
  if (log_fd >= 0) {
    std::string line = absl::StrCat("trainctl-agent: ", error.message(), "\n");
    ssize_t ignored = write(log_fd, line.data(), line.size());
    (void)ignored;
  }
  trainctl::v1::ReplicaExited exited;
  exited.set_run_id(run_id);
  exited.set_launch_failed(true);
  exited.set_launch_error(SanitizeUtf8(error.message()));
  exited.set_launch_error_is_user(is_user);
  exited.set_fenced(fenced);
  exited.set_end_time_ms(WallNowMs());
  if (preflight != nullptr) {
    exited.set_preflight_failed(true);
    *exited.mutable_checks() = *preflight;
  }
  if (options_.on_exited) options_.on_exited(exited);
  absl::MutexLock lock(&mu_);
  Run& run = runs_[run_id];
  run.state = RunState::kExited;
  exited_order_.push_back(run_id);
  ForgetOldRunsLocked();
}

}  // namespace trainctl::agent
