// Benchmark: admission decisions per second with 10,000 queued jobs across 50 projects.
//
// Drives the scheduler core directly (no processes, a fake clock): 20 nodes with 32 gpus each,
// 50 projects with a quota of 8 gpus, 200 one-gpu jobs queued per project. Each iteration ends
// one running job (its primary exits 0), runs a scheduling pass, and confirms the launch of the
// job that pass admitted: one admission decision, made with the whole queue waiting; and, of
// that, the time of the admission passes alone. Also reports the cost of a scheduling pass in
// which nothing fits, with the queue full: with every project at its quota, and then with the
// quotas lifted, the cluster full, 980 more nodes without GPUs and a maintenance window ahead on
// one node (every waiting job, expected to run 24 h, avoids that node, and the pass asks whether
// only it has room).
//
//   build/bin/bench_admission
#include <chrono>
#include <cstdio>
#include <deque>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/device_pool.h"

namespace {

using trainctl::sched::Core;
using trainctl::sched::Effects;
namespace v1 = trainctl::v1;

// A node of `gpus` synthetic GPUs (minor -1), listed as trainctl-agent --gpus N lists them.
v1::Register Node(int i, int gpus = 32) {
  v1::Register r;
  r.set_node(absl::StrCat("node-", i));
  r.set_address("127.0.0.1");
  r.mutable_allocatable()->set_cpu(256);
  r.mutable_allocatable()->set_memory_mb(1 << 20);
  r.mutable_allocatable()->set_gpus(gpus);
  *r.mutable_capacity() = r.allocatable();
  for (v1::GpuDevice& d : trainctl::sched::SyntheticDevices(gpus)) {
    *r.add_gpu_devices() = std::move(d);
  }
  r.set_agent_instance("bench");
  return r;
}

v1::JobSpec OneGpuJob(int project) {
  v1::JobSpec spec;
  spec.set_display_name("bench");
  spec.set_project(absl::StrCat("project-", project));
  v1::WorkerPool* p = spec.add_worker_pools();
  p->set_name("chief");
  p->set_replica_count(1);
  p->add_command("/bin/true");
  p->mutable_resources()->set_cpu(1);
  p->mutable_resources()->set_gpus(1);
  return spec;
}

}  // namespace

int main() {
  constexpr int kProjects = 50, kJobsPerProject = 200, kNodes = 20, kDecisions = 5000;
  trainctl::sched::CoreOptions options;
  options.checkpoint_root = "/tmp";
  options.id_seed = 1;
  Core core(options);
  absl::Time now = absl::FromUnixMillis(1'795'000'000'000);  // 2026-11-18
  Effects fx;
  for (int i = 0; i < kNodes; ++i) core.AgentRegistered(Node(i), now, &fx);
  for (int p = 0; p < kProjects; ++p) {
    trainctl::sched::Quota q;
    q.project = absl::StrCat("project-", p);
    q.gpus = 8;
    (void)core.SetQuota(q, now, &fx);
  }
  for (int j = 0; j < kJobsPerProject; ++j) {
    for (int p = 0; p < kProjects; ++p) {
      now += absl::Milliseconds(1);
      (void)core.SubmitJob(OneGpuJob(p), now, &fx);
    }
  }
  std::deque<std::pair<std::string, std::string>> running;  // (run id, node)
  auto confirm = [&](const Effects& e) {
    for (const trainctl::sched::Command& c : e.commands) {
      const std::string& node = c.node;
      const v1::SchedulerMessage& msg = c.message;
      if (!msg.has_launch()) continue;
      v1::ReplicaStarted s;
      s.set_run_id(msg.launch().run_id());
      s.set_pid(1);
      Effects ignored;
      core.ReplicaStarted(node, s, now, &ignored);
      running.push_back({msg.launch().run_id(), node});
    }
  };
  Effects first;
  core.Schedule(now, &first);
  confirm(first);
  std::printf("queued %d jobs in %d projects; %zu admitted at start (quota 8 gpus each)\n",
              kProjects * kJobsPerProject, kProjects, running.size());

  // The mean time of `passes` full passes that admit nothing: setting project-0's quota again
  // (to `gpus`, what it is) forces each without changing anything.
  auto mean_pass_us = [&](int passes, int64_t gpus) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < passes; ++i) {
      Effects e;
      trainctl::sched::Quota touch;
      touch.project = "project-0";
      touch.gpus = static_cast<int32_t>(gpus);
      (void)core.SetQuota(touch, now, &e);
      core.Schedule(now, &e);
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           passes;
  };
  // A pass in which nothing fits: every project is at its quota.
  const double idle_us = mean_pass_us(2000, 8);

  int admitted = 0;
  double passes = 0;  // seconds in the admission passes alone (Core::PlanAdmissions)
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kDecisions && !running.empty(); ++i) {
    auto [run, node] = running.front();
    running.pop_front();
    v1::ReplicaExited exited;
    exited.set_run_id(run);
    exited.set_exit_code(0);
    Effects e;
    now += absl::Milliseconds(1);
    core.ReplicaExited(node, exited, now, &e);
    const auto pass_start = std::chrono::steady_clock::now();
    const trainctl::sched::AdmissionPlan plan = core.PlanAdmissions(now);
    passes += std::chrono::duration<double>(std::chrono::steady_clock::now() - pass_start).count();
    core.StartAdmitted(plan, now, &e);
    size_t before = running.size();
    confirm(e);
    admitted += static_cast<int>(running.size() - before);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%d admission decisions in %.3f s: %.0f decisions/s (%.1f us each), with ~%d jobs "
      "queued\n",
      admitted, secs, admitted / secs, secs * 1e6 / admitted,
      kProjects * kJobsPerProject - admitted);
  std::printf(
      "of which the admission passes alone (deciding which job starts, and where): %.3f s, %.0f "
      "decisions/s\n",
      passes, admitted / passes);
  std::printf("a full scheduling pass that admits nothing: %.1f us\n", idle_us);

  // The cluster full, the rest of the queue waiting for room, a window ahead on node-0; and 980
  // more nodes without GPUs, which the waiting jobs cannot use but every pass looks at.
  Effects fill;
  constexpr int kCpuNodes = 980;
  for (int i = 0; i < kCpuNodes; ++i) {
    core.AgentRegistered(Node(kNodes + i, /*gpus=*/0), now, &fill);
  }
  for (int p = 0; p < kProjects; ++p) {
    trainctl::sched::Quota q;
    q.project = absl::StrCat("project-", p);
    q.gpus = 1'000'000;
    (void)core.SetQuota(q, now, &fill);
  }
  core.Schedule(now, &fill);
  confirm(fill);
  v1::SetNodeMaintenanceRequest window;
  window.set_name("node-0");
  *window.mutable_start_time() = trainctl::MsToTimestamp(absl::ToUnixMillis(now + absl::Hours(1)));
  *window.mutable_duration() = trainctl::MsToDuration(3'600'000);
  window.set_reason("bench");
  if (!core.SetNodeMaintenance(window, now, &fill).ok()) return 1;
  const double full_us = mean_pass_us(20, 1'000'000);
  std::printf(
      "a full scheduling pass with the cluster full (%zu running on %d nodes, %d more without "
      "GPUs), %d jobs waiting for room and a maintenance window ahead on one node: %.1f us\n",
      running.size(), kNodes, kCpuNodes,
      kProjects * kJobsPerProject - admitted - static_cast<int>(running.size()), full_us);
  return admitted == kDecisions ? 0 : 1;
}
