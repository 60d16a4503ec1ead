#include "agents/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/proc_stats.h"
#include "agents/progress_watch.h"
#include "agents/run_files.h"
#include "agents/run_records.h"
#include "agents/spawn.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

constexpr int64_t kDefaultLogChunk = 1 << 20;
constexpr int64_t kMaxLogChunk = (4 << 20) - (64 << 10);

RunIsolation::Options IsolationOptions(const ProcessLauncher::Options& options) {
  RunIsolation::Options out;
  out.cgroups = options.cgroups;
  out.pids_max = options.pids_max;
  out.cpu_policy = options.cpu_policy;
  out.cpus = options.cpus;
  out.min_shared_cpus = options.min_shared_cpus;
  out.gpu_inventory = options.gpu_inventory;
  return out;
}

// Lets every user search `dir` (but not list it, unless it could before): run users reach their
// own directories below it. Logs a failure; the launches that need it will fail naming the dir.
void LetEveryoneSearch(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    spdlog::warn("cannot stat {}: {}", dir, std::strerror(errno));
  } else if ((st.st_mode & 0111) != 0111 && chmod(dir.c_str(), (st.st_mode | 0111) & 07777) != 0) {
    spdlog::warn("cannot chmod {}: replicas of other users may not reach their directories: {}",
                 dir, std::strerror(errno));
  }
}

}  // namespace

ProcessLauncher::ProcessLauncher(Options options)
    : options_(std::move(options)),
      switch_users_(geteuid() == 0),
      isolation_(IsolationOptions(options_)),
      injected_failures_left_(options_.inject_launch_failures) {
  if (switch_users_) {
    LetEveryoneSearch(options_.work_dir);
    const std::string jobs = options_.work_dir + "/jobs";
    if (MakeDirs(jobs).ok() && chmod(jobs.c_str(), 0711) != 0) {
      spdlog::warn("cannot chmod {}: {}", jobs, std::strerror(errno));
    }
  }
  monitor_ = std::thread([this] { MonitorLoop(); });
}

ProcessLauncher::~ProcessLauncher() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  monitor_.join();
  absl::MutexLock lock(&mu_);
  for (auto& [run_id, run] : runs_) {
    if (run.state != RunState::kRunning) continue;
    SignalLocked(run_id, run, SIGKILL);
    // An adopted run is not a child: there is nothing to reap.
    while (!run.adopted && waitpid(run.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    spdlog::warn("run {} killed: the launcher was destroyed", run_id);
    isolation_.Release(run_id);
    RemoveRecord(run_id);
  }
}

std::vector<std::string> ProcessLauncher::AdoptRecordedRuns() {
  std::vector<std::string> adopted;
  if (options_.run_records == nullptr) return adopted;
  for (const RunRecord& record : options_.run_records->LoadAlive()) {
    absl::StatusOr<RunIdParts> parts = ParseRunId(record.run_id);
    absl::MutexLock lock(&mu_);
    if (runs_.count(record.run_id) > 0) continue;
    Run& run = runs_[record.run_id];
    run.state = RunState::kRunning;
    run.adopted = true;
    run.pid = record.pid;
    run.start_ticks = record.start_ticks;
    run.memory_limit_bytes = record.memory_limit_bytes;
    run.checkpoint_dir = record.checkpoint_dir;
    run.progress_ms = WallNowMs();
    if (parts.ok()) {
      run.log_path = RunLogPath(options_.work_dir, *parts);
      run.progress_file = RunWorkingDir(options_.work_dir, *parts) + "/" + kProgressFileName;
    }
    // The earlier agent put it in its cgroups; they are removed at the run's end.
    run.exclusive_cpus = record.exclusive_cpus;
    isolation_.Adopt(record.run_id, record.exclusive_cpus);
    spdlog::warn("run {}: adopted pid {}, which an earlier agent left running", record.run_id,
                 record.pid);
    adopted.push_back(record.run_id);
  }
  return adopted;
}

void ProcessLauncher::WriteRecord(const std::string& run_id, pid_t pid) {
  if (options_.run_records == nullptr) return;
  RunRecord record;
  record.run_id = run_id;
  record.pid = pid;
  record.boot_id = BootId();
  ProcStat stat;
  // Our unreaped child: its /proc entry exists even if it already exited.
  if (ReadProcStat(pid, &stat)) record.start_ticks = stat.start_ticks;
  {
    absl::MutexLock lock(&mu_);
    const Run& run = runs_[run_id];
    record.memory_limit_bytes = run.memory_limit_bytes;
    record.checkpoint_dir = run.checkpoint_dir;
    record.exclusive_cpus = run.exclusive_cpus;
  }
  if (absl::Status s = options_.run_records->Write(record); !s.ok()) {
    spdlog::warn("run {}: cannot record it; an agent restarted after a crash would not know it: {}",
                 run_id, std::string(s.message()));
  }
}

void ProcessLauncher::RemoveRecord(const std::string& run_id) {
  if (options_.run_records == nullptr) return;
  if (absl::Status s = options_.run_records->Remove(run_id); !s.ok()) {
    spdlog::warn("run {}: cannot remove its record: {}", run_id, std::string(s.message()));
  }
}

void ProcessLauncher::Launch(const trainctl::v1::LaunchReplica& launch) {
  const std::string& run_id = launch.run_id();
  RunIdParts parts{launch.job_id(), launch.attempt(), launch.replica_name(), launch.restart()};
  std::string reject_reason;
  {
    absl::MutexLock lock(&mu_);
    if (runs_.count(run_id) > 0) {
      spdlog::info("run {}: launch ignored, the run is already known", run_id);
      return;
    }
    Run& run = runs_[run_id];
    run.memory_limit_bytes = std::max<int64_t>(launch.resources().memory_mb(), 0) << 20;
    reject_reason = reject_reason_;
    if (reject_reason.empty() && injected_failures_left_ != 0) {
      if (injected_failures_left_ > 0) --injected_failures_left_;
      reject_reason = "injected launch failure (--inject-launch-failures)";
    }
  }
  if (!reject_reason.empty()) {
    ReportLaunchFailure(run_id, absl::UnavailableError(reject_reason), -1);
    return;
  }
  if (absl::Status valid = CheckRunId(run_id, parts); !valid.ok()) {
    // The scheduler sent a malformed launch; that is never the user's fault.
    ReportLaunchFailure(run_id, absl::InternalError(valid.message()), -1);
    return;
  }
  if (options_.preflight) {
    if (std::optional<PreflightFailure> failed = options_.preflight(launch)) {
      ReportLaunchFailure(run_id, absl::UnavailableError(failed->error), -1, &failed->run);
      return;
    }
  }
  absl::StatusOr<std::optional<RunUser>> user =
      ResolveRunUser(options_.run_as, launch, switch_users_);
  if (!user.ok()) {
    ReportLaunchFailure(run_id, user.status(), -1);
    return;
  }
  const std::string working_dir = RunWorkingDir(options_.work_dir, parts);
  const std::string log_path = RunLogPath(options_.work_dir, parts);
  const std::string progress_file = working_dir + "/" + kProgressFileName;
  {
    absl::MutexLock lock(&mu_);
    Run& run = runs_[run_id];
    run.log_path = log_path;
    run.progress_file = progress_file;
    run.checkpoint_dir = launch.checkpoint_dir();
  }
  absl::StatusOr<int> log = PrepareRunFiles(working_dir, log_path, launch.checkpoint_dir(),
                                            user->has_value() ? &**user : nullptr);
  if (!log.ok()) {
    ReportLaunchFailure(run_id, log.status(), -1);
    return;
  }
  const int log_fd = *log;

  SpawnRequest request;
  request.argv.assign(launch.argv().begin(), launch.argv().end());
  std::map<std::string, std::string> overlay(launch.env().begin(), launch.env().end());
  overlay.emplace("TRAINCTL_PROGRESS_FILE", progress_file);
  overlay.insert(options_.replica_env.begin(), options_.replica_env.end());
  std::vector<std::string> base =
      options_.base_environment.empty() ? CurrentEnvironment() : options_.base_environment;
  if (*user) base = WithUserEnvironment(std::move(base), **user);
  request.env = MergeEnvironment(base, overlay);
  request.user = *user;
  request.working_dir = working_dir;
  request.output_fd = log_fd;
  RunIsolation::Prepared isolation = isolation_.Prepare(launch);
  request.cgroup_procs_paths = std::move(isolation.procs_paths);
  {
    absl::MutexLock lock(&mu_);
    runs_[run_id].exclusive_cpus = isolation.exclusive_cpus;
  }
  int64_t start_time_ms = WallNowMs();
  absl::StatusOr<pid_t> pid = SpawnProcess(request);
  if (!pid.ok()) {
    isolation_.Release(run_id);
    ReportLaunchFailure(run_id, pid.status(), log_fd);
    close(log_fd);
    return;
  }
  close(log_fd);
  spdlog::info("run {}: started pid {} as {}: {}", run_id, *pid,
               request.user ? request.user->name : "the agent's user",
               absl::StrJoin(request.argv, " "));
  FinishLaunch(run_id, *pid, start_time_ms);
}

void ProcessLauncher::FinishLaunch(const std::string& run_id, pid_t pid, int64_t start_time_ms) {
  trainctl::v1::ReplicaStarted started;
  started.set_run_id(run_id);
  started.set_pid(pid);
  started.set_start_time_ms(start_time_ms);
  WriteRecord(run_id, pid);
  // Reported before the monitor can see the process, so the exit report always comes second.
  if (options_.on_started) options_.on_started(started);
  absl::MutexLock lock(&mu_);
  Run& run = runs_[run_id];
  run.pid = pid;
  run.progress_ms = start_time_ms;
  run.state = RunState::kRunning;
  if (run.stopping) {
    SignalLocked(run_id, run, run.kill_at <= absl::Now() ? SIGKILL : SIGTERM);
  }
}

void ProcessLauncher::ReportLaunchFailure(const std::string& run_id, const absl::Status& error,
                                          int log_fd, const trainctl::v1::CheckRun* preflight) {
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

void ProcessLauncher::SignalLocked(const std::string& run_id, Run& run, int sig) {
  if (run.state != RunState::kRunning) return;  // Not started yet, or already reaped.
  if (run.adopted) {
    // Not a child, so no zombie holds its pid: once the leader is gone (reaped by someone
    // else), the group id is only safe to signal while some member still uses it.
    ProcStat stat;
    const bool leader_runs =
        ReadProcStat(run.pid, &stat) && stat.state != 'Z' && stat.start_ticks == run.start_ticks;
    if (!leader_runs && !ProcessGroupHasMembers(run.pid)) return;
  }
  if (kill(-run.pid, sig) != 0 && errno != ESRCH) {
    spdlog::warn("run {}: kill({}, {}): {}", run_id, -run.pid, sig, std::strerror(errno));
  }
  if (sig == SIGKILL) run.kill_sent = true;
}

absl::Status ProcessLauncher::Stop(const std::string& run_id, int64_t grace_ms,
                                   const std::string& reason) {
  absl::MutexLock lock(&mu_);
  return StopLocked(run_id, grace_ms, reason, /*by_request=*/true);
}

absl::Status ProcessLauncher::StopLocked(const std::string& run_id, int64_t grace_ms,
                                         const std::string& reason, bool by_request) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("unknown run ", run_id));
  Run& run = it->second;
  if (run.state == RunState::kExiting || run.state == RunState::kExited) return absl::OkStatus();
  grace_ms = std::max<int64_t>(grace_ms, 0);
  spdlog::info("run {}: stopping ({}), grace {}", run_id, reason,
               absl::FormatDuration(absl::Milliseconds(grace_ms)));
  const bool first = !run.stopping;
  run.stopping = true;
  run.stopped_by_request = run.stopped_by_request || by_request;
  run.kill_at = std::min(run.kill_at, absl::Now() + absl::Milliseconds(grace_ms));
  if (grace_ms == 0) {
    SignalLocked(run_id, run, SIGKILL);
  } else if (first) {
    SignalLocked(run_id, run, SIGTERM);
  }
  return absl::OkStatus();
}

void ProcessLauncher::StopAll(int64_t grace_ms, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  for (auto& [run_id, run] : runs_) {
    if (run.state == RunState::kLaunching || run.state == RunState::kRunning) {
      StopLocked(run_id, grace_ms, reason, /*by_request=*/false).IgnoreError();
      run.stopped_by_node = true;
    }
  }
}

void ProcessLauncher::RejectNewLaunches(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  reject_reason_ = reason.empty() ? "launches are no longer accepted" : reason;
}

trainctl::v1::LogData ProcessLauncher::ReadLog(const std::string& run_id, int64_t offset,
                                               int64_t max_bytes) const {
  trainctl::v1::LogData out;
  out.set_next_offset(offset);
  std::string path;
  bool exited = true;
  bool known = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(run_id);
    if (it != runs_.end()) {
      known = true;
      path = it->second.log_path;
      exited = it->second.state == RunState::kExiting || it->second.state == RunState::kExited;
    }
  }
  if (!known) {
    absl::StatusOr<RunIdParts> parts = ParseRunId(run_id);
    if (!parts.ok()) {
      out.set_error(absl::StrCat("unknown run ", run_id));
      return out;
    }
    path = RunLogPath(options_.work_dir, *parts);
  }
  if (max_bytes <= 0) max_bytes = kDefaultLogChunk;
  max_bytes = std::min(max_bytes, kMaxLogChunk);
  absl::StatusOr<LogChunk> chunk =
      path.empty() ? absl::NotFoundError("no log file") : ReadLogChunk(path, offset, max_bytes);
  if (!chunk.ok()) {
    if (absl::IsNotFound(chunk.status()) && known) {
      out.set_complete(exited);  // The launch failed before the log existed, or is under way.
    } else if (absl::IsNotFound(chunk.status())) {
      out.set_error(absl::StrCat("unknown run ", run_id));
    } else {
      out.set_error(std::string(chunk.status().message()));
    }
    return out;
  }
  out.set_next_offset(offset + static_cast<int64_t>(chunk->data.size()));
  out.set_complete(exited && out.next_offset() >= chunk->file_size);
  out.set_data(std::move(chunk->data));
  return out;
}

std::vector<trainctl::v1::KnownRun> ProcessLauncher::KnownRuns() const {
  std::vector<trainctl::v1::KnownRun> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [run_id, run] : runs_) {
    if (run.state != RunState::kRunning && run.state != RunState::kExiting) continue;
    trainctl::v1::KnownRun& known = out.emplace_back();
    known.set_run_id(run_id);
    known.set_running(true);
    known.set_pid(run.pid);
  }
  return out;
}

int ProcessLauncher::ActiveCount() const {
  absl::MutexLock lock(&mu_);
  int count = 0;
  for (const auto& entry : runs_) {
    if (entry.second.state == RunState::kLaunching || entry.second.state == RunState::kRunning) {
      ++count;
    }
  }
  return count;
}

bool ProcessLauncher::WaitUntilIdle(absl::Time deadline) const {
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& entry : runs_) {
      if (entry.second.state != RunState::kExited) return false;
    }
    return true;
  };
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

}  // namespace trainctl::agent
