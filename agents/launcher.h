// ProcessLauncher owns the replica processes of one node: it starts them, stops them, reaps
// them and reports what happened. It is the agent's ReplicaRuntime (replica_runtime.h) for plain
// processes, and keeps that interface's contract; what follows is how.
//
// Every run is one process launched for a LaunchReplica and is named by its run id
// ("<job>/<attempt>/<replica>/<restart>"). For each run id it is given, the launcher delivers
// exactly one ReplicaExited, preceded by one ReplicaStarted when the process did start. A launch
// that fails (command not found, fork error, ...) is reported as a ReplicaExited with
// launch_failed set, never as a ReplicaStarted.
//
// Each process runs in its own session, so its pid is also its process group id. Stop() signals
// the whole group; when the group leader exits, the rest of the group is SIGKILLed so no
// stragglers outlive the run. stdout and stderr go to the run's log file (see run_files.h).
// A run with resources.memory_mb > 0 is SIGKILLed (and reported oom_killed) when its process
// group's resident memory exceeds that limit. With Options::cgroups every run also gets cgroups
// of its own (run_isolation.h): a hard memory limit, whose kernel OOM kills are reported as
// oom_killed too, a CPU quota, pids.max, a cpuset under Options::cpu_policy static, and no access
// to the device nodes of GPUs that are not its own. Every process gets TRAINCTL_PROGRESS_FILE, a
// file in its working directory; touching it, or writing into the checkpoint directory, is
// reported as a ReplicaProgress. Every process also gets TRAINCTL_PREEMPTION_NOTICE, the path of
// the file a notice writes (preemption_notice.h; Notice()).
//
// Users (Options::run_as, run_user.h): a launcher running as root starts each replica as the
// user its policy picks for the launch, never as root unless the policy allows it; the run's
// working directory (then mode 0700), checkpoint directory and log file are chowned to that user.
// So that the user can reach its directory, the launcher gives --work-dir and its jobs/
// directory search permission for everyone (mode | 0111, and 0711 for jobs/) at construction; no
// one but root can list them. A launcher that is not root runs replicas as itself.
//
// Preflight (Options::preflight): a launch whose preflight fails starts nothing and is reported
// as a launch failure with preflight_failed and the failed check run.
//
// Every run has a trainctl-shim (agents/shim/shim_protocol.h), its supervisor: the launcher
// never forks itself. Launch() records the run in its directory (run_records.h), posix_spawns the
// shim (shim_spawn.h) and returns; the shim starts the replica and says so on the ready pipe (then
// ReplicaStarted is reported), writes how it ended to the run's status file, and exits. The
// monitor thread waits on the shims' pidfds and ready pipes with epoll: no polling. Stops are
// signals to the shim, which forwards them to the replica's process group.
//
// Replicas outlive the launcher: its destructor stops watching and leaves every shim running.
// AdoptRecordedRuns() of the next launcher (after an agent restart, crash or upgrade) watches the
// shims that still run and reports the true end of every replica that ended meanwhile, from its
// status file. Run directories stay until ForgetRun(), which the agent calls once it has
// journaled the exit report (report_journal.h). Only Stop(), StopAll() or an operator
// (`trainctl-agent --stop-replicas`) stop replicas.
//
//   ProcessLauncher launcher({.work_dir = "/var/lib/trainctl",
//                             .on_started = [](v1::ReplicaStarted s) { ... },
//                             .on_exited = [](v1::ReplicaExited e) { ... }});
//   launcher.Launch(launch_message);
//   launcher.Stop(run_id, /*grace_ms=*/10000, "job cancelled");
//
// Thread-safety: all public methods may be called from any thread. Callbacks run on the
// launcher's threads (Launch's caller for ReplicaStarted and launch failures, the monitor thread
// for exits) with no launcher lock held; they may call back into the launcher but should not
// block for long, since they delay reaping.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/progress_pattern.h"
#include "agents/replica_runtime.h"
#include "agents/run_isolation.h"
#include "agents/run_records.h"
#include "agents/shim_spawn.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

class ProcessLauncher final : public ReplicaRuntime {
 public:
  // Starts the monitor thread.
  explicit ProcessLauncher(Options options);
  ProcessLauncher(const ProcessLauncher&) = delete;
  ProcessLauncher& operator=(const ProcessLauncher&) = delete;
  // Stops watching. Every shim keeps running, and with it its replica: the next launcher on the
  // work dir adopts them (AdoptRecordedRuns). Call StopAll() and WaitUntilIdle() first to end
  // them.
  ~ProcessLauncher() override;

  // Starts the run described by `launch`: returns once its shim was started, or the launch failed
  // (then reported at once). ReplicaStarted follows from the monitor thread when the replica runs.
  // A run id the launcher already knows is ignored. Creates the working directory, the
  // checkpoint directory, the log file and the run's directory.
  void Launch(const trainctl::v1::LaunchReplica& launch) override ABSL_LOCKS_EXCLUDED(mu_);

  // Takes over the runs an earlier launcher on this work dir left: a run whose shim still runs is
  // watched again, as a running run that reports no ReplicaStarted; a run that ended meanwhile
  // is reported now, through on_exited, as its status file says (its true exit code); a run whose
  // shim died is stopped and reported without a status, and one that never started as a launch
  // failure. Runs in `reported` (their exit is already journaled) are only forgotten. Returns the
  // runs that still run. Call before the first Register, so that it lists them.
  std::vector<std::string> AdoptRecordedRuns(const std::set<std::string>& reported = {}) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Deletes the run's directory: its exit report is safe elsewhere. Logs a failure.
  void ForgetRun(const std::string& run_id) const override;

  // Sends SIGTERM to the run's process group, and SIGKILL if it is still alive `grace_ms` later
  // (at once when grace_ms <= 0). For StopReplica: the exit report says stopped_by_request. A
  // stop that arrives while the run is still being launched takes effect once it has started.
  // OK when the run already exited; NOT_FOUND for an unknown run id.
  absl::Status Stop(const std::string& run_id, int64_t grace_ms, const std::string& reason) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Stops every run that has not exited, like Stop(), for the agent's own reasons (shutdown):
  // their exit reports do not say stopped_by_request, since the scheduler did not ask.
  void StopAll(int64_t grace_ms, const std::string& reason) override ABSL_LOCKS_EXCLUDED(mu_);

  // See ReplicaRuntime::Notice. The file is owned by the owner of the run's working directory
  // (the replica's user) when the launcher runs as root; the signal goes through the run's shim,
  // like a stop's. Delivery is recorded in the run's directory, so an adopting launcher keeps it.
  absl::Status Notice(const trainctl::v1::NoticeReplica& notice) override ABSL_LOCKS_EXCLUDED(mu_);

  // Stops every run that is launching or running and not being stopped yet, like StopAll(),
  // because the agent fenced (agent.h): their exit reports say fenced. Returns how many. Until
  // Unfence(), a Launch() of a new run starts nothing and reports a fenced launch failure: the
  // scheduler may have given the node's work to others, and a launch sent before it did (or
  // delivered late by a network that comes back) must not run beside its replacement.
  int Fence(int64_t grace_ms, const std::string& reason) override ABSL_LOCKS_EXCLUDED(mu_);
  // The scheduler answered again after a Fence(): launches start again.
  void Unfence() override ABSL_LOCKS_EXCLUDED(mu_);
  // Reports the launch of `run_id` as refused because the agent is fenced (`reason`), starting
  // nothing; a later Launch() of the run id is ignored.
  void RefuseFencedLaunch(const std::string& run_id, const std::string& reason) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // From now on, Launch() of a new run id reports a launch failure (the host's) with `reason`
  // instead of starting it. For shutdown: call before StopAll() so no run starts after it.
  void RejectNewLaunches(const std::string& reason) override ABSL_LOCKS_EXCLUDED(mu_);

  // Reads the run's captured output from `offset`, at most `max_bytes` (<= 0: 1 MiB; capped
  // 64 KiB under 4 MiB, so that a LogData fits gRPC's default 4 MiB message limit). `complete` is
  // set when the run has exited and nothing is left after next_offset. A run this launcher no
  // longer remembers is still read from its log file, as exited. Problems are reported in
  // LogData.error. request_id is left for the caller to fill.
  trainctl::v1::LogData ReadLog(const std::string& run_id, int64_t offset,
                                int64_t max_bytes) const override ABSL_LOCKS_EXCLUDED(mu_);

  // True once the run is kExited, or unknown to this launcher; false while it is launching,
  // running or exiting (its end being reported). Defined in launcher_monitor.cc.
  bool LogFinal(const std::string& run_id) const override ABSL_LOCKS_EXCLUDED(mu_);
  pid_t ProcessGroupOf(const std::string& run_id) const override ABSL_LOCKS_EXCLUDED(mu_);

  // Every process that runs (pid known and exit not yet reported), with running = true.
  std::vector<trainctl::v1::KnownRun> KnownRuns() const override ABSL_LOCKS_EXCLUDED(mu_);

  // Number of runs being launched or running.
  int ActiveCount() const override ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until no run is being launched or running and every exit was reported. Returns false
  // if `deadline` passed first.
  bool WaitUntilIdle(absl::Time deadline) const override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class RunState { kLaunching, kRunning, kExiting, kExited };

  struct Run {
    std::string log_path;
    RunState state = RunState::kLaunching;
    // The replica, also its process group; 0 until its shim said it started.
    pid_t pid = 0;
    // Its shim, from kRunning on: a pidfd of it, and the read end of its ready pipe until the
    // ready line was read (-1 after).
    pid_t shim_pid = 0;
    int pidfd = -1;
    int ready_fd = -1;
    // Its epoll tokens: `token` for the pidfd, token + 1 for the ready pipe; 0 while unwatched.
    uint64_t token = 0;
    // Taken over from an earlier launcher (AdoptRecordedRuns): its shim is not our child.
    bool adopted = false;
    // For the report of a failed start: the command as given, the working dir, the user.
    std::string argv0;
    std::string working_dir;
    std::string user_name;
    // 0: no limit.
    int64_t memory_limit_bytes = 0;
    // Its exclusive CPUs (RunIsolation::Prepared), for its run record; "" for none.
    std::string exclusive_cpus;
    // Where signs of progress appear (progress_watch.h), and the newest one reported so far
    // (at first the start time).
    std::string progress_file;
    std::string checkpoint_dir;
    int64_t progress_ms = 0;
    // scheduling.progressPattern, compiled (null: none), and how far its log was read for it
    // (progress_pattern.h).
    std::shared_ptr<const re2::RE2> step_pattern;
    int64_t step_offset = 0;
    // Stop() or StopAll() was called; SIGKILL is due at kill_at.
    bool stopping = false;
    // Stop() was called: the scheduler asked.
    bool stopped_by_request = false;
    // Stopped by StopAll(): the agent is shutting down.
    bool stopped_by_node = false;
    // Stopped by Fence().
    bool fenced = false;
    // When to SIGKILL a stopped run; InfiniteFuture when not stopping.
    absl::Time kill_at = absl::InfiniteFuture();
    bool kill_sent = false;
    bool oom_killed = false;
  };

  // Reports a launch that failed with `error` (INVALID_ARGUMENT: the user's fault), noting it in
  // the log when `log_fd` >= 0. `preflight`: the failed preflight run that stopped it.
  // `fenced`: refused because the agent is fenced.
  void ReportLaunchFailure(const std::string& run_id, const absl::Status& error, int log_fd,
                           const trainctl::v1::CheckRun* preflight = nullptr, bool fenced = false)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Turns `request` into one whose shim runs the replica in a container (container_launch.h),
  // through Options::prepare_container. `env`: the replica's own variables.
  absl::Status ContainerRequestOf(const trainctl::v1::LaunchReplica& launch,
                                  std::map<std::string, std::string> env,
                                  const RunIsolation::Prepared& isolation, ShimRequest* request);
  // Stop(); `by_request` says whether the scheduler asked.
  absl::Status StopLocked(const std::string& run_id, int64_t grace_ms, const std::string& reason,
                          bool by_request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks the run's shim to send `sig` to the replica's process group.
  void SignalLocked(const std::string& run_id, Run& run, int sig)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts watching the run's pidfd and ready pipe.
  void WatchLocked(const std::string& run_id, Run& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Wakes the monitor thread, to look at deadlines again.
  void Wake() const;

  void MonitorLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // How long the monitor may wait for the next event, in ms (-1: until one comes).
  int NextTimeoutMs(absl::Time next_memory_check, absl::Time next_progress_check)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Sends due SIGKILLs.
  void CheckDeadlines() ABSL_LOCKS_EXCLUDED(mu_);
  void EnforceMemoryLimits() ABSL_LOCKS_EXCLUDED(mu_);
  void ReportProgress() ABSL_LOCKS_EXCLUDED(mu_);
  // Reads the ready line of the run's shim, and reports ReplicaStarted when it started.
  void HandleReady(const std::string& run_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The run's shim exited: reaps it and reports the replica's end from its status file.
  void HandleShimExit(const std::string& run_id) ABSL_LOCKS_EXCLUDED(mu_);
  // A run whose shim is gone and that this launcher never watched (AdoptRecordedRuns).
  void ReportEndedRun(const RunRecord& record) ABSL_LOCKS_EXCLUDED(mu_);
  // Reports the end of a run as its status file (or its absence) says, cleans up after it.
  void ReportEnd(const std::string& run_id) ABSL_LOCKS_EXCLUDED(mu_);
  void ForgetOldRunsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const Options options_;
  const std::string shim_path_;
  const RunRecordStore records_;
  // The launcher runs as root: it switches replicas to Options::run_as's users.
  const bool switch_users_;
  // Thread-safe itself; the launcher's lock may be held when it is called, never the reverse.
  RunIsolation isolation_;
  // The monitor's epoll set and the eventfd that wakes it; constant after construction.
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  // No lock: started by the constructor, joined by the destructor.
  std::thread monitor_;

  mutable absl::Mutex mu_;
  // State below is protected by mu_.
  std::map<std::string, Run> runs_ ABSL_GUARDED_BY(mu_);
  // The runs in kRunning: what the monitor looks at on every wakeup (runs_ also remembers up to
  // kMaxExitedRuns exited ones).
  std::set<std::string> live_ ABSL_GUARDED_BY(mu_);
  // What each epoll token stands for: a run's pidfd (even token) or ready pipe (odd token).
  std::map<uint64_t, std::string> tokens_ ABSL_GUARDED_BY(mu_);
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 2;
  // Exited run ids, oldest first; the oldest are forgotten past a bound.
  std::deque<std::string> exited_order_ ABSL_GUARDED_BY(mu_);
  // Set by RejectNewLaunches(); empty while launches are accepted.
  std::string reject_reason_ ABSL_GUARDED_BY(mu_);
  // Set by Fence(), cleared by Unfence(): why launches are refused meanwhile.
  std::string fence_reason_ ABSL_GUARDED_BY(mu_);
  // Launches still to fail on purpose (Options::inject_launch_failures); -1: all.
  int injected_failures_left_ ABSL_GUARDED_BY(mu_);
  // Tells the monitor thread to end.
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace trainctl::agent
