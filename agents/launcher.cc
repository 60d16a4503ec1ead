#include "agents/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/log_read.h"
#include "agents/pidfd.h"
#include "agents/preemption_notice.h"
#include "agents/proc_stats.h"
#include "agents/progress_watch.h"
#include "agents/run_files.h"
#include "agents/run_records.h"
#include "agents/shim/shim_protocol.h"
#include "agents/shim_spawn.h"
#include "agents/shim_status.h"
#include "agents/spawn.h"
#include "common/log_context.h"
#include "common/signals.h"
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
  out.scratch = {(options.state_dir.empty() ? options.work_dir : options.state_dir) + "/scratch",
                 options.job_tmpfs_size, options.work_dir};
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
      shim_path_(options_.shim_path.empty() ? DefaultShimPath() : options_.shim_path),
      records_((options_.state_dir.empty() ? options_.work_dir : options_.state_dir) + "/runs"),
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
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    spdlog::critical("cannot create the launcher's epoll set: {}", std::strerror(errno));
    std::abort();
  }
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = 0;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake);
  monitor_ = std::thread([this] { MonitorLoop(); });
}

ProcessLauncher::~ProcessLauncher() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  Wake();
  monitor_.join();
  absl::MutexLock lock(&mu_);
  for (auto& [run_id, run] : runs_) {
    // The shims keep running; the next launcher adopts them.
    if (run.pidfd >= 0) close(run.pidfd);
    if (run.ready_fd >= 0) close(run.ready_fd);
  }
  close(wake_fd_);
  close(epoll_fd_);
}

void ProcessLauncher::Wake() const {
  const uint64_t one = 1;
  ssize_t ignored = write(wake_fd_, &one, sizeof(one));
  (void)ignored;
}

void ProcessLauncher::WatchLocked(const std::string& run_id, Run& run) {
  epoll_event event{};
  event.events = EPOLLIN;
  const uint64_t token = next_token_;
  next_token_ += 2;
  run.token = token;
  event.data.u64 = token;
  tokens_[token] = run_id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, run.pidfd, &event) != 0) {
    spdlog::error("run {}: cannot watch its shim: {}", run_id, std::strerror(errno));
  }
  if (run.ready_fd >= 0) {
    event.data.u64 = token + 1;
    tokens_[token + 1] = run_id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, run.ready_fd, &event) != 0) {
      spdlog::error("run {}: cannot watch its ready pipe: {}", run_id, std::strerror(errno));
    }
  }
}

std::vector<std::string> ProcessLauncher::AdoptRecordedRuns(const std::set<std::string>& reported) {
  std::vector<std::string> adopted;
  for (const RunRecordStore::Found& found : records_.Load()) {
    const RunRecord& record = found.record;
    const std::string run_dir = records_.RunDir(record.run_id);
    if (reported.count(record.run_id) > 0) {
      // Its exit is journaled: the directory only outlived the agent that wrote both.
      ForgetRun(record.run_id);
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      if (runs_.count(record.run_id) > 0) continue;
    }
    int pidfd = -1;
    absl::StatusOr<ShimPid> shim = absl::NotFoundError("no shim");
    if (found.shim_alive) {
      // The lock is held, so the shim lives; it writes shim.pid first thing after its start.
      absl::Time deadline = absl::Now() + absl::Seconds(2);
      while (absl::IsNotFound((shim = ReadShimPid(run_dir)).status()) && absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(1));
      }
      ProcStat stat;
      if (shim.ok() && ReadProcStat(shim->pid, &stat) && stat.start_ticks == shim->start_ticks) {
        pidfd = PidfdOpen(shim->pid);
      }
      if (pidfd < 0) {
        spdlog::warn(
            "run {}: its shim holds the run's lock but cannot be found ({}); treating it "
            "as gone",
            record.run_id, shim.ok() ? std::strerror(errno) : shim.status().ToString());
      }
    }
    if (pidfd < 0) {
      ReportEndedRun(record);
      continue;
    }
    absl::StatusOr<RunIdParts> parts = ParseRunId(record.run_id);
    absl::StatusOr<ShimStatus> status = ReadShimStatus(run_dir);
    absl::MutexLock lock(&mu_);
    Run& run = runs_[record.run_id];
    run.state = RunState::kRunning;
    live_.insert(record.run_id);
    run.adopted = true;
    run.shim_pid = shim->pid;
    run.pidfd = pidfd;
    if (status.ok() && status->state == ShimStatus::State::kRunning) run.pid = status->pid;
    run.memory_limit_bytes = record.memory_limit_bytes;
    run.checkpoint_dir = record.checkpoint_dir;
    run.step_pattern = CompileStepPattern(record.progress_pattern);
    run.progress_ms = WallNowMs();
    if (parts.ok()) {
      run.log_path = RunLogPath(options_.work_dir, *parts);
      run.progress_file = RunWorkingDir(options_.work_dir, *parts) + "/" + kProgressFileName;
    }
    run.exclusive_cpus = record.exclusive_cpus;
    isolation_.Adopt(record.run_id, record.exclusive_cpus);
    isolation_.AdoptRunning(record.run_id);
    WatchLocked(record.run_id, run);
    spdlog::warn(
        "run {}: adopted its shim (pid {}, replica pid {}), which an earlier agent left "
        "running",
        record.run_id, run.shim_pid, run.pid);
    adopted.push_back(record.run_id);
  }
  isolation_.RemoveUnusedPrivateTmp();
  return adopted;
}

void ProcessLauncher::ReportEndedRun(const RunRecord& record) {
  // ReportEnd reads its status: the replica's end, or (its shim died under it) what is left of
  // it to kill.
  absl::StatusOr<RunIdParts> parts = ParseRunId(record.run_id);
  {
    absl::MutexLock lock(&mu_);
    Run& run = runs_[record.run_id];
    run.state = RunState::kRunning;
    run.adopted = true;
    run.memory_limit_bytes = record.memory_limit_bytes;
    if (parts.ok()) run.log_path = RunLogPath(options_.work_dir, *parts);
  }
  // Its cgroups go with it (Release kills what is left in them).
  isolation_.Adopt(record.run_id, record.exclusive_cpus);
  ReportEnd(record.run_id);
}

void ProcessLauncher::ForgetRun(const std::string& run_id) const {
  if (absl::Status s = records_.Remove(run_id); !s.ok()) {
    spdlog::warn("run {}: {}", run_id, std::string(s.message()));
  }
}

void ProcessLauncher::Launch(const trainctl::v1::LaunchReplica& launch) {
  LogScope log_scope = LogScope::ForRun(launch.run_id());
  const std::string& run_id = launch.run_id();
  RunIdParts parts{launch.job_id(), launch.attempt(), launch.replica_name(), launch.restart()};
  const int64_t memory_limit_bytes = std::max<int64_t>(launch.resources().memory_mb(), 0) << 20;
  std::string reject_reason;
  bool fenced = false;
  {
    absl::MutexLock lock(&mu_);
    if (runs_.count(run_id) > 0) {
      spdlog::info("run {}: launch ignored, the run is already known", run_id);
      return;
    }
    Run& run = runs_[run_id];
    run.memory_limit_bytes = memory_limit_bytes;
    reject_reason = reject_reason_;
    if (reject_reason.empty() && !fence_reason_.empty()) {
      reject_reason = absl::StrCat(fence_reason_, "; not starting it");
      fenced = true;
    }
    if (reject_reason.empty() && injected_failures_left_ != 0) {
      if (injected_failures_left_ > 0) --injected_failures_left_;
      reject_reason = "injected launch failure (--inject-launch-failures)";
    }
  }
  if (!reject_reason.empty()) {
    ReportLaunchFailure(run_id, absl::UnavailableError(reject_reason), -1, nullptr, fenced);
    return;
  }
  if (absl::Status valid = CheckRunId(run_id, parts); !valid.ok()) {
    // The scheduler sent a malformed launch; that is never the user's fault.
    ReportLaunchFailure(run_id, absl::InternalError(valid.message()), -1);
    return;
  }
  if (launch.argv().empty() || !launch.prepare_error().empty()) {
    ReportLaunchFailure(run_id,
                        absl::InvalidArgumentError(launch.argv().empty() ? "empty command"
                                                                         : launch.prepare_error()),
                        -1);
    return;
  }
  if (options_.preflight) {
    if (std::optional<PreflightFailure> failed = options_.preflight(launch)) {
      ReportLaunchFailure(run_id, absl::UnavailableError(failed->error), -1, &failed->run);
      return;
    }
  }
  const std::string working_dir = RunWorkingDir(options_.work_dir, parts);
  absl::StatusOr<std::optional<RunUser>> user =
      ResolveRunUser(options_.run_as, launch, switch_users_, working_dir);
  if (!user.ok()) {
    ReportLaunchFailure(run_id, user.status(), -1);
    return;
  }
  // The replica starts in its job's working directory when it has one (read-only), else in its
  // own; the progress file and notices stay in the writable one (TRAINCTL_RUN_DIR).
  absl::StatusOr<std::string> start_dir = working_dir;
  if (!launch.workdir_digest().empty()) {
    start_dir = options_.prepare_workdir
                    ? options_.prepare_workdir(
                          launch, *user ? std::optional<gid_t>((*user)->gid) : std::nullopt)
                    : absl::UnavailableError("this agent cannot fetch working directories");
    if (!start_dir.ok()) {
      ReportLaunchFailure(run_id, start_dir.status(), -1);
      return;
    }
  }
  const std::string log_path = RunLogPath(options_.work_dir, parts);
  const std::string progress_file = working_dir + "/" + kProgressFileName;
  {
    absl::MutexLock lock(&mu_);
    Run& run = runs_[run_id];
    run.log_path = log_path;
    run.progress_file = progress_file;
    run.checkpoint_dir = launch.checkpoint_dir();
    run.step_pattern = CompileStepPattern(launch.progress_pattern());
    run.argv0 = launch.argv(0);
    run.working_dir = working_dir;
    // A project's uid is in no user database: its number says who it is.
    run.user_name = !user->has_value() ? ""
                    : !(*user)->project_uid
                        ? (*user)->name
                        : absl::StrCat((*user)->name, " (uid ", (*user)->uid, ")");
  }
  absl::StatusOr<int> log =
      PrepareRunFiles({options_.work_dir, parts, launch.checkpoint_dir(), launch.checkpoint_root()},
                      user->has_value() ? &**user : nullptr);
  if (!log.ok()) {
    ReportLaunchFailure(run_id, log.status(), -1);
    return;
  }
  const int log_fd = *log;

  ShimRequest request;
  request.shim_path = shim_path_;
  request.run_dir = records_.RunDir(run_id);
  request.argv.assign(launch.argv().begin(), launch.argv().end());
  std::map<std::string, std::string> overlay(launch.env().begin(), launch.env().end());
  overlay.emplace("TRAINCTL_PROGRESS_FILE", progress_file);
  overlay.emplace("TRAINCTL_RUN_DIR", working_dir);
  overlay.emplace("TRAINCTL_PREEMPTION_NOTICE", NoticePath(options_.work_dir, parts));
  overlay.insert(options_.replica_env.begin(), options_.replica_env.end());
  std::vector<std::string> base =
      options_.base_environment.empty() ? CurrentEnvironment() : options_.base_environment;
  if (*user) base = WithUserEnvironment(std::move(base), **user);
  request.env = MergeEnvironment(base, overlay);
  const bool in_container = !launch.image().empty();
  if (!in_container) {
    absl::StatusOr<std::string> exec_path =
        ResolveCommand(request.argv[0], SearchPathOf(request.env), *start_dir);
    if (!exec_path.ok()) {
      ReportLaunchFailure(run_id, exec_path.status(), log_fd);
      close(log_fd);
      return;
    }
    request.exec_path = *exec_path;
  }
  request.user = *user;
  request.working_dir = *start_dir;
  request.log_fd = log_fd;
  request.log_path = log_path;
  request.max_log_bytes = options_.max_log_bytes;
  RunIsolation::Prepared isolation = isolation_.Prepare(launch);
  if (!isolation.error.ok()) {
    isolation_.Release(run_id);
    ReportLaunchFailure(run_id, isolation.error, log_fd);
    close(log_fd);
    return;
  }
  request.private_tmp = std::move(isolation.private_tmp);
  request.cgroup_join_paths = std::move(isolation.join_paths);
  request.memory_events = std::move(isolation.memory_events);
  if (in_container) {
    absl::Status container = ContainerRequestOf(launch, std::move(overlay), isolation, &request);
    if (!container.ok()) {
      isolation_.Release(run_id);
      ReportLaunchFailure(run_id, container, log_fd);
      close(log_fd);
      return;
    }
  }
  RunRecord record;
  record.run_id = run_id;
  record.boot_id = BootId();
  record.memory_limit_bytes = memory_limit_bytes;
  record.checkpoint_dir = launch.checkpoint_dir();
  record.exclusive_cpus = isolation.exclusive_cpus;
  record.progress_pattern = launch.progress_pattern();
  // Durable before the process exists: an agent that dies from here on leaves a record (and,
  // once the shim runs, its lock) for the next one.
  absl::StatusOr<int> lock = records_.Create(record);
  absl::StatusOr<SpawnedShim> shim = absl::InternalError("no run record");
  if (lock.ok()) {
    request.lock_fd = *lock;
    shim = SpawnShim(request);
    close(*lock);
    if (!shim.ok()) ForgetRun(run_id);
  } else {
    shim = lock.status();
  }
  close(log_fd);
  if (!shim.ok()) {
    if (in_container && options_.on_run_end) options_.on_run_end(run_id);
    isolation_.Release(run_id);
    ReportLaunchFailure(run_id, absl::InternalError(shim.status().message()), -1);
    return;
  }
  spdlog::info("run {}: shim pid {} starting it as {}: {}", run_id, shim->pid,
               request.user ? request.user->name : "the agent's user",
               absl::StrJoin(request.argv, " "));
  absl::MutexLock lock_runs(&mu_);
  Run& run = runs_[run_id];
  run.exclusive_cpus = isolation.exclusive_cpus;
  run.shim_pid = shim->pid;
  run.pidfd = shim->pidfd;
  run.ready_fd = shim->ready_fd;
  run.progress_ms = WallNowMs();
  run.state = RunState::kRunning;
  live_.insert(run_id);
  WatchLocked(run_id, run);
  if (run.stopping) {
    SignalLocked(run_id, run, run.kill_at <= absl::Now() ? SIGKILL : SIGTERM);
    Wake();
  }
}

void ProcessLauncher::SignalLocked(const std::string& run_id, Run& run, int sig) {
  if (run.state != RunState::kRunning || run.pidfd < 0) return;  // Not started, or ended.
  // Through the shim, which knows whether the replica's group still exists: a pid the agent
  // remembers may have been reused; a pidfd cannot be.
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  info.si_signo = shim::ShimForwardSignal();
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value.sival_int = sig;
  if (PidfdSendSignal(run.pidfd, shim::ShimForwardSignal(), &info) != 0 && errno != ESRCH) {
    spdlog::warn("run {}: cannot signal its shim (pid {}): {}", run_id, run.shim_pid,
                 std::strerror(errno));
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
  LogScope log_scope = LogScope::ForRun(run_id);
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
  Wake();  // A new deadline.
  return absl::OkStatus();
}

void ProcessLauncher::StopAll(int64_t grace_ms, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  for (auto& [run_id, run] : runs_) {
    if (run.state == RunState::kLaunching || run.state == RunState::kRunning) {
      // Whichever agent reports the exit (this one, or the next when this is
      // `trainctl-agent --stop-replicas`) reports it as the node's stop, not the replica's end.
      const std::string marker = records_.RunDir(run_id) + "/" + kNodeStopFile;
      int fd = open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd >= 0) close(fd);
      StopLocked(run_id, grace_ms, reason, /*by_request=*/false).IgnoreError();
      run.stopped_by_node = true;
    }
  }
}

int ProcessLauncher::Fence(int64_t grace_ms, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  fence_reason_ = reason.empty() ? "the agent is fenced" : reason;
  int fenced = 0;
  for (auto& [run_id, run] : runs_) {
    if (run.stopping || (run.state != RunState::kLaunching && run.state != RunState::kRunning)) {
      continue;
    }
    // A later agent that reports the exit reports it as fenced too.
    const std::string marker = records_.RunDir(run_id) + "/" + kFenceFile;
    int fd = open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    StopLocked(run_id, grace_ms, reason, /*by_request=*/false).IgnoreError();
    run.fenced = true;
    ++fenced;
  }
  return fenced;
}

void ProcessLauncher::Unfence() {
  absl::MutexLock lock(&mu_);
  fence_reason_.clear();
}

void ProcessLauncher::RefuseFencedLaunch(const std::string& run_id, const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (runs_.count(run_id) > 0) return;  // Known already: launched or refused.
    runs_[run_id];
  }
  ReportLaunchFailure(run_id, absl::UnavailableError(absl::StrCat(reason, "; not starting it")), -1,
                      nullptr, /*fenced=*/true);
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
  out.set_next_offset(chunk->next_offset);
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
