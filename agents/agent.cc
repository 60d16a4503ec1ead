#include "agents/agent.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agents/gpu_inventory.h"
#include "agents/launcher.h"
#include "agents/report_journal.h"
#include "agents/run_cgroup.h"
#include "agents/spawn.h"
#include "common/agent_protocol.h"
#include "common/log_context.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

using Stream =
    grpc::ClientReaderWriterInterface<trainctl::v1::AgentMessage, trainctl::v1::SchedulerMessage>;

constexpr absl::Duration kDefaultHeartbeat = absl::Milliseconds(2000);

std::string RandomInstanceId() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device());
  return absl::StrFormat("%016x", rng());
}

// The name of the agent's cgroup directories: its node and a hash (FNV-1a) of its work dir, so
// that two agents on one host (a test cluster, or agents of two clusters) never share the
// cgroups of runs with the same id, while an agent that restarts finds its own again.
std::string CgroupName(const Agent::Options& options) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : options.work_dir) {
    hash ^= c;
    hash *= 16777619u;
  }
  return absl::StrCat(options.node, "-", absl::Hex(hash, absl::kZeroPad8));
}

// Fills in what the check configuration takes from the rest of the options.
Agent::Options WithCheckDefaults(Agent::Options options) {
  options.checks.gpu_devices.clear();
  options.checks.synthetic_gpus = false;
  for (const trainctl::v1::GpuDevice& d : options.gpu_devices) {
    if (IsSynthetic(d)) {
      options.checks.synthetic_gpus = true;
    } else {
      options.checks.gpu_devices.push_back(d.index());
    }
  }
  if (options.checks.host.cache.path.empty()) options.checks.host.cache.path = options.work_dir;
  return options;
}

// The checker's configuration: options.checks, with the item container-runtime on a node that
// runs images.
NodeCheckConfig CheckConfigOf(const Agent::Options& options, bool runs_images) {
  NodeCheckConfig checks = options.checks;
  if (runs_images) {
    ContainerCheckConfig container;
    container.runc = options.images.runc;
    container.image_dir = ImageDirOf(options.images, options.work_dir);
    checks.container_runtime = std::move(container);
  }
  return checks;
}

// The exit status as a shell reports it: the exit code, or 128+N for a run killed by signal N.
// nullopt for a run that never started or whose status is unknown (an adopted run).
std::optional<int> ExitStatus(const trainctl::v1::ReplicaExited& exited) {
  if (exited.launch_failed()) return std::nullopt;
  if (exited.has_exit_code()) return exited.exit_code();
  if (exited.has_signal()) return 128 + exited.signal();
  return std::nullopt;
}

}  // namespace

Agent::Agent(Options options)
    : options_(WithCheckDefaults(std::move(options))),
      instance_(RandomInstanceId()),
      image_cache_(OpenImageCache(options_)),
      checker_(CheckConfigOf(options_, image_cache_ != nullptr), options_.node, options_.work_dir,
               options_.probe),
      check_config_(DescribeCheckConfig(checker_.config())),
      workdirs_(options_.work_dir + "/workdirs",
                [this](const std::string& job_id, const std::string& digest,
                       const std::function<absl::Status(absl::string_view)>& sink) {
                  return FetchWorkdir(job_id, digest, sink);
                }),
      heartbeat_interval_(kDefaultHeartbeat),
      runtime_([this] {
        ReplicaRuntime::Options runtime_options;
        runtime_options.work_dir = options_.work_dir;
        runtime_options.state_dir = options_.state_dir;
        runtime_options.shim_path = options_.shim_path;
        runtime_options.progress_interval = options_.progress_interval;
        runtime_options.inject_launch_failures = options_.inject_launch_failures;
        runtime_options.alive = options_.alive;
        // The launcher logs which controllers runs are isolated by, and which not.
        runtime_options.cgroups = RunCgroups::Detect(CgroupName(options_));
        runtime_options.gpu_inventory = options_.gpu_devices;
        runtime_options.base_environment =
            PassedEnvironment(CurrentEnvironment(), options_.pass_env);
        runtime_options.pids_max = options_.pids_max;
        runtime_options.job_tmpfs_size = options_.job_tmpfs_size;
        runtime_options.max_log_bytes = options_.max_log_bytes;
        runtime_options.replica_env["TRAINCTL_SERVER"] = options_.scheduler;
        if (!options_.tls_ca_path.empty()) {
          runtime_options.replica_env["TRAINCTL_CA"] = options_.tls_ca_path;
        }
        runtime_options.run_as = options_.run_as;
        runtime_options.cpu_policy = options_.cpu_policy;
        runtime_options.min_shared_cpus = options_.min_shared_cpus;
        runtime_options.on_progress = [this](trainctl::v1::ReplicaProgress progress) {
          trainctl::v1::AgentMessage message;
          *message.mutable_replica_progress() = std::move(progress);
          absl::MutexLock lock(&mu_);
          if (context_ != nullptr) outbox_.push_back(std::move(message));
        };
        runtime_options.on_started = [this](trainctl::v1::ReplicaStarted started) {
          if (options_.metrics != nullptr) options_.metrics->OnStarted();
          trainctl::v1::AgentMessage report;
          *report.mutable_replica_started() = std::move(started);
          AddReport(std::move(report));
        };
        runtime_options.on_exited = [this](trainctl::v1::ReplicaExited exited) {
          if (options_.metrics != nullptr) options_.metrics->OnExited(exited);
          OnExited(std::move(exited));
        };
        runtime_options.prepare_workdir = [this](const trainctl::v1::LaunchReplica& launch,
                                                 std::optional<gid_t> group) {
          return workdirs_.Prepare(launch.job_id(), launch.workdir_digest(), group);
        };
        if (options_.checks.preflight) {
          runtime_options.preflight = [this](const trainctl::v1::LaunchReplica& launch) {
            return Preflight(launch);
          };
        }
        return MakeRuntime(std::move(runtime_options));
      }()) {
  {
    absl::MutexLock lock(&prepull_sink_->mu);
    prepull_sink_->agent = this;
  }
  {
    absl::MutexLock lock(&mu_);
    spdlog::info("checks: {}", absl::StrJoin(check_config_, ", ", absl::PairFormatter(": ")));
  }
  CheckLogCapping();
  // Reports an earlier agent could not deliver come first, in their order; the runs whose exits
  // they hold are only forgotten by the adoption below.
  std::set<std::string> journaled_exits;
  {
    std::vector<ReportJournal::Entry> unacked;
    const std::string path =
        (options_.state_dir.empty() ? options_.work_dir : options_.state_dir) + "/" + kJournalFile;
    absl::StatusOr<std::unique_ptr<ReportJournal>> journal = ReportJournal::Open(path, &unacked);
    absl::MutexLock lock(&mu_);
    if (journal.ok()) {
      journal_ = *std::move(journal);
    } else {
      spdlog::error("no report journal ({}): reports not acknowledged when the agent dies are lost",
                    std::string(journal.status().message()));
    }
    for (ReportJournal::Entry& entry : unacked) {
      if (entry.report.has_replica_exited()) {
        journaled_exits.insert(entry.report.replica_exited().run_id());
      }
      reports_.Add(std::move(entry.report), entry.id);
    }
    if (!unacked.empty()) {
      spdlog::info("{} reports of an earlier agent were never acknowledged; sending them again",
                   unacked.size());
    }
  }
  std::vector<std::string> adopted = runtime_->AdoptRecordedRuns(journaled_exits);
  if (!adopted.empty()) {
    spdlog::warn(
        "adopted {} replicas an earlier agent started; they keep running, and the scheduler "
        "decides whether they should",
        adopted.size());
  }
  // Only now: a run adopted above is running, not ended, when the shipper asks.
  if (options_.ship_logs) {
    StartLogShipper();
  } else {
    spdlog::info(
        "log shipping is off (--no-log-shipping): the replicas' logs stay on this node, and "
        "`trainctl logs` reads them only while this agent is connected");
  }
  stack_captures_ = std::make_unique<WorkQueue>(kStackCaptureThreads, kMaxStackCaptures);
  StartFabricChecks();
  worker_ = std::thread([this] { WorkerLoop(); });
  exit_checker_ = std::thread([this] { ExitCheckLoop(); });
  if (options_.delay_exit_status >= 0) exit_delayer_ = std::thread([this] { DelayedExitLoop(); });
  fencer_ = std::thread([this] { FenceLoop(); });
}

Agent::~Agent() {
  StopFabricChecks();
  if (log_shipper_ != nullptr) log_shipper_->Stop();
  {
    absl::MutexLock lock(&prepull_sink_->mu);
    prepull_sink_->agent = nullptr;
  }
  if (image_cache_ != nullptr) {
    image_cache_->CancelPulls();
    absl::MutexLock lock(&prepull_sink_->mu);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(prepull_sink_->mu) {
      return prepull_sink_->threads == 0;
    };
    prepull_sink_->mu.Await(absl::Condition(&done));
  }
  {
    absl::MutexLock lock(&mu_);
    worker_exit_ = true;
    stopped_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  worker_.join();
  stack_captures_.reset();  // finishes the captures (and their stops) that wait
  exit_checker_.join();
  fencer_.join();
  if (exit_delayer_.joinable()) exit_delayer_.join();
  if (health_checker_.joinable()) health_checker_.join();
}

size_t Agent::UnackedReports() const {
  absl::MutexLock lock(&mu_);
  return reports_.size() + pending_exits_.size() + delayed_exits_.size();
}

void Agent::OnExited(trainctl::v1::ReplicaExited exited) {
  absl::MutexLock lock(&mu_);
  if (options_.delay_exit_status >= 0 &&
      ExitStatus(exited) == std::optional<int>(options_.delay_exit_status)) {
    spdlog::info(
        "run {}: exited with status {}; holding its report for {} "
        "(--inject-exit-report-delay)",
        exited.run_id(), options_.delay_exit_status,
        absl::FormatDuration(options_.exit_report_delay));
    delayed_exits_.emplace_back(absl::Now() + options_.exit_report_delay, std::move(exited));
    return;
  }
  QueueExit(std::move(exited));
}

void Agent::QueueExit(trainctl::v1::ReplicaExited exited) {
  if (IsAbnormalExit(exited)) {
    spdlog::info("run {}: exited abnormally; running the exit checks before reporting it",
                 exited.run_id());
    pending_exits_.push_back(std::move(exited));
    return;
  }
  trainctl::v1::AgentMessage report;
  *report.mutable_replica_exited() = std::move(exited);
  AddReportLocked(std::move(report));
}

void Agent::AddReportLocked(trainctl::v1::AgentMessage report) {
  uint64_t journal_id = 0;
  if (journal_ != nullptr) {
    absl::StatusOr<uint64_t> id = journal_->Append(report);
    if (id.ok()) {
      journal_id = *id;
    } else {
      spdlog::warn("cannot journal a report; it is lost if the agent dies before it is acked: {}",
                   std::string(id.status().message()));
    }
  }
  // The journal knows the run's end now: its directory may go (under mu_, so that the ack that
  // empties the journal cannot come first).
  if (report.has_replica_exited()) runtime_->ForgetRun(report.replica_exited().run_id());
  reports_.Add(std::move(report), journal_id);
}

void Agent::AddReport(trainctl::v1::AgentMessage report) {
  absl::MutexLock lock(&mu_);
  AddReportLocked(std::move(report));
}

trainctl::v1::AgentMessage Agent::StartStream() {
  // Running processes first, taken before mu_: a run whose exit is being reported shows here
  // as running, and its exit report (added before the launcher forgets the process) overrides.
  std::vector<trainctl::v1::KnownRun> running = runtime_->KnownRuns();
  trainctl::v1::AgentMessage message;
  trainctl::v1::Register& reg = *message.mutable_register_();
  reg.set_node(options_.node);
  reg.set_address(options_.address);
  *reg.mutable_capacity() = options_.capacity;
  *reg.mutable_allocatable() = options_.allocatable;
  reg.mutable_labels()->insert(options_.labels.begin(), options_.labels.end());
  if (image_cache_ != nullptr) (*reg.mutable_labels())[kImagesLabel] = "true";
  for (const trainctl::v1::GpuDevice& d : options_.gpu_devices) *reg.add_gpu_devices() = d;
  reg.set_agent_version(kVersion);
  reg.set_protocol_version(kAgentProtocolVersion);
  reg.set_agent_instance(instance_);
  reg.set_fabric_port(fabric_listener_.port());

  absl::MutexLock lock(&mu_);
  reg.mutable_config()->insert(check_config_.begin(), check_config_.end());
  if (startup_run_) *reg.mutable_startup() = *startup_run_;
  if (maintenance_) *reg.mutable_maintenance() = maintenance_->Current();
  reports_.RestartStream();
  outbox_.clear();
  stream_broken_ = false;
  reader_done_ = false;
  registered_ = false;
  left_.clear();
  heartbeat_interval_ = kDefaultHeartbeat;
  ack_.Restart(heartbeat_interval_);
  next_heartbeat_ = absl::Now() + heartbeat_interval_;
  std::map<std::string, trainctl::v1::KnownRun> runs;
  for (trainctl::v1::KnownRun& run : running) runs[run.run_id()] = std::move(run);
  for (trainctl::v1::KnownRun& exited : reports_.UnackedExits()) {
    trainctl::v1::KnownRun& run = runs[exited.run_id()];
    run.set_run_id(exited.run_id());
    run.set_running(false);
  }
  // Exited, with the report still waiting for its exit checks or its test delay.
  std::vector<const trainctl::v1::ReplicaExited*> held;
  for (const trainctl::v1::ReplicaExited& exited : pending_exits_) held.push_back(&exited);
  for (const auto& [due, exited] : delayed_exits_) held.push_back(&exited);
  for (const trainctl::v1::ReplicaExited* exited : held) {
    trainctl::v1::KnownRun& run = runs[exited->run_id()];
    run.set_run_id(exited->run_id());
    run.set_running(false);
  }
  for (auto& entry : runs) *reg.add_runs() = std::move(entry.second);
  message.set_seq(++seq_);
  register_seq_ = message.seq();
  fence_.Sent(message.seq(), MonotonicNow());
  ack_.Sent(message.seq(), MonotonicNow());
  return message;
}

void Agent::WriteLoop(Stream* stream) {
  while (true) {
    trainctl::v1::AgentMessage message;
    {
      absl::MutexLock lock(&mu_);
      // A RegisterAck may bring the next heartbeat forward: that ends the wait too.
      const absl::Time heartbeat_at = next_heartbeat_;
      auto ready = [this, heartbeat_at]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopped_ || stream_broken_ || !outbox_.empty() || reports_.NextUnsent() != nullptr ||
               next_heartbeat_ < heartbeat_at;
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), heartbeat_at);
      if (stopped_ || stream_broken_) return;
      // A due heartbeat goes first, so a flood of log data cannot make the node look dead.
      if (absl::Now() >= next_heartbeat_) {
        message.mutable_heartbeat()->set_running_replicas(runtime_->ActiveCount());
        if (maintenance_) maintenance_->PollInto(message.mutable_heartbeat());
        message.set_seq(++seq_);
        fence_.Sent(message.seq(), MonotonicNow());
        ack_.Sent(message.seq(), MonotonicNow());
        next_heartbeat_ = absl::Now() + heartbeat_interval_;
      } else if (const trainctl::v1::AgentMessage* report = reports_.NextUnsent()) {
        message = *report;
        message.set_seq(++seq_);
        reports_.MarkSent(message.seq());
      } else if (!outbox_.empty()) {
        message = std::move(outbox_.front());
        outbox_.pop_front();
        message.set_seq(++seq_);
      } else {
        continue;
      }
    }
    if (!stream->Write(message)) {
      absl::MutexLock lock(&mu_);
      stream_broken_ = true;
      return;
    }
  }
}

void Agent::ReadLoop(Stream* stream) {
  trainctl::v1::SchedulerMessage message;
  bool ended = true;
  while (stream->Read(&message)) {
    {
      absl::MutexLock lock(&mu_);
      const int64_t highest = epochs_.highest();
      if (!epochs_.Accept(message.leader_epoch())) {
        // A deposed leader that has not noticed yet: nothing it says is applied.
        left_ = absl::StrCat("ignoring a message from a deposed leader (epoch ",
                             message.leader_epoch(), " < ", highest, ")");
        spdlog::warn("{} at {}; reconnecting", left_, stream_address_);
        ended = false;
        break;
      }
      if (message.leader_epoch() > highest && highest > 0) {
        spdlog::info("the scheduler at {} leads now (epoch {})", stream_address_,
                     message.leader_epoch());
      }
    }
    Handle(message);
  }
  absl::MutexLock lock(&mu_);
  stream_broken_ = true;
  // Left early: RunStream cancels the stream, which the scheduler has not ended.
  reader_done_ = ended;
}

void Agent::Handle(const trainctl::v1::SchedulerMessage& message) {
  switch (message.msg_case()) {
    case trainctl::v1::SchedulerMessage::kRegisterAck: {
      int32_t ms = message.register_ack().heartbeat_interval_ms();
      std::string address;
      {
        absl::MutexLock lock(&mu_);
        registered_ = true;
        address = stream_address_;
        heartbeat_interval_ = ms > 0 ? absl::Milliseconds(ms) : kDefaultHeartbeat;
        next_heartbeat_ = std::min(next_heartbeat_, absl::Now() + heartbeat_interval_);
        ack_.SetInterval(heartbeat_interval_);
        ack_.Answered(register_seq_);
        const trainctl::v1::RegisterAck& ack = message.register_ack();
        fence_.Configure(absl::Milliseconds(ack.fence_after_ms()),
                         absl::Milliseconds(ack.fence_grace_ms()));
        Answered(register_seq_);
        // The worker removes the logs of jobs past the retention (log_retention.h).
        if (ack.job_retention_ms() > 0) commands_.push_back(message);
        spdlog::info(
            "registration acknowledged; heartbeat every {}; lost timeout {}; fence after {} "
            "without an answer; reconnect after {} without an ack",
            absl::FormatDuration(heartbeat_interval_),
            absl::FormatDuration(absl::Milliseconds(ack.lost_timeout_ms())),
            fence_.armed() ? absl::FormatDuration(fence_.fence_after()) : std::string("never"),
            ack_.timeout() > absl::ZeroDuration() ? absl::FormatDuration(ack_.timeout())
                                                  : std::string("never"));
        if (ack_.timeout() > absl::ZeroDuration() && ack_.timeout() < 2 * heartbeat_interval_) {
          spdlog::warn(
              "--heartbeat-ack-timeout {} is under two heartbeat intervals ({} each): a late ack "
              "makes the agent reconnect",
              absl::FormatDuration(ack_.timeout()), absl::FormatDuration(heartbeat_interval_));
        }
      }
      // After mu_: the shipper leaves a stream to another scheduler (a failover).
      if (log_shipper_ != nullptr) log_shipper_->Registered(address);
      break;
    }
    case trainctl::v1::SchedulerMessage::kHeartbeatAck: {
      absl::MutexLock lock(&mu_);
      Answered(message.heartbeat_ack().seq());
      ack_.Answered(message.heartbeat_ack().seq());
      break;
    }
    case trainctl::v1::SchedulerMessage::kLaunch: {
      // Judged as it arrives: a launch that reaches a fenced agent was sent before the
      // scheduler gave the node up, or is delivered late by a network that came back, and
      // must not start even if an answer unfences the agent before the worker gets to it.
      std::string fenced;
      {
        absl::MutexLock lock(&mu_);
        const absl::Time now = MonotonicNow();
        if (fence_.Due(now)) {  // never while unarmed
          fenced = absl::StrCat(FenceReason(now), " when the launch arrived");
        } else {
          commands_.push_back(message);
        }
      }
      if (!fenced.empty()) runtime_->RefuseFencedLaunch(message.launch().run_id(), fenced);
      break;
    }
    case trainctl::v1::SchedulerMessage::kStop: {
      absl::MutexLock lock(&mu_);
      commands_.push_back(message);
      break;
    }
    case trainctl::v1::SchedulerMessage::kReadLog: {
      const trainctl::v1::ReadLog& read = message.read_log();
      trainctl::v1::AgentMessage reply;
      *reply.mutable_log_data() = runtime_->ReadLog(read.run_id(), read.offset(), read.max_bytes());
      reply.mutable_log_data()->set_request_id(read.request_id());
      absl::MutexLock lock(&mu_);
      outbox_.push_back(std::move(reply));
      break;
    }
    case trainctl::v1::SchedulerMessage::kAck: {
      absl::MutexLock lock(&mu_);
      const uint64_t journaled = reports_.Ack(message.ack().seq());
      if (journaled > 0 && journal_ != nullptr) {
        if (absl::Status s = journal_->AckThrough(journaled); !s.ok()) {
          spdlog::warn("report journal: {}", std::string(s.message()));
        }
      }
      break;
    }
    case trainctl::v1::SchedulerMessage::kNotice:
    case trainctl::v1::SchedulerMessage::kForgetJobs: {
      absl::MutexLock lock(&mu_);
      commands_.push_back(message);
      break;
    }
    case trainctl::v1::SchedulerMessage::kPrepullImage:
      Prepull(message.prepull_image());
      break;
    case trainctl::v1::SchedulerMessage::kDumpStacks:
      DumpStacksNow(message.dump_stacks());
      break;
    case trainctl::v1::SchedulerMessage::kCheckFabric:
      CheckFabricNow(message.check_fabric());
      break;
    case trainctl::v1::SchedulerMessage::kRunChecks: {
      spdlog::info("the scheduler asked for a check run");
      absl::MutexLock lock(&mu_);
      checks_requested_ = true;
      break;
    }
    case trainctl::v1::SchedulerMessage::MSG_NOT_SET:
      spdlog::warn("ignoring an empty or unknown message from the scheduler");
      break;
  }
}

void Agent::WorkerLoop() {
  while (true) {
    trainctl::v1::SchedulerMessage command;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return worker_exit_ || !commands_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (commands_.empty()) return;
      command = std::move(commands_.front());
      commands_.pop_front();
      command_running_ = true;
    }
    if (command.has_launch()) {
      LogScope scope = LogScope::ForRun(command.launch().run_id());
      spdlog::info("run {}: launch requested", command.launch().run_id());
      const absl::Time start = absl::Now();
      runtime_->Launch(command.launch());
      if (options_.metrics != nullptr) options_.metrics->OnLaunchCarriedOut(absl::Now() - start);
    } else if (command.has_stop()) {
      const trainctl::v1::StopReplica& stop = command.stop();
      LogScope scope = LogScope::ForRun(stop.run_id());
      if (!stop.capture_stacks().empty()) {
        CaptureThenStop(stop);
      } else if (absl::Status status =
                     runtime_->Stop(stop.run_id(), stop.grace_period_ms(), stop.reason());
                 !status.ok()) {
        spdlog::warn("run {}: cannot stop: {}", stop.run_id(), std::string(status.message()));
      }
    } else if (command.has_notice()) {
      const trainctl::v1::NoticeReplica& notice = command.notice();
      LogScope scope = LogScope::ForRun(notice.run_id());
      absl::Status status = runtime_->Notice(notice);
      if (absl::IsNotFound(status)) {
        spdlog::info("ignoring a {} notice for run {}, which this agent does not know",
                     notice.kind(), notice.run_id());
      } else if (!status.ok()) {
        spdlog::warn("run {}: cannot deliver a {} notice: {}", notice.run_id(), notice.kind(),
                     std::string(status.message()));
      }
    } else {
      ForgetJobLogs(command);
    }
    absl::MutexLock lock(&mu_);
    command_running_ = false;
  }
}

}  // namespace trainctl::agent
