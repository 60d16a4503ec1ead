#include "agents/cpu_manager.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/flag_values.h"

namespace trainctl::agent {

absl::StatusOr<CpuPolicy> ParseCpuPolicy(absl::string_view text) {
  if (text == "none") return CpuPolicy::kNone;
  if (text == "static") return CpuPolicy::kStatic;
  return BadFlagValue("--cpu-policy", "none or static", text);
}

int ExclusiveCpuCount(double cpu) {
  if (!(cpu >= 1) || cpu > 1 << 20 || std::floor(cpu) != cpu) return 0;
  return static_cast<int>(cpu);
}

StaticCpuManager::StaticCpuManager(std::set<int> cpus, int min_shared) : cpus_(std::move(cpus)) {
  const size_t shared = std::min<size_t>(std::max(min_shared, 1), cpus_.size());
  auto it = cpus_.begin();
  for (size_t i = 0; i < shared; ++i, ++it) always_shared_.insert(*it);
}

bool StaticCpuManager::Assignable(int cpu) const {
  return cpus_.count(cpu) > 0 && always_shared_.count(cpu) == 0 && taken_.count(cpu) == 0;
}

std::optional<std::set<int>> StaticCpuManager::Allocate(const std::string& run_id, int count) {
  if (count < 1 || held_.count(run_id) > 0) return std::nullopt;
  std::set<int> chosen;
  for (int cpu : cpus_) {
    if (static_cast<int>(chosen.size()) == count) break;
    if (Assignable(cpu)) chosen.insert(cpu);
  }
  if (static_cast<int>(chosen.size()) < count) return std::nullopt;
  held_[run_id] = chosen;
  taken_.insert(chosen.begin(), chosen.end());
  return chosen;
}

bool StaticCpuManager::Restore(const std::string& run_id, const std::set<int>& cpus) {
  if (cpus.empty() || held_.count(run_id) > 0) return false;
  for (int cpu : cpus) {
    if (!Assignable(cpu)) return false;
  }
  held_[run_id] = cpus;
  taken_.insert(cpus.begin(), cpus.end());
  return true;
}

bool StaticCpuManager::Release(const std::string& run_id) {
  auto it = held_.find(run_id);
  if (it == held_.end()) return false;
  for (int cpu : it->second) taken_.erase(cpu);
  held_.erase(it);
  return true;
}

std::set<int> StaticCpuManager::ExclusiveOf(const std::string& run_id) const {
  auto it = held_.find(run_id);
  return it == held_.end() ? std::set<int>() : it->second;
}

std::set<int> StaticCpuManager::SharedPool() const {
  std::set<int> shared;
  std::set_difference(cpus_.begin(), cpus_.end(), taken_.begin(), taken_.end(),
                      std::inserter(shared, shared.end()));
  return shared;
}

}  // namespace trainctl::agent
