// ProcessLauncher owns the replica processes of one node: it starts them, stops them, reaps
// them and reports what happened.
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
// reported as a ReplicaProgress.
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
// Run records (Options::run_records, run_records.h): every started process gets a record, removed
// once the launcher saw it end. AdoptRecordedRuns() takes over the processes an earlier agent
// left running. An adopted run is not this process's child: it is watched through /proc (same pid
// and start time), stopped like any run (its group is signalled), and its exit report carries
// neither exit_code nor signal, since its status cannot be known.
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
#include "agents/cpu_manager.h"
#include "agents/run_cgroup.h"
#include "agents/run_isolation.h"
#include "agents/run_records.h"
#include "agents/run_user.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

class ProcessLauncher {
 public:
  using StartedCallback = std::function<void(trainctl::v1::ReplicaStarted)>;
  using ExitedCallback = std::function<void(trainctl::v1::ReplicaExited)>;
  using ProgressCallback = std::function<void(trainctl::v1::ReplicaProgress)>;
  // Why a launch must not start: the failed preflight run and the launch error to report.
  struct PreflightFailure {
    trainctl::v1::CheckRun run;
    std::string error;
  };
  // Runs (or looks up) the launch's preflight; nullopt lets it start.
  using PreflightCallback =
      std::function<std::optional<PreflightFailure>(const trainctl::v1::LaunchReplica&)>;

  struct Options {
    // Root of the node's job directories and logs; should be absolute. Must exist.
    std::string work_dir;
    StartedCallback on_started;
    ExitedCallback on_exited;
    // Signs of progress of running runs (see progress_watch.h); optional.
    ProgressCallback on_progress;
    // How often running processes are checked for exit and stop deadlines.
    absl::Duration poll_interval = absl::Milliseconds(20);
    // How often resident memory is compared with memory limits.
    absl::Duration memory_check_interval = absl::Milliseconds(250);
    // How often progress files and checkpoint directories are looked at.
    absl::Duration progress_interval = absl::Seconds(1);
    // Base environment of every process, "NAME=VALUE"; empty means the agent's own.
    std::vector<std::string> base_environment;
    // Variables every replica gets from the agent (TRAINCTL_SERVER, TRAINCTL_CA), unless its
    // launch sets them.
    std::map<std::string, std::string> replica_env;
    // For tests of the scheduler's retries: the first N launches fail as the host's fault
    // without starting anything; -1 fails every launch.
    int inject_launch_failures = 0;
    // Where set, every run gets cgroups of its own (run_cgroup.h, run_isolation.h); null: none,
    // and the RSS watch alone enforces memory limits.
    std::shared_ptr<const RunCgroups> cgroups;
    // pids.max of every run's cgroup (--pids-max); 0: no limit.
    int64_t pids_max = kDefaultPidsMax;
    // --cpu-policy: kStatic gives runs that ask for whole CPUs exclusive ones (cpu_manager.h).
    CpuPolicy cpu_policy = CpuPolicy::kNone;
    // kStatic: how many of the lowest-numbered CPUs are never exclusive (at least 1).
    int min_shared_cpus = 1;
    // kStatic: the CPUs runs are placed on; empty: the agent's affinity mask.
    std::set<int> cpus;
    // The node's GPUs: a run may open the device nodes (/dev/nvidia<minor>) of only those its
    // LaunchReplica.gpu_devices names. Empty: no device is denied.
    std::vector<trainctl::v1::GpuDevice> gpu_inventory;
    // Optional; called by Launch() on its caller's thread before anything of the run is created.
    PreflightCallback preflight;
    // Where set, started runs are recorded there (see the file comment).
    std::shared_ptr<const RunRecordStore> run_records;
    // Who replicas run as when the launcher runs as root (see the file comment).
    RunAsPolicy run_as;
  };

  // Starts the monitor thread.
  explicit ProcessLauncher(Options options);
  ProcessLauncher(const ProcessLauncher&) = delete;
  ProcessLauncher& operator=(const ProcessLauncher&) = delete;
  // Stops the monitor thread, then SIGKILLs and reaps every process still running, without
  // reporting. Call StopAll() and WaitUntilIdle() first for a graceful end.
  ~ProcessLauncher();

  // Starts the run described by `launch` and returns once it runs or failed to start (the
  // outcome goes to the callbacks). A run id the launcher already knows is ignored. Creates the
  // working directory, the checkpoint directory and the log file. Blocks for the fork and exec.
  void Launch(const trainctl::v1::LaunchReplica& launch) ABSL_LOCKS_EXCLUDED(mu_);

  // Takes over every process of Options::run_records that still runs, as a running run that
  // reports no ReplicaStarted; deletes the records of those that are gone. Returns the adopted
  // run ids. Call before the first Register, so that it lists them.
  std::vector<std::string> AdoptRecordedRuns() ABSL_LOCKS_EXCLUDED(mu_);

  // Sends SIGTERM to the run's process group, and SIGKILL if it is still alive `grace_ms` later
  // (at once when grace_ms <= 0). For StopReplica: the exit report says stopped_by_request. A
  // stop that arrives while the run is still being launched takes effect once it has started.
  // OK when the run already exited; NOT_FOUND for an unknown run id.
  absl::Status Stop(const std::string& run_id, int64_t grace_ms, const std::string& reason)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Stops every run that has not exited, like Stop(), for the agent's own reasons (shutdown):
  // their exit reports do not say stopped_by_request, since the scheduler did not ask.
  void StopAll(int64_t grace_ms, const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);

  // From now on, Launch() of a new run id reports a launch failure (the host's) with `reason`
  // instead of starting it. For shutdown: call before StopAll() so no run starts after it.
  void RejectNewLaunches(const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);

  // Reads the run's captured output from `offset`, at most `max_bytes` (<= 0: 1 MiB; capped
  // 64 KiB under 4 MiB, so that a LogData fits gRPC's default 4 MiB message limit). `complete` is
  // set when the run has exited and nothing is left after next_offset. A run this launcher no
  // longer remembers is still read from its log file, as exited. Problems are reported in
  // LogData.error. request_id is left for the caller to fill.
  trainctl::v1::LogData ReadLog(const std::string& run_id, int64_t offset, int64_t max_bytes) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every process that runs (pid known and exit not yet reported), with running = true.
  std::vector<trainctl::v1::KnownRun> KnownRuns() const ABSL_LOCKS_EXCLUDED(mu_);

  // Number of runs being launched or running.
  int ActiveCount() const ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until no run is being launched or running and every exit was reported. Returns false
  // if `deadline` passed first.
  bool WaitUntilIdle(absl::Time deadline) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class RunState { kLaunching, kRunning, kExiting, kExited };

  struct Run {
    std::string log_path;
    RunState state = RunState::kLaunching;
    // The process and its group; valid in kRunning and kExiting.
    pid_t pid = 0;
    // Taken over from an earlier agent (AdoptRecordedRuns): not a child of this process.
    bool adopted = false;
    // adopted: the process's start time (ProcStat::start_ticks), which tells it from a process
    // that reuses its pid.
    uint64_t start_ticks = 0;
    // 0: no limit.
    int64_t memory_limit_bytes = 0;
    // Its exclusive CPUs (RunIsolation::Prepared), for its run record; "" for none.
    std::string exclusive_cpus;
    // Where signs of progress appear (progress_watch.h), and the newest one reported so far
    // (at first the start time).
    std::string progress_file;
    std::string checkpoint_dir;
    int64_t progress_ms = 0;
    // Stop() or StopAll() was called; SIGKILL is due at kill_at.
    bool stopping = false;
    // Stop() was called: the scheduler asked.
    bool stopped_by_request = false;
    // Stopped by StopAll(): the agent is shutting down.
    bool stopped_by_node = false;
    // When to SIGKILL a stopped run; InfiniteFuture when not stopping.
    absl::Time kill_at = absl::InfiniteFuture();
    bool kill_sent = false;
    bool oom_killed = false;
  };

  // Reports the started process, then hands it to the monitor.
  void FinishLaunch(const std::string& run_id, pid_t pid, int64_t start_time_ms)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Reports a launch that failed with `error` (INVALID_ARGUMENT: the user's fault), noting it in
  // the log when `log_fd` >= 0. `preflight`: the failed preflight run that stopped it.
  void ReportLaunchFailure(const std::string& run_id, const absl::Status& error, int log_fd,
                           const trainctl::v1::CheckRun* preflight = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Records the started run (Options::run_records); logs a failure.
  void WriteRecord(const std::string& run_id, pid_t pid) ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveRecord(const std::string& run_id);
  // Stop(); `by_request` says whether the scheduler asked.
  absl::Status StopLocked(const std::string& run_id, int64_t grace_ms, const std::string& reason,
                          bool by_request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Signals a running, unreaped run's group. REQUIRES: mu_ held.
  void SignalLocked(const std::string& run_id, Run& run, int sig)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MonitorLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // A running run, as the monitor checks it for its end.
  struct Watched {
    std::string run_id;
    pid_t pid = 0;
    bool adopted = false;
    uint64_t start_ticks = 0;
  };
  // Sends due SIGKILLs; returns the runs to check for exit.
  std::vector<Watched> CheckDeadlines() ABSL_LOCKS_EXCLUDED(mu_);
  void EnforceMemoryLimits() ABSL_LOCKS_EXCLUDED(mu_);
  void ReportProgress() ABSL_LOCKS_EXCLUDED(mu_);
  // Reaps the run if its leader exited, kills its stragglers and reports the exit.
  void MaybeReap(const std::string& run_id, pid_t pid) ABSL_LOCKS_EXCLUDED(mu_);
  // For an adopted run: reports its end once its process is gone, killing its group's rest.
  void MaybeReportAdoptedEnd(const Watched& watched) ABSL_LOCKS_EXCLUDED(mu_);
  // Finishes a run whose process is gone: drops its record and cgroup and reports its exit.
  // `status` is the wait status, or nullopt for an adopted run (not our child: unknown).
  void ReportEnd(const std::string& run_id, pid_t pid, std::optional<int> status)
      ABSL_LOCKS_EXCLUDED(mu_);
  void ForgetOldRunsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const Options options_;
  // The launcher runs as root: it switches replicas to Options::run_as's users.
  const bool switch_users_;
  // Thread-safe itself; the launcher's lock may be held when it is called, never the reverse.
  RunIsolation isolation_;
  // No lock: started by the constructor, joined by the destructor.
  std::thread monitor_;

  mutable absl::Mutex mu_;
  // State below is protected by mu_.
  std::map<std::string, Run> runs_ ABSL_GUARDED_BY(mu_);
  // Exited run ids, oldest first; the oldest are forgotten past a bound.
  std::deque<std::string> exited_order_ ABSL_GUARDED_BY(mu_);
  // Set by RejectNewLaunches(); empty while launches are accepted.
  std::string reject_reason_ ABSL_GUARDED_BY(mu_);
  // Launches still to fail on purpose (Options::inject_launch_failures); -1: all.
  int injected_failures_left_ ABSL_GUARDED_BY(mu_);
  // Tells the monitor thread to end.
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace trainctl::agent
