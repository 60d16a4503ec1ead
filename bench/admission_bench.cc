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
// only it has room). Then the same decisions on 1,000 nodes with and without preemption policies,
// and passes that decide a preemption (admission_preemption.cc); and the decisions with fair share
// and a gang's reservation on, beside both off (admission_reservation.cc).
//
//   build/bin/bench_admission
#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/admission_setup.h"
#include "common/time_util.h"
#include "scheduler/core.h"

namespace {

using trainctl::bench::ConfirmLaunches;
using trainctl::bench::Node;
using trainctl::bench::OneGpuJob;
using trainctl::sched::Core;
using trainctl::sched::Effects;
namespace v1 = trainctl::v1;

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
  trainctl::bench::Running running;
  Effects first;
  core.Schedule(now, &first);
  ConfirmLaunches(core, first, now, &running);
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

  const trainctl::bench::Decisions d =
      trainctl::bench::EndAndAdmit(core, kDecisions, &now, &running);
  const int admitted = d.admitted;
  const double secs = d.seconds, passes = d.passes;
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
  ConfirmLaunches(core, fill, now, &running);
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
  if (admitted != kDecisions) return 1;
  if (trainctl::bench::BenchPreemption() != 0) return 1;
  return trainctl::bench::BenchReservation();
}
