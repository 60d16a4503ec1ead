// FairShare: each project's decayed usage, and its share, which orders the queue across projects.
//
// Owns: one ledger per project — the resources its replicas held, in GPU-, CPU- and MiB-seconds,
// each halved every half-life (trainctld --fair-share-half-life, default 7 days) — and when each
// was last written. Decides: a project's share, its dominant decayed usage divided by its
// quota's weight, where a resource's usage counts as its fraction of the cluster's allocatable
// total times its resource weight (--fair-share-resource-weights): a project that used a tenth of
// the GPUs for an hour and no CPUs ranks as one that used a tenth of the CPUs for an hour. Across
// projects, the admission pass takes the next job from the project with the lowest share (its
// current allocation, counted the same way, breaks ties: within one pass, two projects with no
// history take turns). Never does: order jobs within a project (priority, then submission), admit
// anything, or write rows (the core asks it which ledgers are due, and writes them).
//
//   FairShare fs(options);
//   fs.Accrue(held_by_project, now);                     // every pass: decay, then add
//   double share = fs.Share("team-a", 2.0, capacity);    // lower goes first
//   for (const UsageLedger& row : fs.DueRows(now)) ...  // at most once a minute per project
//
// The same accrual charges the rollup (usage_rollup.h): the undecayed hourly usage per project,
// creator, node and labels that accounting reads. One record of usage, not two: fair share's
// ledgers and the rollup's rows are charged by one call over one interval.
//
// The accrual between two calls charges the allocation held at the later call: trainctld's loop
// calls it at the start of every turn, before the turn changes what replicas hold (and every
// admission pass calls it again), so each interval is charged what was held in it.
//
// Thread-safety: none; owned by the admission queue.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/admission.h"
#include "scheduler/usage_rollup.h"

namespace trainctl::sched {

struct FairShareOptions {
  // Off: the queue's order across projects is priority, then submission time (the order within a
  // project is that either way). Usage is still recorded.
  bool enabled = true;
  absl::Duration half_life = absl::Hours(7 * 24);
  // How much a fraction of the cluster's GPUs, CPUs and memory counts (dominant resource).
  double gpu_weight = 1;
  double cpu_weight = 1;
  double memory_weight = 1;
};

class FairShare {
 public:
  // Ledgers are written at most this often per project (and when a project first appears).
  static constexpr absl::Duration kWriteEvery = absl::Minutes(1);

  explicit FairShare(FairShareOptions options = {}) : options_(options) {}

  const FairShareOptions& options() const { return options_; }
  void set_options(const FairShareOptions& options) { options_ = options; }

  // The stored ledgers (after a restart or a failover): they are written, not due.
  void Restore(std::vector<UsageLedger> rows);

  // Brings every ledger to `now`: decays what it had, and adds what each project in `held` holds
  // now for the time since the last accrual (decayed as it accrued); charges the rollup's rows
  // with what its keys hold over the same interval, undecayed.
  void Accrue(const std::map<std::string, ProjectUsage>& held, absl::Time now);

  // The hourly accounting rows the accrual charges (usage_rollup.h). Its keys' holds are kept
  // by the admission queue (Hold/Release) beside `held`.
  UsageRollup& rollup() { return rollup_; }
  const UsageRollup& rollup() const { return rollup_; }

  // The ledgers changed since they were last written and not written within kWriteEvery; marks
  // them written.
  std::vector<UsageLedger> DueRows(absl::Time now);

  // The project's ledger as of the last accrual, or nullptr when it has used nothing.
  const UsageLedger* Find(const std::string& project) const;
  const std::map<std::string, UsageLedger>& ledgers() const { return ledgers_; }

  // The project's share: its dominant decayed usage over `capacity`, in seconds of the whole
  // dominant resource, divided by `weight`. 0 with no usage; 0 for every project when off.
  double Share(const std::string& project, double weight, const Res& capacity) const;
  // What holding `held` weighs the same way (the tie between projects with equal shares).
  double AllocationShare(const Res& held, double weight, const Res& capacity) const;

 private:
  // max over resources of weight * amount / capacity, for a resource the cluster has.
  double Dominant(double gpus, double cpu, double memory_mb, const Res& capacity) const;

  FairShareOptions options_;
  std::map<std::string, UsageLedger> ledgers_;
  UsageRollup rollup_;
  // When each ledger was last written; absent: never.
  std::map<std::string, absl::Time> written_;
  std::optional<absl::Time> last_accrual_;
};

// Whether `project` (with `quota`) holds more than its fair share of its cohort: on some resource
// the cohort's members have nominal quota of, `used` is more than their sum times the project's
// weight over the sum of the members' weights (`quotas`: the projects' own quotas; the project
// counts whether or not it has a row). False without a cohort. Preemption takes the jobs of such a
// borrower first (victims.h).
bool BeyondCohortShare(const std::string& project, const Quota& quota,
                       const std::map<std::string, Quota>& quotas, const Res& used);

}  // namespace trainctl::sched
