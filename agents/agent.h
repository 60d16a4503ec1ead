// Agent is trainctl-agent's connection to the scheduler: it registers the node, turns the
// scheduler's commands into calls of its replica runtime (replica_runtime.h; a ProcessLauncher,
// launcher.h), and delivers the runtime's reports.
//
// One bidirectional AgentService.Connect stream at a time. Each stream opens with Register; then
// the agent sends heartbeats (every RegisterAck.heartbeat_interval_ms, 2s until the ack) and
// every ReplicaStarted/ReplicaExited report, and keeps each report until an Ack covers it,
// sending the unacknowledged ones again, in order, after every reconnect. Those reports (all but
// periodic CheckReports, which the next check run replaces) are also journaled in the work dir
// (report_journal.h) before they are sent, and the next agent process sends again what was never
// acknowledged: an agent that dies loses no exit. ReplicaProgress and
// LogData are best effort: dropped when the stream breaks. Every AgentMessage gets the next
// value of one per-process counter as its seq.
//
// When the stream breaks or the scheduler cannot be reached, the agent reconnects with
// exponential backoff (200ms doubling to 5s, with jitter). With several --scheduler addresses
// (trainctld replicas, one leading; scheduler_link.h) it dials the next one at once until each
// failed in a row, and the leader a standby names at once.
//
// Leaving a stream early (leader_guard.h): when a message answered by an ack (Register,
// Heartbeat) waits longer than --heartbeat-ack-timeout (default: 3 heartbeat intervals, at least
// 3s) the agent cancels the stream and dials again, logging "no heartbeat ack from the scheduler
// at X for 6s; reconnecting" (the fence below is a longer, separate clock). A SchedulerMessage
// whose leader_epoch is lower than the highest this process has seen comes from a deposed leader:
// it is not applied, and the agent leaves that stream too. Replicas keep running meanwhile, and
// also when the agent ends (Shutdown) or dies: each has a trainctl-shim of its own (launcher.h),
// and the next agent on the work dir takes them over. Only the scheduler (StopReplica) or
// StopReplicas() stops them.
//
//   Agent agent(options);
//   std::thread waiter([&] { WaitForSignal(); agent.Shutdown(ack_wait); });
//   agent.Run();  // returns after Shutdown()
//
// StopReplicas does not set stopped_by_request on the exits it causes (the scheduler did not
// ask); the scheduler sees those replicas fail, killed by SIGTERM or SIGKILL.
//
// Host health (node_checks.h), all results through the acknowledged report path:
// - Startup script: runs when Run() starts and again before the first Register after a stream
//   that had been registered was lost (not before every dial while the scheduler is down); its
//   latest run goes in every Register.startup. Register.config describes the checks.
// - Preflight: before a launch, unless Options::checks.preflight is off. One run per (job,
//   attempt) on this node, shared by the attempt's replicas. Passed: a CheckReport, once per
//   attempt, before the first replica's ReplicaStarted. Failed: each replica of the attempt is
//   reported as ReplicaExited{launch_failed, preflight_failed, checks} and never started.
// - Periodic: a CheckReport{phase "periodic"} right after the first startup script run (at
//   once when there is none) and then every interval, and one more whenever the scheduler sends
//   RunChecks (also with periodic checks off); while the scheduler is out of reach only the
//   newest unsent one is kept.
// - Exit checks: an abnormal exit (IsAbnormalExit) is held back until the periodic set ran once
//   more on the exit-check thread, and then reported with the result in ReplicaExited.checks
//   (phase "exit"). Exits that queue up meanwhile share one run. Other reports do not wait.
//   Until then the run shows in Register.runs as KnownRun{running = false}.
// Test hook (Options::delay_exit_status): the exit of a run with that status is held for
//   Options::exit_report_delay on a thread of its own, then handled like any exit; meanwhile it
//   shows in Register.runs as KnownRun{running = false} too.
// Agent restarts: every run has a directory in the work dir (run_records.h); at construction the
// agent loads the journal, then adopts the shims an earlier agent left running, so that the
// first Register lists them as running, the scheduler can stop the ones it no longer wants, and
// the ones it keeps are reported with their true exit when they end. Replicas that ended while
// no agent ran are reported at once, with their exit code (launcher.h).
//
// Fencing (fence_timer.h; docs/operators/host-health.md, "Network partitions and fencing: no
// replica runs twice"): the RegisterAck says how long the agent may go without an answer from
// the scheduler (fence_after: its lost timeout minus a margin).
// Once no RegisterAck or HeartbeatAck has answered anything sent in the last fence_after, the
// agent stops every replica itself (SIGTERM, SIGKILL after the ack's fence_grace_ms), logs
// "fenced: no word from the scheduler for 12s; stopped 2 replicas", and reports each exit with
// ReplicaExited.fenced when it gets through again, as it reports any exit. The scheduler moves
// a LOST node's replicas only after its lost timeout plus the margin, when they are gone. Runs
// launched while the agent stays out of touch are fenced too; launches are not refused.
//
// Threads: Run()'s caller connects, runs the startup script and is the only writer; one reader
// thread per stream handles SchedulerMessages (acks, log reads, check requests), and one more
// watches its ack deadline (AckWatch); one worker thread runs launches (with their preflight)
// and stops in arrival order; one thread runs the periodic checks, one the exit checks and one
// the fence; the runtime's threads add reports. One more (log_shipper.h; off with
// Options::ship_logs false) ships the runs' logs on a stream of its own to the scheduler the
// control stream is registered with. The fabric check listener (fabric_check.h) serves other
// agents' probes on threads of its own, and CheckFabric requests run on fabric_checks_
// (agent_fabric.cc).
// Thread-safety: call Run() once, and Shutdown() once, from another thread; every other method from
// any thread.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/agent_image_flags.h"
#include "agents/agent_metrics.h"
#include "agents/fabric_check.h"
#include "agents/fence_timer.h"
#include "agents/host_checks.h"
#include "agents/image_cache.h"
#include "agents/leader_guard.h"
#include "agents/log_shipper.h"
#include "agents/maintenance_file.h"
#include "agents/node_checks.h"
#include "agents/replica_runtime.h"
#include "agents/report_buffer.h"
#include "agents/report_journal.h"
#include "agents/scheduler_link.h"
#include "agents/stack_capture.h"
#include "agents/workdir_cache.h"
#include "common/version.h"
#include "common/work_queue.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::agent {

// Stack captures run a few at once (a node's replicas are dumped in parallel when their attempt
// ends); more wait, up to kMaxStackCaptures, and a stop beyond that goes without stacks.
inline constexpr int kStackCaptureThreads = 8;
inline constexpr size_t kMaxStackCaptures = 1024;
// Fabric checks (CheckFabric) run a few at once; more wait, up to kMaxFabricChecks, and one
// beyond that is answered at once with every probe failed. Each probes up to
// kFabricProbeThreads targets at once.
inline constexpr int kFabricCheckThreads = 4;
inline constexpr size_t kMaxFabricChecks = 64;
inline constexpr int kFabricProbeThreads = 32;
// A CheckFabric without a timeout_ms gets this one.
inline constexpr absl::Duration kDefaultFabricCheckTimeout = absl::Seconds(60);

class Agent {
 public:
  struct Options {
    // The scheduler's agent endpoint, a gRPC target ("host:port"), or several, comma-separated
    // (trainctld replicas; scheduler_link.h). Replicas get it as TRAINCTL_SERVER.
    std::string scheduler;
    // --heartbeat-ack-timeout (leader_guard.h): nullopt: the default; zero: off.
    std::optional<absl::Duration> heartbeat_ack_timeout;
    std::string node;
    std::string address;
    // Absolute; must exist.
    std::string work_dir;
    // Where the run directories and the report journal live (--state-dir): they must outlive the
    // agent process, not the host, so a tmpfs such as /run/trainctl-agent suits them; absolute
    // and existing. Empty: work_dir.
    std::string state_dir;
    trainctl::v1::NodeResources capacity;
    trainctl::v1::NodeResources allocatable;
    std::map<std::string, std::string> labels;
    // TLS to the scheduler, PEM texts: the CA its certificate must chain to, and this node's
    // certificate and key. Empty: plaintext.
    std::string tls_ca_pem;
    std::string tls_cert_pem;
    std::string tls_key_pem;
    // The file tls_ca_pem came from, passed to replicas as TRAINCTL_CA (with TRAINCTL_SERVER and
    // the scheduler's job-scoped TRAINCTL_TOKEN, `trainctl progress` works in a replica).
    std::string tls_ca_path;
    // The variables of the agent's environment its replicas inherit (--pass-env); nothing else.
    std::vector<std::string> pass_env = {"PATH", "LANG", "HOME"};
    // Who replicas run as when the agent runs as root (--run-as, --default-run-as-user,
    // --allow-root-replicas; launcher.h).
    RunAsPolicy run_as;
    // Every GPU of the node (capacity.gpus of them), registered with the scheduler.
    std::vector<trainctl::v1::GpuDevice> gpu_devices;
    // Reconnect backoff: starts at `initial_backoff`, doubles up to `max_backoff`, +-20% jitter.
    absl::Duration initial_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(5);
    // Passed to the launcher: the trainctl-shim binary ("": next to this program) and how often
    // progress files are looked at.
    std::string shim_path;
    absl::Duration progress_interval = absl::Seconds(1);
    // --maintenance-file (maintenance_file.h); empty: none.
    std::string maintenance_file;
    int inject_launch_failures = 0;
    // Per-run cgroups (launcher.h): pids.max of each run (0: none), the CPU policy, and how many
    // CPUs always stay shared under CpuPolicy::kStatic.
    int64_t pids_max = kDefaultPidsMax;
    // Each job's private /tmp and /dev/shm (--job-tmpfs-size, job_scratch.h); "": none.
    std::string job_tmpfs_size = kDefaultJobTmpfsSize;
    // The most bytes of each run's log kept on disk (--max-log-mb); 0: no cap.
    int64_t max_log_bytes = shim::kDefaultLogLimit;
    // Ship every run's log to the scheduler's copy (log_shipper.h; --no-log-shipping turns it
    // off), looking for new bytes every log_ship_interval (--log-ship-interval).
    bool ship_logs = true;
    absl::Duration log_ship_interval = absl::Milliseconds(200);
    // How stacks are captured before the stops that ask for it and on request
    // (StopReplica.capture_stacks, DumpStacks; agent_stacks.cc); a zero timeout captures none.
    StackCaptureOptions stacks;
    CpuPolicy cpu_policy = CpuPolicy::kNone;
    int min_shared_cpus = 1;
    // Test hook: hold the exit of every run whose status is `delay_exit_status` (0..255; a run
    // killed by signal N has status 128+N) for `exit_report_delay` before it is reported (and
    // before its exit checks). -1: off.
    int delay_exit_status = -1;
    absl::Duration exit_report_delay = absl::ZeroDuration();
    // What the node checks, and when. checks.gpu_devices and checks.synthetic_gpus are taken
    // from gpu_devices, and an empty checks.host.cache.path becomes work_dir.
    NodeCheckConfig checks;
    // The host as the check items see it; null: the real one (RealHostProbe). For tests.
    std::shared_ptr<const HostProbe> probe;
    // Called on every pass of the loop that watches the replicas (the launcher's monitor),
    // connected to the scheduler or not: the agent's watchdog. Optional.
    std::function<void()> alive;
    // Builds the runtime that runs the node's replicas from the agent's options for it
    // (replica_runtime.h); null: a ContainerRuntime (container_runtime.h) where the node can run
    // images (it is then labelled trainctl.io/images=true), else a ProcessLauncher (launcher.h).
    ReplicaRuntime::Factory runtime;
    // Replicas in images: the cache, registries, binds, CDI (agent_image_flags.h).
    ImageFlags images;
    // Where launches, exits and check runs are counted (--metrics-listen; not owned, must
    // outlive the agent); null: nowhere.
    AgentMetrics* metrics = nullptr;
    // The fabric check before multi-node gangs (--gang-check-*; agent_fabric.cc): the listener,
    // started at construction (its port goes in Register.fabric_port), and what is judged.
    FabricCheckOptions fabric;
  };

  // The release this agent reports in its registration (common/version.h).
  static constexpr const char* kVersion = ::trainctl::kVersion;
  // The report journal, in the work dir.
  static constexpr char kJournalFile[] = "reports.journal";

  explicit Agent(Options options);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  // Ends the worker thread. Replicas keep running (see the file comment). REQUIRES: Run() is not
  // running.
  ~Agent();

  // Connects, serves and reconnects until Shutdown(); then returns.
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  // Stops accepting launches, lets the launches already received finish starting, waits up to
  // `ack_wait` for the scheduler to acknowledge every report (each is journaled anyway), then
  // makes Run() return. Replicas keep running. Blocks until then (Run() itself may still be
  // finishing).
  void Shutdown(absl::Duration ack_wait) ABSL_LOCKS_EXCLUDED(mu_);

  // Replaces the host check items' thresholds (the paths and minimums of --check-*, and
  // --infiniband) for every later check run, and in Register.config from the next registration
  // on. The cache item's path stays the work dir.
  void SetHostChecks(HostCheckConfig host) ABSL_LOCKS_EXCLUDED(mu_);

  // Stops accepting launches, stops every replica (SIGTERM, SIGKILL after `grace`) and waits
  // until they are reaped and their exits reported (queued for the scheduler).
  void StopReplicas(absl::Duration grace) ABSL_LOCKS_EXCLUDED(mu_);

  // A random id, new for every process.
  const std::string& instance() const { return instance_; }
  // The number of reports not acknowledged yet, exits waiting for their exit checks included.
  size_t UnackedReports() const ABSL_LOCKS_EXCLUDED(mu_);
  // Replicas supervised now (launched or adopted, not ended).
  int ActiveRuns() const { return runtime_->ActiveCount(); }
  // Whether the current stream got its RegisterAck.
  bool Registered() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return registered_;
  }

 private:
  struct StreamOutcome {
    // Register was written.
    bool connected = false;
    // A RegisterAck arrived.
    bool registered = false;
    grpc::Status status;
    // The leader its status names: a standby ended it.
    std::optional<trainctl::v1::LeaderInfo> leader;
    // Why the agent left it (no ack in time, a deposed leader); "" when it did not.
    std::string left;
  };
  // The link to options.scheduler, on channels MakeChannel makes (agent_connect.cc).
  static SchedulerLink MakeLink(const Options& options);
  // Runs one stream from Register to its end.
  StreamOutcome RunStream() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes queued messages and heartbeats until the stream breaks or the agent stops.
  void WriteLoop(grpc::ClientReaderWriterInterface<trainctl::v1::AgentMessage,
                                                   trainctl::v1::SchedulerMessage>* stream)
      ABSL_LOCKS_EXCLUDED(mu_);
  void ReadLoop(grpc::ClientReaderWriterInterface<trainctl::v1::AgentMessage,
                                                  trainctl::v1::SchedulerMessage>* stream)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels the stream of `context` once a message waits for its ack past ack_'s deadline;
  // returns then, or when the stream ends (stream_broken_). One per stream (agent_connect.cc).
  void AckWatch(grpc::ClientContext* context) ABSL_LOCKS_EXCLUDED(mu_);
  void Handle(const trainctl::v1::SchedulerMessage& message) ABSL_LOCKS_EXCLUDED(mu_);
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Options::checks.preflight: the launch's preflight, from the cache or run now.
  // The node's image cache per options.images, or null (logged why) when it runs no images.
  static std::shared_ptr<ImageCache> OpenImageCache(const Options& options);
  // The runtime of the node's replicas (see Options::runtime).
  std::unique_ptr<ReplicaRuntime> MakeRuntime(ReplicaRuntime::Options runtime_options);
  // Answers a PrepullImage from a thread of its own.
  void Prepull(const trainctl::v1::PrepullImage& request) ABSL_LOCKS_EXCLUDED(mu_);
  // StopReplica with capture_stacks: captures the run's stacks on stack_captures_, reports them
  // (journaled, before the run's exit), then stops the run; stops it at once when captures are
  // off or too many wait (agent_stacks.cc).
  void CaptureThenStop(const trainctl::v1::StopReplica& stop) ABSL_LOCKS_EXCLUDED(mu_);
  // Answers a DumpStacks on stack_captures_.
  void DumpStacksNow(const trainctl::v1::DumpStacks& request) ABSL_LOCKS_EXCLUDED(mu_);
  // Answers a CheckFabric on fabric_checks_ (agent_fabric.cc): probes every target, then runs
  // --gang-check-program when asked, and sends one FabricReport (not journaled).
  void CheckFabricNow(const trainctl::v1::CheckFabric& request) ABSL_LOCKS_EXCLUDED(mu_);
  // The check itself, on a thread of fabric_checks_.
  trainctl::v1::FabricReport RunFabricCheck(const trainctl::v1::CheckFabric& request);
  // Starts fabric_listener_ and fabric_checks_ (constructor); stops them (destructor), killing
  // a check program still running.
  void StartFabricChecks();
  void StopFabricChecks();
  // The stacks of the run's processes now, with `reason`.
  trainctl::v1::ReplicaStacks CaptureRun(const std::string& run_id, const std::string& reason);
  // The settings of the node's containers.
  ContainerSettings ContainerSettingsOf() const;

  std::optional<ReplicaRuntime::PreflightFailure> Preflight(
      const trainctl::v1::LaunchReplica& launch) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the exit checks for the exits in pending_exits_ and reports them.
  void ExitCheckLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Options::delay_exit_status: hands each exit in delayed_exits_ to QueueExit when it is due.
  void DelayedExitLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the periodic checks every interval, and when the scheduler asks, until the agent stops.
  void HealthCheckLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the startup script, if any, and keeps its run for Register.
  void RunStartupScript() ABSL_LOCKS_EXCLUDED(mu_);
  // Where runtime reports arrive: an abnormal exit waits for its exit checks.
  void OnExited(trainctl::v1::ReplicaExited exited) ABSL_LOCKS_EXCLUDED(mu_);
  // Reports an exit, or queues it for its exit checks when it is abnormal.
  void QueueExit(trainctl::v1::ReplicaExited exited) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Builds the Register for a new stream and resets the per-stream state.
  trainctl::v1::AgentMessage StartStream() ABSL_LOCKS_EXCLUDED(mu_);
  void AddReport(trainctl::v1::AgentMessage report) ABSL_LOCKS_EXCLUDED(mu_);
  // Journals the report, then queues it for the scheduler; for an exit, forgets the run's
  // directory (its end is in the journal now).
  void AddReportLocked(trainctl::v1::AgentMessage report) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops every replica whenever the scheduler has not answered for fence_after, until the
  // agent is destroyed (agent_fence.cc).
  void FenceLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the logs of the jobs a ForgetJobs names, or (a RegisterAck) those older than the
  // scheduler's job retention (log_retention.h), except those of jobs with a run the launcher
  // still watches (agent_logs.cc). On the worker thread.
  void ForgetJobLogs(const trainctl::v1::SchedulerMessage& command) ABSL_LOCKS_EXCLUDED(mu_);
  // Warns when --max-log-mb cannot hold: the work dir's file system punches no holes.
  void CheckLogCapping() const;
  void RemoveLogsOf(const std::vector<std::string>& job_ids, const std::string& why)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The scheduler answered the message `seq` (a RegisterAck or HeartbeatAck).
  void Answered(uint64_t seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // "fenced: no word from the scheduler for 3.2s": why the fence holds at `now`.
  std::string FenceReason(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Streams the archive of `job_id`'s workdir `digest` from the scheduler the agent's stream is
  // with (AgentService.FetchWorkdir, on a channel of its own) to `sink` (agent_connect.cc).
  absl::Status FetchWorkdir(const std::string& job_id, const std::string& digest,
                            const std::function<absl::Status(absl::string_view)>& sink)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Sleeps `d` unless the agent stops first.
  void SleepUnlessStopped(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts log_shipper_, shipping to the scheduler the stream is registered with on channels
  // MakeChannel makes (agent_connect.cc). After the runtime adopted the runs of an earlier agent:
  // a run still running must never look ended.
  void StartLogShipper() ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  const Options options_;
  const std::string instance_;
  // The node's images (image_cache.h); null when it runs none (agent_images.cc says why).
  const std::shared_ptr<ImageCache> image_cache_;
  // Thread-safe; its host thresholds change at SetHostChecks. With image_cache_, it has the item
  // container-runtime.
  NodeChecker checker_;
  // Register.config; SetHostChecks replaces it.
  std::map<std::string, std::string> check_config_ ABSL_GUARDED_BY(mu_);
  // Used by the worker thread's preflights; thread-safe itself.
  PreflightCache preflight_cache_;
  // Jobs' working directories on this node (fetched through FetchWorkdir); thread-safe itself.
  WorkdirCache workdirs_;

  // Where answers of prepulls go: the agent's outbox until the agent is destroyed, nowhere after.
  // The destructor cancels the pulls and waits for their threads.
  struct PrepullSink {
    absl::Mutex mu;
    Agent* agent ABSL_GUARDED_BY(mu) = nullptr;
    int threads ABSL_GUARDED_BY(mu) = 0;
  };
  const std::shared_ptr<PrepullSink> prepull_sink_ = std::make_shared<PrepullSink>();

  // No lock: used by the Run() thread only.
  SchedulerLink link_ = MakeLink(options_);

  // One mutex for every concern, on purpose: the writer waits on one condition over the
  // reports, the outbox, the heartbeat and the stop; an exit moves from pending_exits_ to
  // reports_ in one step, as UnackedReports(), StartStream() and Shutdown() see both; the health
  // check thread wakes on stopped_ or a request. Only the worker's queue (commands_) stands
  // apart, and a lock of its own would save nothing at a few messages a second.
  // Lock order: mu_ before the runtime's lock (the runtime calls back with no lock held).
  mutable absl::Mutex mu_;
  // State below is protected by mu_.
  // Last seq given to a message.
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  ReportBuffer reports_ ABSL_GUARDED_BY(mu_);
  // Null when it could not be opened (logged): reports then live in memory only.
  std::unique_ptr<ReportJournal> journal_ ABSL_GUARDED_BY(mu_);
  // Best-effort messages (LogData, ReplicaProgress) waiting for the writer; dropped when the
  // stream ends.
  std::deque<trainctl::v1::AgentMessage> outbox_ ABSL_GUARDED_BY(mu_);
  // Launch and stop commands waiting for the worker, oldest first.
  std::deque<trainctl::v1::SchedulerMessage> commands_ ABSL_GUARDED_BY(mu_);
  // The worker is carrying out a command it took from commands_.
  bool command_running_ ABSL_GUARDED_BY(mu_) = false;
  // The current stream's context, to cancel it; null between streams.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stream_broken_ ABSL_GUARDED_BY(mu_) = false;
  // The current stream's reader saw its end.
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_);
  absl::Time next_heartbeat_ ABSL_GUARDED_BY(mu_);
  // Set when Run() must return.
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Ends the worker thread (destructor).
  bool worker_exit_ ABSL_GUARDED_BY(mu_) = false;
  // The scheduler sent RunChecks; the health check thread has not started that run yet.
  bool checks_requested_ ABSL_GUARDED_BY(mu_) = false;
  // The startup script's latest run; unset when no script is configured.
  std::optional<trainctl::v1::CheckRun> startup_run_ ABSL_GUARDED_BY(mu_);
  // --maintenance-file: read for each Register and each heartbeat (sent when it changed).
  std::optional<MaintenanceFile> maintenance_ ABSL_GUARDED_BY(mu_) =
      options_.maintenance_file.empty()
          ? std::nullopt
          : std::make_optional<MaintenanceFile>(options_.maintenance_file);
  // Abnormal exits waiting for their exit checks, oldest first; the exit-check thread removes
  // them only when it adds their reports.
  std::deque<trainctl::v1::ReplicaExited> pending_exits_ ABSL_GUARDED_BY(mu_);
  // When to fence, from the scheduler's answers (fence_timer.h).
  FenceTimer fence_ ABSL_GUARDED_BY(mu_);
  // When to leave the current stream for want of answers, and the highest leader epoch seen
  // (leader_guard.h).
  AckDeadline ack_ ABSL_GUARDED_BY(mu_){options_.heartbeat_ack_timeout};
  EpochFilter epochs_ ABSL_GUARDED_BY(mu_);
  // Why the agent leaves the current stream; "" while it does not.
  std::string left_ ABSL_GUARDED_BY(mu_);
  // The address of the current stream, for the log.
  std::string stream_address_ ABSL_GUARDED_BY(mu_);
  // The seq of the current stream's Register, which its RegisterAck answers.
  uint64_t register_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // Options::delay_exit_status: exits held back, each with the time it is due, oldest first.
  std::deque<std::pair<absl::Time, trainctl::v1::ReplicaExited>> delayed_exits_
      ABSL_GUARDED_BY(mu_);

  // Declared last: its callbacks use the members above, and its destructor (which kills
  // leftover replicas) runs first.
  // The replicas (replica_runtime.h): a ProcessLauncher unless Options::runtime builds another.
  const std::unique_ptr<ReplicaRuntime> runtime_;
  // Runs stack captures, a few at once, so that none holds up the commands behind it.
  // Destroyed (finishing what waits) before runtime_, which its captures ask about runs.
  std::unique_ptr<WorkQueue> stack_captures_;
  // The fabric check listener; its port is 0 when it could not start (logged), and gangs on
  // this node then start unchecked.
  FabricListener fabric_listener_;
  // Runs CheckFabric requests; set by the constructor, reset first by the destructor.
  std::unique_ptr<WorkQueue> fabric_checks_;
  // Set by the destructor: running checks give up, and a check program is killed.
  std::atomic<bool> fabric_cancelled_{false};
  // Ships the runs' logs (Options::ship_logs); null when off. Set by the constructor, stopped
  // by Shutdown() and the destructor (before runtime_ goes, which it asks about runs).
  std::unique_ptr<LogShipper> log_shipper_;
  // No lock: the threads are started and joined by the constructor and destructor, and
  // health_checker_ by the Run() thread, before the destructor joins it (Run() has returned).
  std::thread worker_;
  std::thread exit_checker_;
  // Started only with Options::delay_exit_status.
  std::thread exit_delayer_;
  // Started by Run() after the first startup script run.
  std::thread health_checker_;
  std::thread fencer_;
};

}  // namespace trainctl::agent
