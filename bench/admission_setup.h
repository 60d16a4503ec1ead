// What bench_admission's runs share: a core's synthetic nodes and one-GPU jobs, and the decision
// loop (one running job ends, the admission passes run, the launch they made is confirmed).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "scheduler/core.h"
#include "scheduler/device_pool.h"

namespace trainctl::bench {

// A node of `gpus` synthetic GPUs (minor -1), listed as trainctl-agent --gpus N lists them.
inline v1::Register Node(int i, int gpus = 32) {
  v1::Register r;
  r.set_node(absl::StrCat("node-", i));
  r.set_address("127.0.0.1");
  r.mutable_allocatable()->set_cpu(256);
  r.mutable_allocatable()->set_memory_mb(1 << 20);
  r.mutable_allocatable()->set_gpus(gpus);
  *r.mutable_capacity() = r.allocatable();
  for (v1::GpuDevice& d : sched::SyntheticDevices(gpus)) *r.add_gpu_devices() = std::move(d);
  r.set_agent_instance("bench");
  return r;
}

inline v1::JobSpec OneGpuJob(int project, int32_t priority = 0) {
  v1::JobSpec spec;
  spec.set_display_name("bench");
  spec.set_project(absl::StrCat("project-", project));
  spec.set_priority(priority);
  v1::WorkerPool* p = spec.add_worker_pools();
  p->set_name("chief");
  p->set_replica_count(1);
  p->add_command("/bin/true");
  p->mutable_resources()->set_cpu(1);
  p->mutable_resources()->set_gpus(1);
  return spec;
}

// The runs started, oldest first: (run id, node).
using Running = std::deque<std::pair<std::string, std::string>>;

// Confirms every launch in `fx` (the agent's ReplicaStarted) and records its run.
inline void ConfirmLaunches(sched::Core& core, const sched::Effects& fx, absl::Time now,
                            Running* running) {
  for (const sched::Command& c : fx.commands) {
    if (!c.message.has_launch()) continue;
    v1::ReplicaStarted s;
    s.set_run_id(c.message.launch().run_id());
    s.set_pid(1);
    sched::Effects ignored;
    core.ReplicaStarted(c.node, s, now, &ignored);
    running->push_back({c.message.launch().run_id(), c.node});
  }
}

// The run `run` on `node` exits with `code`.
inline void Exit(sched::Core& core, const std::string& run, const std::string& node, int code,
                 absl::Time now, sched::Effects* fx) {
  v1::ReplicaExited exited;
  exited.set_run_id(run);
  exited.set_exit_code(code);
  core.ReplicaExited(node, exited, now, fx);
}

struct Decisions {
  int admitted = 0;
  double seconds = 0;  // the whole loop
  double passes = 0;   // of which the admission passes alone (Core::PlanAdmissions)
};

// `decisions` times: the oldest running job ends (its primary exits 0), a scheduling pass runs,
// and the launch it made is confirmed.
inline Decisions EndAndAdmit(sched::Core& core, int decisions, absl::Time* now, Running* running) {
  Decisions out;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < decisions && !running->empty(); ++i) {
    auto [run, node] = running->front();
    running->pop_front();
    sched::Effects e;
    *now += absl::Milliseconds(1);
    Exit(core, run, node, 0, *now, &e);
    const auto pass_start = std::chrono::steady_clock::now();
    const sched::AdmissionPlan plan = core.PlanAdmissions(*now);
    out.passes +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - pass_start).count();
    core.StartAdmitted(plan, *now, &e);
    const size_t before = running->size();
    ConfirmLaunches(core, e, *now, running);
    out.admitted += static_cast<int>(running->size() - before);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

// bench_admission's second part (admission_preemption.cc): the decision loop on 1,000 nodes with
// and without preemption policies, and passes that decide a preemption. 0 when every decision
// was made.
int BenchPreemption();

// bench_admission's third part (admission_reservation.cc): the decision loop with fair share and
// reservations off and on, a gang's reservation in place. 0 when the reservation was made and
// most decisions were.
int BenchReservation();

}  // namespace trainctl::bench
