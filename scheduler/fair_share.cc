#include "scheduler/fair_share.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace trainctl::sched {

namespace {

// What is left of one unit after `elapsed` with half-life `half_life`.
double Decay(absl::Duration elapsed, absl::Duration half_life) {
  if (half_life <= absl::ZeroDuration()) return 1;
  return std::exp2(-absl::FDivDuration(elapsed, half_life));
}

// Seconds of accrual over `elapsed`, each decayed from its moment to the end:
// the integral of 2^(-(elapsed - s) / half_life) ds over [0, elapsed].
double DecayedSeconds(absl::Duration elapsed, absl::Duration half_life) {
  const double seconds = absl::ToDoubleSeconds(elapsed);
  if (half_life <= absl::ZeroDuration()) return seconds;
  const double h = absl::ToDoubleSeconds(half_life) / std::log(2.0);
  return h * (1 - std::exp(-seconds / h));
}

}  // namespace

void FairShare::Restore(std::vector<UsageLedger> rows) {
  for (UsageLedger& row : rows) {
    written_[row.project] = row.as_of;
    ledgers_[row.project] = std::move(row);
  }
}

void FairShare::Accrue(const std::map<std::string, ProjectUsage>& held, absl::Time now) {
  if (!last_accrual_) last_accrual_ = now;
  if (now < *last_accrual_) return;  // a clock that stepped back: the next call goes on
  const absl::Duration elapsed = now - *last_accrual_;
  rollup_.Accrue(*last_accrual_, now);
  const double seconds = DecayedSeconds(elapsed, options_.half_life);
  for (auto& [project, ledger] : ledgers_) {
    // Each ledger decays from its own time (a restored one may be older than this process).
    const double left = Decay(now - std::min(ledger.as_of, now), options_.half_life);
    ledger.gpu_seconds *= left;
    ledger.cpu_seconds *= left;
    ledger.memory_mb_seconds *= left;
    ledger.as_of = now;
  }
  if (seconds > 0) {
    for (const auto& [project, usage] : held) {
      const Res& r = usage.used;
      if (r.gpus <= 0 && r.cpu <= 0 && r.memory_mb <= 0) continue;
      UsageLedger& ledger = ledgers_[project];
      ledger.project = project;
      ledger.as_of = now;
      ledger.gpu_seconds += static_cast<double>(r.gpus) * seconds;
      ledger.cpu_seconds += r.cpu * seconds;
      ledger.memory_mb_seconds += static_cast<double>(r.memory_mb) * seconds;
    }
  }
  last_accrual_ = now;
}

std::vector<UsageLedger> FairShare::DueRows(absl::Time now) {
  std::vector<UsageLedger> out;
  for (const auto& [project, ledger] : ledgers_) {
    auto it = written_.find(project);
    if (it != written_.end() && (ledger.as_of == it->second || now - it->second < kWriteEvery)) {
      continue;
    }
    written_[project] = ledger.as_of;
    out.push_back(ledger);
  }
  return out;
}

const UsageLedger* FairShare::Find(const std::string& project) const {
  auto it = ledgers_.find(project);
  return it == ledgers_.end() ? nullptr : &it->second;
}

double FairShare::Dominant(double gpus, double cpu, double memory_mb, const Res& capacity) const {
  double out = 0;
  if (capacity.gpus > 0) {
    out = std::max(out, options_.gpu_weight * gpus / static_cast<double>(capacity.gpus));
  }
  if (capacity.cpu > 0) out = std::max(out, options_.cpu_weight * cpu / capacity.cpu);
  if (capacity.memory_mb > 0) {
    out =
        std::max(out, options_.memory_weight * memory_mb / static_cast<double>(capacity.memory_mb));
  }
  return out;
}

double FairShare::Share(const std::string& project, double weight, const Res& capacity) const {
  if (!options_.enabled) return 0;
  const UsageLedger* ledger = Find(project);
  if (ledger == nullptr || weight <= 0) return 0;
  return Dominant(ledger->gpu_seconds, ledger->cpu_seconds, ledger->memory_mb_seconds, capacity) /
         weight;
}

double FairShare::AllocationShare(const Res& held, double weight, const Res& capacity) const {
  if (!options_.enabled || weight <= 0) return 0;
  return Dominant(static_cast<double>(held.gpus), held.cpu, static_cast<double>(held.memory_mb),
                  capacity) /
         weight;
}

bool BeyondCohortShare(const std::string& project, const Quota& quota,
                       const std::map<std::string, Quota>& quotas, const Res& used) {
  if (quota.cohort.empty()) return false;
  Res nominal;
  double weights = 0;
  auto add = [&](const Quota& q) {
    nominal.gpus += q.gpus.value_or(0);
    nominal.cpu += q.cpu.value_or(0);
    nominal.memory_mb += q.memory_mb.value_or(0);
    weights += q.WeightOr1();
  };
  for (const auto& [name, q] : quotas) {
    if (name != project && q.cohort == quota.cohort) add(q);
  }
  add(quota);
  const double fraction = quota.WeightOr1() / weights;
  return (nominal.gpus > 0 && static_cast<double>(used.gpus) > fraction * nominal.gpus) ||
         (nominal.cpu > 0 && used.cpu > fraction * nominal.cpu) ||
         (nominal.memory_mb > 0 &&
          static_cast<double>(used.memory_mb) > fraction * static_cast<double>(nominal.memory_mb));
}

}  // namespace trainctl::sched
