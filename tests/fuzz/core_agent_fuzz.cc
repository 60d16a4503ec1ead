// libFuzzer target: a fresh scheduler core, then a fuzzed sequence of what agents say to it
// (registrations, heartbeats, disconnects, replica starts, exits, check reports, progress) mixed
// with the few other inputs that give the reports something to be about (submits, elastic jobs
// among them, cancels, drains, resizes, the clock moving on). The input is read as a list of
// steps; a report names a run the core launched (or a made-up one), from the node it was launched
// on or another. After every step the core must hold its invariants (scheduler/invariants.h), and
// no node may hold more than its agent registered: each node keeps one size for the whole input.
// A broken invariant aborts with its message, as a crash does.
//
// Reports reach the core the way server/agent_service.cc passes them: only from a node whose
// agent is connected, and a registration only once sched::ValidateRegister accepts it.
//
// TRAINCTL_FUZZ_TRACE=1 prints each step and what the core decided (its events and the commands
// for agents), to read why an input breaks an invariant: core_agent_fuzz crash-<sha1>.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/agent_validation.h"
#include "scheduler/core.h"
#include "scheduler/device_pool.h"
#include "scheduler/elastic.h"
#include "scheduler/invariants.h"

namespace trainctl::sched {
namespace {

// Small on purpose: a few nodes, jobs and steps reach every state of a replica in few bytes and
// keep each input fast.
constexpr int kNodes = 3;
constexpr int kMaxJobs = 4;
constexpr int kMaxSteps = 32;
constexpr size_t kMaxRuns = 16;

const char* const kNodeNames[kNodes] = {"node-a", "node-b", "node-c"};
const char* const kPhases[] = {"periodic", "preflight", "exit", "startup", ""};

void Fail(const std::string& what) {
  std::fprintf(stderr, "core_agent_fuzz: %s\n", what.c_str());
  std::abort();
}

class World {
 public:
  explicit World(FuzzedDataProvider* in) : in_(in), core_(Options()) {
    for (int i = 0; i < kNodes; ++i) {
      sizes_[i] = Res{static_cast<double>(in_->ConsumeIntegralInRange<int>(1, 8)),
                      in_->ConsumeIntegralInRange<int64_t>(256, 8192),
                      in_->ConsumeIntegralInRange<int64_t>(0, 4)};
    }
  }

  // Applies one step; false when the input is used up.
  bool Step() {
    if (in_->remaining_bytes() == 0) return false;
    Effects fx;
    const int kind = in_->ConsumeIntegralInRange<int>(0, 13);
    switch (kind) {
      case 0:
      case 1:
        Register(&fx);
        break;
      case 2: {
        const int n = NodeIndex();
        if (connected_[n]) core_.AgentDisconnected(kNodeNames[n], FromMs(now_), &fx);
        connected_[n] = false;
        break;
      }
      case 3:
        if (const char* node = ConnectedNode()) core_.Heartbeat(node, FromMs(now_), &fx);
        break;
      case 4:
        Started(&fx);
        break;
      case 5:
      case 6:
        Exited(&fx);
        break;
      case 7:
        Checked(&fx);
        break;
      case 8:
        Progress(&fx);
        break;
      case 9:
        now_ += in_->ConsumeIntegralInRange<int64_t>(0, 120'000);
        core_.Tick(FromMs(now_), &fx);
        core_.Schedule(FromMs(now_), &fx);
        break;
      case 10:
        Submit(&fx);
        core_.Schedule(FromMs(now_), &fx);
        break;
      case 11:
        if (!job_ids_.empty()) (void)core_.CancelJob(PickJob(), FromMs(now_), &fx);
        break;
      case 12:
        Operate(&fx);
        break;
      case 13:
        core_.Schedule(FromMs(now_), &fx);
        break;
    }
    Record(fx);
    if (kTrace) Trace(kind, fx);
    Check();
    return true;
  }

 private:
  static CoreOptions Options() {
    CoreOptions o;
    o.checkpoint_root = "/ckpt";
    o.id_seed = 7;
    o.nodes.lost_timeout = absl::Seconds(30);
    return o;
  }

  int NodeIndex() { return in_->ConsumeIntegralInRange<int>(0, kNodes - 1); }

  // A connected node, or nullptr when none is.
  const char* ConnectedNode() {
    const int first = NodeIndex();
    for (int i = 0; i < kNodes; ++i) {
      const int n = (first + i) % kNodes;
      if (connected_[n]) return kNodeNames[n];
    }
    return nullptr;
  }

  // A run the core launched (most often), or a made-up run id.
  std::string PickRun() {
    if (runs_.empty() || in_->ConsumeIntegralInRange<int>(0, 7) == 0) {
      return in_->ConsumeRandomLengthString(40);
    }
    return runs_[in_->ConsumeIntegralInRange<size_t>(0, runs_.size() - 1)].first;
  }

  // The node `run` was launched on when it is connected and the input says so, else any
  // connected node; nullptr when none is connected.
  const char* ReporterOf(const std::string& run) {
    if (in_->ConsumeBool()) {
      for (const auto& [id, node] : runs_) {
        if (id != run) continue;
        for (int n = 0; n < kNodes; ++n) {
          if (connected_[n] && node == kNodeNames[n]) return kNodeNames[n];
        }
      }
    }
    return ConnectedNode();
  }

  std::string PickJob() {
    if (in_->ConsumeIntegralInRange<int>(0, 7) == 0) return in_->ConsumeRandomLengthString(12);
    return job_ids_[in_->ConsumeIntegralInRange<size_t>(0, job_ids_.size() - 1)];
  }

  void Register(Effects* fx) {
    const int n = NodeIndex();
    v1::Register reg;
    reg.set_node(kNodeNames[n]);
    reg.set_address(absl::StrCat(kNodeNames[n], ".local"));
    reg.mutable_allocatable()->set_cpu(sizes_[n].cpu);
    reg.mutable_allocatable()->set_memory_mb(sizes_[n].memory_mb);
    reg.mutable_allocatable()->set_gpus(static_cast<int32_t>(sizes_[n].gpus));
    *reg.mutable_capacity() = reg.allocatable();
    // Synthetic devices, as trainctl-agent --gpus N lists them.
    for (v1::GpuDevice& d : SyntheticDevices(reg.capacity().gpus())) {
      *reg.add_gpu_devices() = std::move(d);
    }
    reg.set_agent_instance(absl::StrCat("instance-", in_->ConsumeIntegralInRange<int>(0, 2)));
    const int known = in_->ConsumeIntegralInRange<int>(0, 3);
    for (int i = 0; i < known; ++i) {
      v1::KnownRun* run = reg.add_runs();
      run->set_run_id(PickRun());
      run->set_running(in_->ConsumeBool());
      run->set_pid(in_->ConsumeIntegralInRange<int64_t>(0, 1000));
    }
    if (!ValidateRegister(reg).ok()) return;
    core_.AgentRegistered(reg, FromMs(now_), fx);
    connected_[n] = true;
  }

  void Started(Effects* fx) {
    v1::ReplicaStarted started;
    started.set_run_id(PickRun());
    started.set_pid(in_->ConsumeIntegralInRange<int64_t>(-1, 1000));
    started.set_start_time_ms(now_ - in_->ConsumeIntegralInRange<int64_t>(-5'000, 60'000));
    if (const char* node = ReporterOf(started.run_id())) {
      core_.ReplicaStarted(node, started, FromMs(now_), fx);
    }
  }

  v1::CheckRun CheckRunOf(const std::string& run_id) {
    v1::CheckRun run;
    run.set_phase(kPhases[in_->ConsumeIntegralInRange<int>(0, 4)]);
    run.set_passed(in_->ConsumeBool());
    run.mutable_time()->set_seconds(now_ / 1000);
    run.set_run_id(run_id);
    std::string job_id;
    int32_t attempt = 0, restart = 0;
    std::string replica;
    if (ParseRunId(run_id, &job_id, &attempt, &replica, &restart)) run.set_job_id(job_id);
    if (in_->ConsumeBool()) {
      v1::CheckResult* item = run.add_items();
      item->set_item(in_->ConsumeBool() ? "disk" : "gpu-check");
      item->set_passed(run.passed());
    }
    return run;
  }

  void Exited(Effects* fx) {
    v1::ReplicaExited exited;
    exited.set_run_id(PickRun());
    switch (in_->ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        exited.set_exit_code(0);
        break;
      case 1:
        exited.set_exit_code(in_->ConsumeIntegralInRange<int32_t>(-1, 255));
        break;
      case 2:
        exited.set_signal(in_->ConsumeIntegralInRange<int32_t>(0, 65));
        break;
      case 3:
        break;
    }
    const uint8_t flags = in_->ConsumeIntegral<uint8_t>();
    exited.set_oom_killed(flags & 1);
    exited.set_launch_failed(flags & 2);
    if (flags & 2) exited.set_launch_error("no such file");
    exited.set_launch_error_is_user(flags & 4);
    exited.set_stopped_by_request(flags & 8);
    exited.set_node_shutdown(flags & 16);
    exited.set_preflight_failed(flags & 32);
    if (flags & 64) *exited.mutable_checks() = CheckRunOf(exited.run_id());
    if (flags & 128) exited.set_output_tail("Traceback: CUDA error: out of memory");
    exited.set_end_time_ms(now_ - in_->ConsumeIntegralInRange<int64_t>(-5'000, 60'000));
    if (const char* node = ReporterOf(exited.run_id())) {
      core_.ReplicaExited(node, exited, FromMs(now_), fx);
    }
  }

  void Checked(Effects* fx) {
    const v1::CheckRun run = CheckRunOf(PickRun());
    if (const char* node = ReporterOf(run.run_id()))
      core_.CheckReported(node, run, FromMs(now_), fx);
  }

  void Progress(Effects* fx) {
    v1::ReplicaProgress progress;
    progress.set_run_id(PickRun());
    progress.set_time_ms(now_ - in_->ConsumeIntegralInRange<int64_t>(-5'000, 60'000));
    progress.set_source("checkpoint");
    if (const char* node = ReporterOf(progress.run_id())) {
      core_.ReplicaProgress(node, progress, FromMs(now_), fx);
    }
  }

  void Submit(Effects* fx) {
    if (job_ids_.size() >= kMaxJobs) return;
    v1::JobSpec spec;
    spec.set_display_name("fuzz");
    spec.set_project(in_->ConsumeBool() ? "a" : "b");
    const int pools = in_->ConsumeIntegralInRange<int>(1, 2);
    for (int p = 0; p < pools; ++p) {
      v1::WorkerPool* pool = spec.add_worker_pools();
      pool->set_name(p == 0 ? "chief" : "worker");
      pool->set_replica_count(p == 0 ? 1 : in_->ConsumeIntegralInRange<int>(1, 3));
      pool->add_command("/bin/true");
      pool->mutable_resources()->set_cpu(in_->ConsumeIntegralInRange<int>(1, 4) * 0.5);
      pool->mutable_resources()->set_memory_mb(in_->ConsumeIntegralInRange<int64_t>(1, 4) * 128);
      pool->mutable_resources()->set_gpus(in_->ConsumeIntegralInRange<int>(0, 2));
      if (p == 1 && in_->ConsumeBool()) {
        pool->mutable_elastic()->set_min_replicas(
            in_->ConsumeIntegralInRange<int>(1, pool->replica_count()));
      }
    }
    v1::Scheduling* s = spec.mutable_scheduling();
    s->set_restart_scope(in_->ConsumeBool() ? v1::RESTART_SCOPE_GANG : v1::RESTART_SCOPE_REPLICA);
    s->set_restart_policy(static_cast<v1::RestartPolicy>(in_->ConsumeIntegralInRange<int>(0, 3)));
    s->set_max_replica_restarts(in_->ConsumeIntegralInRange<int>(0, 3));
    s->set_max_job_retries(in_->ConsumeIntegralInRange<int>(0, 2));
    s->add_transient_exit_codes(3);
    if (in_->ConsumeBool()) s->mutable_hang_timeout()->set_seconds(60);
    if (in_->ConsumeBool()) s->mutable_launch_timeout()->set_seconds(30);
    if (IsElastic(spec)) s->mutable_elastic_wait()->set_seconds(in_->ConsumeIntegralInRange(0, 2));
    spec.mutable_fault_tolerance()->set_job_retry_num(in_->ConsumeIntegralInRange<int>(0, 2));
    absl::StatusOr<const Job*> job = core_.SubmitJob(spec, FromMs(now_), fx);
    if (job.ok()) job_ids_.push_back((*job)->id);
  }

  // Operator inputs that move replicas: cordon, uncordon, drain; and a resize of a job.
  void Operate(Effects* fx) {
    const std::string node = in_->ConsumeBool() ? kNodeNames[NodeIndex()] : "node-x";
    switch (in_->ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        (void)core_.CordonNode(node, "fuzz", FromMs(now_), fx);
        break;
      case 1:
        (void)core_.UncordonNode(node, FromMs(now_), fx);
        break;
      case 2:
        (void)core_.DrainNode(node, "fuzz",
                              absl::Milliseconds(in_->ConsumeIntegralInRange<int64_t>(0, 10'000)),
                              FromMs(now_), fx);
        break;
      case 3:
        if (!job_ids_.empty()) (void)core_.ResizeJob(PickJob(), "fuzz", FromMs(now_), fx);
        break;
    }
  }

  // Remembers the runs the core launched, and where, for later reports.
  void Record(const Effects& fx) {
    for (const Command& c : fx.commands) {
      if (!c.message.has_launch()) continue;
      if (runs_.size() == kMaxRuns) runs_.erase(runs_.begin());
      runs_.emplace_back(c.message.launch().run_id(), c.node);
    }
  }

  void Trace(int kind, const Effects& fx) {
    static const char* const kKinds[] = {
        "register", "register", "disconnect", "heartbeat", "started", "exited",  "exited",
        "check",    "progress", "tick",       "submit",    "cancel",  "operate", "schedule"};
    std::fprintf(stderr, "step %d: %s at %lld ms\n", ++steps_, kKinds[kind],
                 static_cast<long long>(now_));
    for (const Event& e : fx.events) {
      std::fprintf(stderr, "  event %s %s %s %s: %s\n", e.type.c_str(), e.job_id.c_str(),
                   e.replica.c_str(), e.node.c_str(), e.reason.c_str());
    }
    for (const Command& c : fx.commands) {
      std::fprintf(stderr, "  to %s: %s\n", c.node.c_str(), c.message.ShortDebugString().c_str());
    }
  }

  void Check() {
    if (absl::Status s = CheckInvariants(core_); !s.ok()) Fail(s.ToString());
    std::map<std::string, Res> used;
    for (const auto& [id, job] : core_.jobs()) {
      for (const Replica& r : job.replicas) {
        if (HoldsResources(r.state)) used[r.node] += r.need;
      }
    }
    for (const auto& [name, res] : used) {
      const Node* node = core_.FindNode(name);
      if (node != nullptr && !node->allocatable.Fits(res)) {
        Fail(absl::StrCat("node ", name, " holds cpu ", res.cpu, ", memory ", res.memory_mb,
                          " MiB, ", res.gpus, " GPUs, more than its allocatable cpu ",
                          node->allocatable.cpu, ", memory ", node->allocatable.memory_mb, " MiB, ",
                          node->allocatable.gpus, " GPUs"));
      }
    }
  }

  static inline const bool kTrace = std::getenv("TRAINCTL_FUZZ_TRACE") != nullptr;
  FuzzedDataProvider* const in_;
  Core core_;
  int steps_ = 0;
  int64_t now_ = 1'000'000'000;
  std::array<Res, kNodes> sizes_;
  std::array<bool, kNodes> connected_{};
  // (run id, node) of the latest launches, oldest first.
  std::vector<std::pair<std::string, std::string>> runs_;
  std::vector<std::string> job_ids_;
};

}  // namespace
}  // namespace trainctl::sched

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  trainctl::sched::World world(&in);
  for (int step = 0; step < trainctl::sched::kMaxSteps && world.Step(); ++step) {
  }
  return 0;
}
