// ReplicaRuntime is how an agent runs the replicas of its node: what the agent asks of whatever
// starts, watches and stops replica processes. ProcessLauncher (launcher.h) is the runtime of
// plain processes under a trainctl-shim; a runtime of containers is a second implementation of
// this interface, not a fork of the launcher. The shape is Mesos' containerizer: recover what an
// earlier agent left (AdoptRecordedRuns), launch, report each end (Options::on_exited), stop.
//
// The contract every runtime keeps, which the agent (agent.h) and the scheduler rely on:
// - Runs are named by their run id ("<job>/<attempt>/<replica>/<restart>"). For each run id it is
//   given, the runtime delivers exactly one ReplicaExited, preceded by one ReplicaStarted when the
//   replica did start. A launch that fails is a ReplicaExited with launch_failed set (and
//   failure_is_user's set when the spec, not the host, is at fault), never a ReplicaStarted. A
//   run id it already knows is ignored.
// - Replicas outlive the runtime object and the agent process: destroying a runtime stops
//   watching and leaves replicas running; the next runtime on the same work dir adopts them
//   (AdoptRecordedRuns) and reports their true ends. Only Stop(), StopAll() and Fence() end them.
// - A run's end stays recorded on the node until ForgetRun(), which the agent calls once the
//   exit report is journaled (report_journal.h): no exit is lost to an agent crash.
// - Callbacks run on the runtime's threads with no runtime lock held; they may call back into it
//   but should not block for long.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agents/container_launch.h"
#include "agents/cpu_manager.h"
#include "agents/job_scratch.h"
#include "agents/run_cgroup.h"
#include "agents/run_isolation.h"
#include "agents/run_user.h"
#include "agents/shim/log_cap.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

class ReplicaRuntime {
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
  // The directory a launch with a workdir_digest starts in (its job's unpacked working
  // directory), readable by `group` when set; an error fails the launch (see workdir_cache.h).
  using WorkdirCallback = std::function<absl::StatusOr<std::string>(
      const trainctl::v1::LaunchReplica&, std::optional<gid_t> group)>;
  // For a launch with an image: what the launcher decided for the run goes in (its image left
  // for the callback to fill), the runc command its shim is to run comes out
  // (container_launch.h); an error fails the launch.
  using ContainerCallback = std::function<absl::StatusOr<PreparedContainer>(ContainerInputs)>;

  // What the agent gives a runtime: where the node keeps runs, where reports go, and the node's
  // limits on every run. A runtime ignores what it has no use for.
  struct Options {
    // Root of the node's job directories and logs; should be absolute. Must exist.
    std::string work_dir;
    // Where the run directories live (run_records.h): state that must outlive the agent process
    // but not the host, so best on a tmpfs such as /run; empty: work_dir.
    std::string state_dir;
    StartedCallback on_started;
    ExitedCallback on_exited;
    // Signs of progress of running runs (see progress_watch.h); optional.
    ProgressCallback on_progress;
    // The trainctl-shim binary; empty: DefaultShimPath() (shim_spawn.h).
    std::string shim_path;
    // How often resident memory is compared with memory limits.
    absl::Duration memory_check_interval = absl::Milliseconds(250);
    // Called by the runtime's watching thread on every pass, which then comes at least every
    // 500 ms, idle or not: the agent's watchdog (common/watchdog.h). Optional.
    std::function<void()> alive;
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
    // Called by Launch() on its caller's thread for a launch with a workdir_digest; unset, such
    // a launch fails.
    WorkdirCallback prepare_workdir;
    // Called by Launch() on its caller's thread for a launch with an image; unset, such a launch
    // fails.
    ContainerCallback prepare_container;
    // Called once for every run whose end is reported, or whose launch failed after
    // prepare_container succeeded, before its cgroups are removed: for RemoveContainer.
    std::function<void(const std::string& run_id)> on_run_end;
    // Who replicas run as when the runtime runs as root (run_user.h).
    RunAsPolicy run_as;
    // The most bytes of each run's log the disk keeps (--max-log-mb; agents/shim/log_cap.h): the
    // first and the last part stay. 0: no cap.
    int64_t max_log_bytes = shim::kDefaultLogLimit;
    // tmpfs's size= of each job's private /tmp and /dev/shm (--job-tmpfs-size, job_scratch.h),
    // mounted under <state dir>/scratch; "": replicas get the host's.
    std::string job_tmpfs_size = kDefaultJobTmpfsSize;
  };

  // Builds the runtime an agent uses, from the agent's options for it.
  using Factory = std::function<std::unique_ptr<ReplicaRuntime>(Options)>;

  virtual ~ReplicaRuntime() = default;

  // Recovery: takes over the runs an earlier runtime on this work dir left. A run that still
  // runs is watched again (and reports no ReplicaStarted); a run that ended meanwhile is reported
  // now, with its true end; one that never started is a launch failure. Runs in `reported`
  // (their exit is already journaled) are only forgotten. Returns the runs that still run. The
  // agent calls it before its first Register, so that it lists them.
  virtual std::vector<std::string> AdoptRecordedRuns(const std::set<std::string>& reported) = 0;

  // Starts the run `launch` describes: returns once it is under way or failed (then reported at
  // once). ReplicaStarted follows when the replica runs.
  virtual void Launch(const trainctl::v1::LaunchReplica& launch) = 0;

  // SIGTERM to the replica, SIGKILL `grace_ms` later (at once when <= 0), because the scheduler
  // asked: the exit report says stopped_by_request. A stop during the launch takes effect once
  // it started. OK when the run already exited; NOT_FOUND for an unknown run id.
  virtual absl::Status Stop(const std::string& run_id, int64_t grace_ms,
                            const std::string& reason) = 0;
  // Stops every run that has not exited, like Stop(), for the agent's own reasons (shutdown,
  // --stop-replicas): the reports do not say stopped_by_request.
  virtual void StopAll(int64_t grace_ms, const std::string& reason) = 0;
  // A notice (NoticeReplica): the run must checkpoint and exit by its deadline. Writes the run's
  // notice file (TRAINCTL_PREEMPTION_NOTICE, preemption_notice.h) and sends notice.signal (0:
  // none) to the replica's process group; the replica keeps running. The same notice again (same
  // kind and deadline) writes and signals nothing, also in a later runtime. OK when the run
  // already ended or is being stopped (nothing is done); UNAVAILABLE while it is still starting;
  // NOT_FOUND for an unknown run id; INVALID_ARGUMENT for a malformed notice.
  virtual absl::Status Notice(const trainctl::v1::NoticeReplica& notice) = 0;

  // The agent lost the scheduler for too long: stops every run not yet being stopped (their
  // reports say fenced) and returns how many; until Unfence(), every new launch is refused as a
  // fenced launch failure, starting nothing.
  virtual int Fence(int64_t grace_ms, const std::string& reason) = 0;
  virtual void Unfence() = 0;
  // Reports the launch of `run_id` as refused because the agent is fenced, starting nothing; a
  // later Launch() of the run id is ignored.
  virtual void RefuseFencedLaunch(const std::string& run_id, const std::string& reason) = 0;
  // From now on every new launch is a launch failure (the host's) with `reason`: for shutdown.
  virtual void RejectNewLaunches(const std::string& reason) = 0;

  // The run's exit report is journaled: its record on the node may go.
  virtual void ForgetRun(const std::string& run_id) const = 0;

  // The run's captured output from `offset`, at most `max_bytes` (<= 0: 1 MiB; capped to fit a
  // gRPC message); `complete` once the run ended and nothing follows. Problems go in
  // LogData.error; request_id is left for the caller.
  virtual trainctl::v1::LogData ReadLog(const std::string& run_id, int64_t offset,
                                        int64_t max_bytes) const = 0;
  // Whether the run can write no more to its log, so that a copy of the log that reaches the
  // file's end is complete (the log shipper, log_shipper.h): true once the run ended, and for a
  // run the runtime does not know (it ended before this runtime started, or was forgotten);
  // false while it is being launched (an image pulled included), runs, or its end is being
  // reported. Only meaningful for runs that survived an agent restart once AdoptRecordedRuns
  // returned.
  virtual bool LogFinal(const std::string& run_id) const = 0;
  // The process group of a run that is running (its replica process's pid, which leads the
  // group its processes share): whose stacks a capture dumps (stack_capture.h). 0 when the run
  // is unknown or not running (still launching, stopping, or ended).
  virtual pid_t ProcessGroupOf(const std::string& run_id) const = 0;
  // Every replica that runs (started, end not yet reported), with running = true.
  virtual std::vector<trainctl::v1::KnownRun> KnownRuns() const = 0;
  // How many runs are being launched or running.
  virtual int ActiveCount() const = 0;
  // Waits until no run is being launched or running and every end was reported; false if
  // `deadline` passed first.
  virtual bool WaitUntilIdle(absl::Time deadline) const = 0;
};

}  // namespace trainctl::agent
