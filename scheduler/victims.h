// Victim choice for preemption: which admitted jobs a waiting job may preempt, and the smallest
// set of them whose removal lets it start.
//
// What it decides, over plain values (the admission queue supplies them, and the question of
// whether the waiting job would fit without a set of jobs, which the placement pipeline answers
// with CheckGangWithout and the quota arithmetic with the victims' usage given back):
//   - who may be a victim (MayPreempt): a preemptible job that has run at least its minRuntime
//     and is not being preempted already, of the waiting job's own project when that project
//     lets higher priority preempt lower (preemptWithinProject), or of a project of its cohort
//     that borrows when the waiting job's project takes back what it lent (reclaim) and the
//     waiting job fits within its project's own quota;
//   - in which order victims are taken (VictimOrder): borrowers first (those beyond their fair
//     share of the cohort before those within it), then lower priority, then
//     the least work lost (allocated GPUs, then CPUs, times the time since the job's last
//     checkpoint or progress report), then the most recently started;
//   - the set (ChooseVictims): victims are added in that order until the waiting job fits, its
//     whole gang, by quota and by placement; when it would not fit even with every candidate
//     gone, nobody is preempted. Then each victim the job does not need is dropped again,
//     the last taken first, so that the set is minimal.
// What it never does: stop a job, send a notice or keep state (the job lifecycle carries out
// the decision), or decide by itself whether a job fits (the caller's FitsWithout does).
//
//   std::vector<VictimCandidate> candidates = ...;  // every admitted job with MayPreempt
//   std::optional<std::vector<std::string>> victims = ChooseVictims(candidates, fits);
//   if (victims) ... notify each victim ...
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/placement_pipeline.h"

namespace trainctl::sched {

// The waiting job that looks for room.
struct Preemptor {
  std::string job_id;
  std::string project;
  int32_t priority = 0;
  // Its project's cohort; empty: none (nothing to reclaim).
  std::string cohort;
  // Its project's quota policies (UNSPECIFIED is NEVER).
  v1::ReclaimPolicy reclaim = v1::RECLAIM_POLICY_NEVER;
  v1::WithinProjectPreemption within_project = v1::WITHIN_PROJECT_PREEMPTION_NEVER;
  // Its whole demand fits within its project's own quota (usage included), without borrowing:
  // only then does it reclaim what the project lent.
  bool fits_own_quota = false;
};

// An admitted job, as the victim search sees it.
struct VictimCandidate {
  std::string job_id;
  std::string project;
  std::string cohort;
  int32_t priority = 0;
  // Its project uses more than its own quota (borrows from the cohort).
  bool borrower = false;
  // A borrower whose project holds more than its fair share of the cohort (BeyondCohortShare,
  // fair_share.h): taken before the borrowers within theirs.
  bool beyond_fair_share = false;
  // scheduling.preemptible (default true).
  bool preemptible = true;
  // It is being preempted already (for another waiting job): its room is that job's.
  bool being_preempted = false;
  // When its current attempt started, and its scheduling.minRuntime.
  absl::Time started = absl::InfinitePast();
  absl::Duration min_runtime = absl::ZeroDuration();
  // Work it would lose: allocated GPUs and CPUs times the time since its last checkpoint or
  // progress report (or its start). Compared GPU-seconds first, then CPU-seconds.
  double gpu_seconds_lost = 0;
  double cpu_seconds_lost = 0;
  // What its replicas hold, in all (quota) and per node (placement).
  Res holds;
  std::vector<Allocation> allocations;
};

// Why a candidate may not be a victim of `preemptor` at `now`; empty when it may.
std::string WhyNotVictim(const Preemptor& preemptor, const VictimCandidate& candidate,
                         absl::Time now);
// Whether it may (WhyNotVictim would be empty), without building the words.
bool MayPreempt(const Preemptor& preemptor, const VictimCandidate& candidate, absl::Time now);

// The order victims are taken in: true when `a` goes before `b`.
bool VictimOrder(const VictimCandidate& a, const VictimCandidate& b);

// Whether the waiting job would start, by quota and placement, if `victims` were gone.
using FitsWithout = std::function<bool(const std::vector<const VictimCandidate*>& victims)>;

// The job ids of the minimal set of `candidates` (each one MayPreempt allows) whose removal lets
// the waiting job start, in the order taken; nullopt when even all of them would not. `fits` is not
// asked before the victims taken hold at least `shortfall` in all (what the job needs beyond what
// is free; zero: ask from the first victim on), and at most 2·|candidates| times.
std::optional<std::vector<std::string>> ChooseVictims(
    const std::vector<VictimCandidate>& candidates, const FitsWithout& fits,
    const Res& shortfall = Res{});

}  // namespace trainctl::sched
