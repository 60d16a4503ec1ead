// bench_admission's third part: what fair share and a reservation cost the admission passes.
//
// 20 nodes with 32 GPUs, 50 projects without quotas, the cluster full of one-GPU jobs (each with
// a 1h scheduling.timeout, so every expected start is known), then a gang of 2 x 32 GPUs and
// 10,000 one-GPU jobs queued. The clock moves past --reservation-after (1s here): the gang gets the
// reservation, its two nodes are kept (no one-GPU job backfills: each would run past the gang's
// start), and once the gang starts the reservation passes on to the first one-GPU job in line,
// made again at each start. The decision loop of the first part runs with fair share and
// reservations off (priority, then submission) and on, on the same cluster.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/admission_setup.h"
#include "scheduler/core.h"

namespace trainctl::bench {
// Named, not anonymous: the bench's parts share one unity build.
namespace reservation_part {

constexpr int kProjects = 50, kJobsPerProject = 200, kNodes = 20, kDecisions = 5000;

v1::JobSpec WithTimeout(v1::JobSpec spec) {
  spec.mutable_scheduling()->mutable_timeout()->set_seconds(3600);
  return spec;
}

// Returns the decisions made, with fair share and reservations on or off.
Decisions Run(bool fair_share, bool reservations, bool* reserved) {
  sched::CoreOptions options;
  options.checkpoint_root = "/tmp";
  options.id_seed = 1;
  options.fair_share.enabled = fair_share;
  // Short, so that the fake clock passes it without the agents' heartbeats going stale.
  options.reservation_after = absl::Seconds(1);
  if (!reservations) options.reservation_after.reset();
  sched::Core core(options);
  absl::Time now = absl::FromUnixMillis(1'795'000'000'000);
  sched::Effects fx;
  for (int i = 0; i < kNodes; ++i) core.AgentRegistered(Node(i), now, &fx);
  Running running;
  // The cluster full: 32 jobs per node, spread over the projects.
  for (int j = 0; j < kNodes * 32; ++j) {
    now += absl::Milliseconds(1);
    (void)core.SubmitJob(WithTimeout(OneGpuJob(j % kProjects)), now, &fx);
  }
  sched::Effects first;
  core.Schedule(now, &first);
  ConfirmLaunches(core, first, now, &running);
  v1::JobSpec gang = WithTimeout(OneGpuJob(kProjects));
  gang.mutable_worker_pools(0)->mutable_resources()->set_gpus(32);
  *gang.add_worker_pools() = gang.worker_pools(0);
  gang.mutable_worker_pools(1)->set_name("worker");
  now += absl::Milliseconds(1);
  const std::string gang_id = (*core.SubmitJob(gang, now, &fx))->id;
  for (int j = 0; j < kJobsPerProject; ++j) {
    for (int p = 0; p < kProjects; ++p) {
      now += absl::Milliseconds(1);
      (void)core.SubmitJob(WithTimeout(OneGpuJob(p)), now, &fx);
    }
  }
  now += absl::Seconds(2);
  sched::Effects turn;
  core.Tick(now, &turn);
  core.Schedule(now, &turn);
  ConfirmLaunches(core, turn, now, &running);
  *reserved = false;
  for (const v1::Node& n : core.ListNodes()) *reserved |= n.reservation().job_id() == gang_id;
  return EndAndAdmit(core, kDecisions, &now, &running);
}

}  // namespace reservation_part

int BenchReservation() {
  using reservation_part::Run;
  std::printf(
      "\nfair share and a reservation (20 nodes x 32 GPUs full of 1-GPU jobs with 1h timeouts, "
      "a 2 x 32-GPU gang and %d 1-GPU jobs queued, the clock past --reservation-after):\n",
      reservation_part::kProjects * reservation_part::kJobsPerProject);
  for (const auto& [fair_share, reservations] :
       {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}}) {
    bool reserved = false;
    const Decisions d = Run(fair_share, reservations, &reserved);
    std::printf(
        "  fair share %-3s, reservations %-3s: %d decisions in %.3f s, %.0f decisions/s; the "
        "passes alone %.0f decisions/s%s\n",
        fair_share ? "on" : "off", reservations ? "on" : "off", d.admitted, d.seconds,
        d.admitted / d.seconds, d.admitted / d.passes,
        reserved ? " (the gang's two nodes kept for it)" : "");
    if (reservations && !reserved) return 1;
    if (d.admitted < reservation_part::kDecisions / 2) return 1;
  }
  return 0;
}

}  // namespace trainctl::bench
