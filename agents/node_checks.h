// NodeChecker runs this node's check sets for the scheduler (R14, R15, R20) and reports each as a
// v1::CheckRun:
//
//   phase       what runs                                           when
//   "startup"   the startup script (item "startup-script")          before every Register after
//                                                                   a registered stream was lost
//   "preflight" the host items for the job: dns of its hostnames,   before a job attempt's first
//               disk-size, ulimit, gpu-check of its GPUs, and       replica starts here
//               container-runtime for a launch with an image
//   "periodic"  the host items (no hostnames; gpu-check of every    every health check interval
//               GPU the node offers), container-runtime, and the
//               health program
//   "exit"      the same as "periodic"                              after a replica exited
//                                                                   abnormally
//
// The item container-runtime (container_check.h) exists only on a node that runs images
// (NodeCheckConfig::container_runtime set).
//
// Every run is logged one line per item (host_checks.h's "item <name> passed|failed: ..."),
// after a context such as "periodic check: ". The health program and the startup script get
// TRAINCTL_NODE and TRAINCTL_WORK_DIR, run in the work dir, and never run twice at once.
//
//   NodeChecker checker(config, "gpu-01", "/var/lib/trainctl", probe);
//   v1::CheckRun run = checker.RunHealthChecks("periodic", {});
//
// Thread-safe: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/container_check.h"
#include "agents/host_checks.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

// What the node checks, and when; the defaults are the agent's flag defaults.
struct NodeCheckConfig {
  // Thresholds of the host items. host.cache.path is the work dir.
  HostCheckConfig host;
  // The GPUs the node offers, by index: what gpu-check requires of periodic and exit runs. The
  // preflight requires the launch's own (LaunchReplica.gpu_devices).
  std::vector<int32_t> gpu_devices;
  // The node's GPUs are synthetic (--gpus N): nothing to probe, gpu-check passes.
  bool synthetic_gpus = false;
  // Run the preflight before a job attempt's replicas start.
  bool preflight = true;
  // Between periodic runs; zero: no periodic runs.
  absl::Duration health_check_interval = absl::Seconds(60);
  // The operator's health program (item "health-program"); empty: none.
  std::string health_check_program;
  absl::Duration health_check_timeout = absl::Seconds(30);
  // Run before registering (item "startup-script"); empty: none.
  std::string startup_script;
  absl::Duration startup_script_timeout = absl::Minutes(5);
  // The item container-runtime: set on a node that runs images (the agent sets it when its image
  // cache opened); nullopt: no such item.
  std::optional<ContainerCheckConfig> container_runtime;
};

// The proto of a check item.
trainctl::v1::CheckResult ToProto(const CheckResult& result);

// A CheckRun of `phase` at `time_ms` with `results` as its items; passed when all passed.
trainctl::v1::CheckRun MakeCheckRun(const std::string& phase,
                                    const std::vector<CheckResult>& results, int64_t time_ms);

// The failed items of `run`, FormatCheckResult-style, joined with "; ".
std::string DescribeFailures(const trainctl::v1::CheckRun& run);

// ReplicaExited.launch_error of a failed preflight: "preflight failed on <node>: <failures>".
std::string PreflightError(const std::string& node, const trainctl::v1::CheckRun& run);

// True when the exit calls for exit checks (scenario 3 or 4: the host's fault or the user's?):
// a non-zero exit code or a terminating signal, not after a StopReplica, not because the agent
// is shutting down, and not a launch that never started.
bool IsAbnormalExit(const trainctl::v1::ReplicaExited& exited);

// Register.config: the check configuration in words, for `trainctl node describe`. Keys:
// "disk-size root", "disk-size shm", "disk-size cache", "ulimit", "gpu-check", "preflight",
// "health-check-interval", "health-check-program", "health-check-timeout", "startup-script",
// "startup-script-timeout", "container-runtime".
std::map<std::string, std::string> DescribeCheckConfig(const NodeCheckConfig& config);

class NodeChecker {
 public:
  // Polled while a program runs; true kills it.
  using Cancelled = std::function<bool()>;

  // `probe` null: RealHostProbe.
  NodeChecker(NodeCheckConfig config, std::string node, std::string work_dir,
              std::shared_ptr<const HostProbe> probe);

  // The configuration it was made with; host() and SetHost for the host items' thresholds now.
  const NodeCheckConfig& config() const { return config_; }
  // The host items' thresholds every later run uses (trainctl-agent's SIGHUP).
  void SetHost(HostCheckConfig host) ABSL_LOCKS_EXCLUDED(host_mu_);
  HostCheckConfig host() const ABSL_LOCKS_EXCLUDED(host_mu_);

  // The preflight for a launch: the host items for launch.hostnames() and the launch's own GPUs
  // (launch.gpu_devices(); by count, resources.gpus, from a scheduler that sends none), and
  // container-runtime when the launch has an image (launch.image()) and the node runs images.
  // job_id and run_id are the launch's.
  trainctl::v1::CheckRun RunPreflight(const trainctl::v1::LaunchReplica& launch) const;

  // The preflight `shared` of the launch's attempt (run for another of its replicas), as it
  // holds for `launch`: its gpu-check item checked again for the launch's own GPUs, and the run
  // failed when they are missing; container-runtime added when the launch has an image and
  // `shared` (run for a launch without one) has no such item. Unchanged (but for run_id) for a
  // launch without GPUs or on a node with synthetic ones: the rest of the host is the same for
  // every replica.
  trainctl::v1::CheckRun ForReplica(trainctl::v1::CheckRun shared,
                                    const trainctl::v1::LaunchReplica& launch) const;

  // The periodic set (host items, container-runtime, the health program) as `phase` ("periodic"
  // or "exit").
  trainctl::v1::CheckRun RunHealthChecks(const std::string& phase,
                                         const Cancelled& cancelled) const;

  // The startup script's run, or nullopt when none is configured.
  std::optional<trainctl::v1::CheckRun> RunStartupScript(const Cancelled& cancelled) const;

 private:
  // Runs `path` as item `item`, one program at a time.
  CheckResult RunProgramItem(const std::string& item, const std::string& path,
                             absl::Duration timeout, const Cancelled& cancelled) const
      ABSL_LOCKS_EXCLUDED(program_mu_);
  // Logs each item after `context`, and a summary line.
  void Log(const std::string& context, const std::vector<CheckResult>& results) const;

  // Constant after construction.
  const NodeCheckConfig config_;
  const std::string node_;
  const std::string work_dir_;
  const std::shared_ptr<const HostProbe> probe_;

  mutable absl::Mutex host_mu_;
  HostCheckConfig host_ ABSL_GUARDED_BY(host_mu_);
  // Held while a program runs, so that the operator's programs never overlap.
  mutable absl::Mutex program_mu_;
};

// The preflight runs of recent job attempts, so that the replicas of one attempt on this node
// share one run. Bounded: the oldest entries are dropped past `capacity`.
// Thread-safe.
class PreflightCache {
 public:
  explicit PreflightCache(size_t capacity = 256) : capacity_(capacity) {}

  // The cached run of (job_id, attempt), or nullopt.
  std::optional<trainctl::v1::CheckRun> Find(const std::string& job_id, int32_t attempt) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Caches `run` for (job_id, attempt), replacing an earlier one.
  void Insert(const std::string& job_id, int32_t attempt, trainctl::v1::CheckRun run)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Key = std::pair<std::string, int32_t>;
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::map<Key, trainctl::v1::CheckRun> runs_ ABSL_GUARDED_BY(mu_);
  // Keys, oldest first.
  std::deque<Key> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::agent
