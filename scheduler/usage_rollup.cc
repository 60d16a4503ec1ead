// UsageRollup: hourly undecayed usage per key (scheduler/usage_rollup.h).
#include "scheduler/usage_rollup.h"

#include <algorithm>

namespace trainctl::sched {

void UsageRollup::Restore(std::vector<UsageHour> rows) {
  for (UsageHour& usage : rows) {
    RowId id{usage.hour, usage.key};
    Row& row = rows_[id];
    row.usage = std::move(usage);
    row.dirty = false;
    row.written = row.usage.hour;
  }
}

UsageRollup::Row& UsageRollup::RowOf(absl::Time hour, const UsageKey& key) {
  auto [it, inserted] = rows_.try_emplace(RowId{hour, key});
  if (inserted) {
    it->second.usage.hour = hour;
    it->second.usage.key = key;
  }
  return it->second;
}

void UsageRollup::Hold(const UsageKey& key, const Res& need, bool run, absl::Duration queue_wait) {
  Held& held = held_[key];
  held.need += need;
  held.replicas++;
  if (!run) return;
  if (const std::optional<absl::Time> hour = current_hour()) {
    Row& row = RowOf(*hour, key);
    row.usage.runs++;
    row.usage.queue_wait_seconds +=
        absl::ToDoubleSeconds(std::max(queue_wait, absl::ZeroDuration()));
    row.dirty = true;
  } else {
    early_runs_.emplace_back(key, queue_wait);
  }
}

void UsageRollup::Release(const UsageKey& key, const Res& need) {
  auto it = held_.find(key);
  if (it == held_.end()) return;
  it->second.need -= need;
  if (--it->second.replicas <= 0) held_.erase(it);
  if (const std::optional<absl::Time> hour = current_hour()) {
    RowId id{*hour, key};
    if (rows_.count(id) > 0) flush_.insert(std::move(id));
  }
}

void UsageRollup::Accrue(absl::Time from, absl::Time to) {
  if (!last_ || *last_ < to) last_ = to;
  if (!early_runs_.empty()) {
    for (auto& [key, wait] : early_runs_) {
      Row& row = RowOf(HourOf(from), key);
      row.usage.runs++;
      row.usage.queue_wait_seconds += absl::ToDoubleSeconds(std::max(wait, absl::ZeroDuration()));
      row.dirty = true;
    }
    early_runs_.clear();
  }
  absl::Time t = from;
  while (t < to) {
    const absl::Time hour = HourOf(t);
    const absl::Time end = std::min(to, hour + absl::Hours(1));
    const double seconds = absl::ToDoubleSeconds(end - t);
    for (auto& [key, held] : held_) {
      if (held.row_hour != hour || held.row == nullptr) {
        held.row = &RowOf(hour, key);
        held.row_hour = hour;
      }
      UsageHour& u = held.row->usage;
      const double gpu = static_cast<double>(held.need.gpus) * seconds;
      const double cpu = held.need.cpu * seconds;
      const double memory = static_cast<double>(held.need.memory_mb) * seconds;
      u.gpu_seconds += gpu;
      u.cpu_seconds += cpu;
      u.memory_mb_seconds += memory;
      u.wall_seconds += static_cast<double>(held.replicas) * seconds;
      held.row->dirty = true;
      UsageAdded& added = added_[key.project];
      added.gpu_seconds += gpu;
      added.cpu_seconds += cpu;
      added.memory_mb_seconds += memory;
    }
    t = end;
  }
}

std::vector<UsageHour> UsageRollup::DueRows(absl::Time now) {
  std::vector<UsageHour> out;
  const absl::Time open_hour = HourOf(now);
  bool erased = false;
  for (auto it = rows_.begin(); it != rows_.end();) {
    Row& row = it->second;
    const bool closed = it->first.first < open_hour;
    const bool due = row.dirty && (closed || !row.written || flush_.count(it->first) > 0 ||
                                   now - *row.written >= kWriteEvery);
    if (due) {
      out.push_back(row.usage);
      row.dirty = false;
      row.written = now;
    }
    if (closed && !row.dirty) {
      it = rows_.erase(it);
      erased = true;
    } else {
      ++it;
    }
  }
  if (erased) {
    // No held key may point at a dropped row (their rows are found again as they accrue).
    for (auto& [key, held] : held_) {
      if (held.row_hour < open_hour) held.row = nullptr;
    }
  }
  flush_.clear();
  return out;
}

std::map<std::string, UsageAdded> UsageRollup::TakeAdded() {
  std::map<std::string, UsageAdded> out;
  out.swap(added_);
  return out;
}

const UsageHour* UsageRollup::Find(absl::Time hour, const UsageKey& key) const {
  auto it = rows_.find(RowId{hour, key});
  return it == rows_.end() ? nullptr : &it->second.usage;
}

}  // namespace trainctl::sched
