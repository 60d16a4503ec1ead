// Builders shared by the scheduler core's tests: specs, agent registrations and reports.
#pragma once

#include <catch2/catch.hpp>
#include <exception>
#include <string>
#include <vector>

#include "common/run_id.h"
#include "model/model_proto.h"
#include "scheduler/core.h"
#include "scheduler/device_pool.h"

namespace trainctl::sched {

// The fake clock's start in the unit tests: 1970-01-01T00:16:40Z.
inline const absl::Time kT0 = FromMs(1'000'000);

}  // namespace trainctl::sched

namespace trainctl::sched::testing {

// Whether `fx` holds an event of `type` whose reason contains `text`.
inline bool HasEvent(const Effects& fx, const std::string& type, const std::string& text = "") {
  for (const Event& e : fx.events) {
    if (e.type == type && e.reason.find(text) != std::string::npos) return true;
  }
  return false;
}

// Core options for tests: checkpoint root /ckpt, heartbeats every 2s, a fixed id seed. Tests
// move the fake clock by minutes without heartbeats, so nodes are never lost unless a test sets
// nodes.lost_timeout itself.
inline CoreOptions TestOptions(uint64_t seed) {
  CoreOptions o;
  o.checkpoint_root = "/ckpt";
  o.heartbeat_interval = absl::Seconds(2);
  o.id_seed = seed;
  o.nodes.lost_timeout = absl::Hours(365 * 24);
  return o;
}

// The API view of job `id` in `core`: what a client reads. REQUIRES: the job exists.
inline v1::Job View(const Core& core, const std::string& id) { return ToProto(*core.FindJob(id)); }

// Fails the test when what the core keeps incrementally (usage per node and per project) differs
// from a recount over its jobs. Fixtures call it when they end.
inline void CheckUsageOnExit(const Core& core) {
  if (std::uncaught_exceptions() > 0) return;
  absl::Status usage = core.CheckUsage();
  INFO(usage.ToString());
  CHECK(usage.ok());
}

// The API view of a job an input returned.
inline absl::StatusOr<v1::Job> AsView(absl::StatusOr<const Job*> job) {
  if (!job.ok()) return job.status();
  return ToProto(**job);
}

// `spec` with restartScope REPLICA: only a failed replica restarts, its peers run on. Tests of
// per-replica restarts set it explicitly, since GANG is the default for more than one replica.
inline v1::JobSpec ReplicaScope(v1::JobSpec spec) {
  spec.mutable_scheduling()->set_restart_scope(v1::RESTART_SCOPE_REPLICA);
  return spec;
}

// A job spec with pool "chief" (1 replica) and, if workers > 0, pool "worker".
inline v1::JobSpec Spec(int workers, double cpu = 1, int64_t mem = 100, int gpus = 0) {
  v1::JobSpec spec;
  spec.set_display_name("test");
  auto add = [&](const std::string& name, int count) {
    v1::WorkerPool* p = spec.add_worker_pools();
    p->set_name(name);
    p->set_replica_count(count);
    p->add_command("/bin/true");
    p->mutable_resources()->set_cpu(cpu);
    p->mutable_resources()->set_memory_mb(mem);
    p->mutable_resources()->set_gpus(gpus);
  };
  add("chief", 1);
  if (workers > 0) add("worker", workers);
  return spec;
}

inline v1::Register Reg(const std::string& node, double cpu = 4, int64_t mem = 4096, int gpus = 0,
                        std::vector<v1::KnownRun> runs = {}) {
  v1::Register r;
  r.set_node(node);
  r.set_address(node + ".local");
  r.mutable_allocatable()->set_cpu(cpu);
  r.mutable_allocatable()->set_memory_mb(mem);
  r.mutable_allocatable()->set_gpus(gpus);
  *r.mutable_capacity() = r.allocatable();
  // Synthetic devices, as trainctl-agent --gpus N lists them.
  for (v1::GpuDevice& d : SyntheticDevices(gpus)) *r.add_gpu_devices() = std::move(d);
  r.set_agent_instance("instance-1");
  for (auto& k : runs) *r.add_runs() = k;
  return r;
}

inline std::vector<v1::LaunchReplica> Launches(const Effects& fx) {
  std::vector<v1::LaunchReplica> out;
  for (sched::Command c : fx.commands) {
    if (c.message.has_launch()) out.push_back(std::move(c).Take().launch());
  }
  return out;
}

inline std::vector<v1::StopReplica> Stops(const Effects& fx) {
  std::vector<v1::StopReplica> out;
  for (const sched::Command& c : fx.commands) {
    if (c.message.has_stop()) out.push_back(c.message.stop());
  }
  return out;
}

inline v1::ReplicaStarted Started(const std::string& run_id, int64_t pid = 100) {
  v1::ReplicaStarted s;
  s.set_run_id(run_id);
  s.set_pid(pid);
  return s;
}

inline v1::ReplicaExited ExitedCode(const std::string& run_id, int code) {
  v1::ReplicaExited e;
  e.set_run_id(run_id);
  e.set_exit_code(code);
  return e;
}

inline v1::ReplicaExited ExitedSignal(const std::string& run_id, int sig) {
  v1::ReplicaExited e;
  e.set_run_id(run_id);
  e.set_signal(sig);
  return e;
}

// The agents confirm every stop in `sent` for job `job_id`: each process died of the SIGTERM,
// reported from its replica's node. Returns what the core did about the reports.
inline Effects ConfirmStops(Core& core, const std::string& job_id, const Effects& sent,
                            int64_t now) {
  Effects fx;
  for (const v1::StopReplica& s : Stops(sent)) {
    std::string job, replica;
    int32_t attempt = 0, restart = 0;
    REQUIRE(ParseRunId(s.run_id(), &job, &attempt, &replica, &restart));
    v1::ReplicaExited e = ExitedSignal(s.run_id(), 15);
    e.set_stopped_by_request(true);
    core.ReplicaExited(core.FindJob(job_id)->FindReplica(replica)->node, e, FromMs(now), &fx);
  }
  return fx;
}

}  // namespace trainctl::sched::testing
