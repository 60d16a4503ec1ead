// bench_admission's second part: what preemption policies cost the admission passes, and what a
// pass that decides a preemption costs.
//
// 1,000 nodes (20 with 32 GPUs, 980 without), 50 projects in one cohort with a quota of 8 GPUs
// each, 200 one-GPU jobs queued per project, their priorities falling with their submission (so
// that no waiting job outranks a running one). The decision loop of the first part runs twice on
// this cluster: with no policy (the default), and with every project's `reclaim: any` and
// `preemptWithinProject: lower-priority`, where every blocked job's pass searches for victims and
// finds none. Then, with the policies on, urgent jobs (priority 1000) arrive one at a time: the
// pass that decides the preemption is timed, and the whole cycle (the notice, the victim's exit,
// the pass that starts the urgent job).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/admission_setup.h"
#include "scheduler/core.h"

namespace trainctl::bench {
namespace {

constexpr int kProjects = 50, kJobsPerProject = 200, kGpuNodes = 20, kCpuNodes = 980;
constexpr int kDecisions = 5000;
// Each project has 8 running jobs to preempt, and an urgent job never preempts another.
constexpr int kUrgent = 300;

struct Cluster {
  std::unique_ptr<sched::Core> core;
  absl::Time now = absl::FromUnixMillis(1'795'000'000'000);
  Running running;
};

Cluster Build(bool policies) {
  sched::CoreOptions options;
  options.checkpoint_root = "/tmp";
  options.id_seed = 1;
  Cluster c;
  c.core = std::make_unique<sched::Core>(options);
  sched::Effects fx;
  for (int i = 0; i < kGpuNodes + kCpuNodes; ++i) {
    c.core->AgentRegistered(Node(i, i < kGpuNodes ? 32 : 0), c.now, &fx);
  }
  for (int p = 0; p < kProjects; ++p) {
    sched::Quota q;
    q.project = absl::StrCat("project-", p);
    q.gpus = 8;
    q.cohort = "bench";
    if (policies) {
      q.reclaim = v1::RECLAIM_POLICY_ANY;
      q.preempt_within_project = v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY;
    }
    if (!c.core->SetQuota(q, c.now, &fx).ok()) std::abort();
  }
  for (int j = 0; j < kJobsPerProject; ++j) {
    for (int p = 0; p < kProjects; ++p) {
      c.now += absl::Milliseconds(1);
      if (!c.core->SubmitJob(OneGpuJob(p, (kJobsPerProject - j) / 10), c.now, &fx).ok()) {
        std::abort();
      }
    }
  }
  sched::Effects first;
  c.core->Schedule(c.now, &first);
  ConfirmLaunches(*c.core, first, c.now, &c.running);
  return c;
}

void Print(const char* what, const Decisions& d) {
  std::printf(
      "%s: %d decisions in %.3f s, %.0f decisions/s (%.1f us each); the passes alone %.0f "
      "decisions/s\n",
      what, d.admitted, d.seconds, d.admitted / d.seconds, d.seconds * 1e6 / d.admitted,
      d.admitted / d.passes);
}

}  // namespace

int BenchPreemption() {
  Cluster off = Build(false);
  const Decisions without = EndAndAdmit(*off.core, kDecisions, &off.now, &off.running);
  Print("1,000 nodes, no preemption policy", without);

  Cluster on = Build(true);
  const Decisions with = EndAndAdmit(*on.core, kDecisions, &on.now, &on.running);
  Print("1,000 nodes, reclaim any and preemptWithinProject lower-priority", with);

  // Urgent jobs: each pass decides one preemption, the victim exits on its notice, and the next
  // pass starts the urgent job on the room it freed.
  double deciding = 0;
  int preempted = 0, started = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kUrgent; ++i) {
    sched::Effects fx;
    on.now += absl::Milliseconds(1);
    if (!on.core->SubmitJob(OneGpuJob(i % kProjects, 1000), on.now, &fx).ok()) return 1;
    const auto pass_start = std::chrono::steady_clock::now();
    const sched::AdmissionPlan plan = on.core->PlanAdmissions(on.now);
    deciding +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - pass_start).count();
    on.core->StartAdmitted(plan, on.now, &fx);
    preempted += static_cast<int>(plan.preemptions.size());
    for (const sched::Command& c : fx.commands) {
      if (c.message.has_notice())
        Exit(*on.core, c.message.notice().run_id(), c.node, 0, on.now, &fx);
    }
    sched::Effects next;
    on.core->Schedule(on.now, &next);
    const size_t before = on.running.size();
    ConfirmLaunches(*on.core, next, on.now, &on.running);
    started += static_cast<int>(on.running.size() - before);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%d urgent jobs: %d preemptions decided, %d jobs started; the pass deciding a "
      "preemption %.1f us, a whole cycle (notice, exit, start) %.1f us\n",
      kUrgent, preempted, started, deciding * 1e6 / kUrgent, secs * 1e6 / kUrgent);
  const bool all = without.admitted == kDecisions && with.admitted == kDecisions &&
                   preempted == kUrgent && started >= kUrgent;
  return all ? 0 : 1;
}

}  // namespace trainctl::bench
