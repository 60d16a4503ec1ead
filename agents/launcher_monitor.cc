// The monitor thread's half of ProcessLauncher: reaping exited runs, SIGKILL deadlines, memory
// limits and signs of progress. See launcher.h.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/launcher.h"
#include "agents/proc_stats.h"
#include "agents/progress_watch.h"
#include "agents/run_files.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

// Exited runs kept in memory (for idempotent Launch and exact ReadLog); older ones are forgotten.
constexpr size_t kMaxExitedRuns = 4096;

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("ended with wait status ", status);
}

}  // namespace

void ProcessLauncher::MonitorLoop() {
  absl::Time next_memory_check = absl::Now();
  absl::Time next_progress_check = absl::Now();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return shutting_down_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), options_.poll_interval)) return;
    }
    if (absl::Now() >= next_memory_check) {
      EnforceMemoryLimits();
      next_memory_check = absl::Now() + options_.memory_check_interval;
    }
    if (options_.on_progress && absl::Now() >= next_progress_check) {
      ReportProgress();
      next_progress_check = absl::Now() + options_.progress_interval;
    }
    for (const Watched& watched : CheckDeadlines()) {
      if (watched.adopted) {
        MaybeReportAdoptedEnd(watched);
      } else {
        MaybeReap(watched.run_id, watched.pid);
      }
    }
  }
}

std::vector<ProcessLauncher::Watched> ProcessLauncher::CheckDeadlines() {
  std::vector<Watched> running;
  absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  for (auto& [run_id, run] : runs_) {
    if (run.state != RunState::kRunning) continue;
    if (run.stopping && !run.kill_sent && run.kill_at <= now) {
      spdlog::info("run {}: still running after its grace period; sending SIGKILL", run_id);
      SignalLocked(run_id, run, SIGKILL);
    }
    running.push_back({run_id, run.pid, run.adopted, run.start_ticks});
  }
  return running;
}

void ProcessLauncher::EnforceMemoryLimits() {
  {
    absl::MutexLock lock(&mu_);
    bool any = false;
    for (const auto& entry : runs_) {
      any = any || (entry.second.state == RunState::kRunning && entry.second.memory_limit_bytes);
    }
    if (!any) return;
  }
  std::map<pid_t, int64_t> resident = ResidentBytesByProcessGroup();
  absl::MutexLock lock(&mu_);
  for (auto& [run_id, run] : runs_) {
    if (run.state != RunState::kRunning || run.memory_limit_bytes == 0 || run.oom_killed) continue;
    auto it = resident.find(run.pid);
    if (it == resident.end() || it->second <= run.memory_limit_bytes) continue;
    spdlog::warn("run {}: resident memory {} MiB exceeds its limit of {} MiB; killing it", run_id,
                 it->second >> 20, run.memory_limit_bytes >> 20);
    run.oom_killed = true;
    SignalLocked(run_id, run, SIGKILL);
  }
}

void ProcessLauncher::ReportProgress() {
  std::vector<ProgressTarget> targets;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [run_id, run] : runs_) {
      if (run.state != RunState::kRunning) continue;
      targets.push_back({run_id, run.progress_file, run.checkpoint_dir, run.progress_ms});
    }
  }
  if (targets.empty()) return;
  std::vector<trainctl::v1::ReplicaProgress> reports = CheckProgress(targets);
  {
    absl::MutexLock lock(&mu_);
    for (const trainctl::v1::ReplicaProgress& progress : reports) {
      auto it = runs_.find(progress.run_id());
      if (it != runs_.end()) it->second.progress_ms = progress.time_ms();
    }
  }
  for (trainctl::v1::ReplicaProgress& progress : reports) options_.on_progress(std::move(progress));
}

void ProcessLauncher::MaybeReap(const std::string& run_id, pid_t pid) {
  // Look without reaping first: while the leader is a zombie its pid, and so the group id,
  // cannot be reused, which makes it safe to kill the rest of the group.
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
  if (kill(-pid, SIGKILL) != 0 && errno != ESRCH) {
    spdlog::warn("run {}: cannot kill the rest of process group {}: {}", run_id, pid,
                 std::strerror(errno));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ReportEnd(run_id, pid, status);
}

void ProcessLauncher::MaybeReportAdoptedEnd(const Watched& watched) {
  const std::string& run_id = watched.run_id;
  ProcStat stat;
  if (ReadProcStat(watched.pid, &stat) && stat.state != 'Z' &&
      stat.start_ticks == watched.start_ticks) {
    return;  // Still runs.
  }
  // The leader is gone. Members left in its group keep the group id from being reused, so the
  // group may be signalled exactly while it has members.
  if (ProcessGroupHasMembers(watched.pid) && kill(-watched.pid, SIGKILL) != 0 && errno != ESRCH) {
    spdlog::warn("run {}: cannot kill the rest of process group {}: {}", run_id, watched.pid,
                 std::strerror(errno));
  }
  // Not our child: its exit status went to whoever reaped it.
  ReportEnd(run_id, watched.pid, std::nullopt);
}

void ProcessLauncher::ReportEnd(const std::string& run_id, pid_t pid, std::optional<int> status) {
  RemoveRecord(run_id);
  trainctl::v1::ReplicaExited exited;
  exited.set_run_id(run_id);
  exited.set_end_time_ms(WallNowMs());
  if (status && WIFEXITED(*status)) exited.set_exit_code(WEXITSTATUS(*status));
  if (status && WIFSIGNALED(*status)) exited.set_signal(WTERMSIG(*status));
  std::string log_path;
  bool has_memory_limit = false;
  {
    absl::MutexLock lock(&mu_);
    Run& run = runs_[run_id];
    run.state = RunState::kExiting;
    exited.set_stopped_by_request(run.stopped_by_request);
    exited.set_node_shutdown(run.stopped_by_node);
    exited.set_oom_killed(run.oom_killed);
    log_path = run.log_path;
    has_memory_limit = run.memory_limit_bytes > 0;
  }
  const bool died_by_sigkill = status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL;
  if (has_memory_limit && !exited.oom_killed() && isolation_.SawOomKill(run_id, died_by_sigkill)) {
    spdlog::warn("run {}: the kernel killed it for exceeding its memory cgroup's limit", run_id);
    exited.set_oom_killed(true);
  }
  isolation_.Release(run_id);
  exited.set_output_tail(ReadOutputTail(log_path));
  spdlog::info("run {}: {}pid {} {}{}", run_id, status ? "" : "adopted ", pid,
               status ? DescribeStatus(*status)
                      : std::string("is gone (its exit status is unknown: not our child)"),
               exited.oom_killed()           ? " (memory limit exceeded)"
               : exited.stopped_by_request() ? " (stopped by request)"
                                             : "");
  if (options_.on_exited) options_.on_exited(exited);
  absl::MutexLock lock(&mu_);
  runs_[run_id].state = RunState::kExited;
  exited_order_.push_back(run_id);
  ForgetOldRunsLocked();
}

void ProcessLauncher::ForgetOldRunsLocked() {
  while (exited_order_.size() > kMaxExitedRuns) {
    runs_.erase(exited_order_.front());
    exited_order_.pop_front();
  }
}

}  // namespace trainctl::agent
