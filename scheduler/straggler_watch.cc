// StragglerWatch (straggler_watch.h).
#include "scheduler/straggler_watch.h"

#include <algorithm>

namespace trainctl::sched {

void StragglerWatch::Report(const std::string& replica, int64_t step, absl::Time t) {
  std::deque<Sample>& s = samples_[replica];
  if (!s.empty() && t < s.back().time) return;  // older than what it has (another source)
  if (!s.empty() && step < s.back().step) {
    // A restart from a checkpoint: start afresh (Evaluate says the rank is no longer judged).
    s.clear();
  }
  const absl::Duration spacing = options_.window / static_cast<int64_t>(kMaxSamples);
  // The newest sample stands in until the next report: it is kept only once it lies a spacing
  // after the one before it, so kept samples are a spacing apart (the first stays: it anchors
  // the history's start).
  if (s.size() >= 2 && s.back().time - s[s.size() - 2].time < spacing) s.pop_back();
  s.push_back({t, step});
  // Keep one sample at or before the window's start, as the base of the rate.
  while (s.size() >= 2 && s[1].time <= t - options_.window) s.pop_front();
}

void StragglerWatch::Forget(const std::string& replica) {
  samples_.erase(replica);
  straggling_.erase(replica);
}

std::optional<double> StragglerWatch::RateOf(const std::string& replica, absl::Time now) const {
  auto it = samples_.find(replica);
  if (it == samples_.end() || it->second.empty()) return std::nullopt;
  const std::deque<Sample>& s = it->second;
  const absl::Time start = now - options_.window;
  if (s.front().time > start) return std::nullopt;  // does not cover the window
  // The base: the last sample at or before the window's start.
  const Sample* base = &s.front();
  for (const Sample& x : s) {
    if (x.time > start) break;
    base = &x;
  }
  const double seconds = absl::ToDoubleSeconds(now - base->time);
  if (seconds <= 0) return std::nullopt;
  return static_cast<double>(s.back().step - base->step) / seconds;
}

std::vector<StragglerWatch::Verdict> StragglerWatch::Evaluate(absl::Time now) {
  std::map<std::string, double> rates;
  for (const auto& [replica, s] : samples_) {
    if (std::optional<double> rate = RateOf(replica, now)) rates[replica] = *rate;
  }
  std::vector<Verdict> out;
  if (rates.size() < 2) {
    for (const auto& [replica, on] : straggling_) out.push_back({replica, false, 0, 0});
    straggling_.clear();
    return out;
  }
  std::vector<double> sorted;
  for (const auto& [replica, rate] : rates) sorted.push_back(rate);
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  for (const auto& [replica, rate] : rates) {
    const bool slow = median > 0 && rate < options_.ratio * median;
    const bool was = straggling_.count(replica) > 0;
    if (slow == was) continue;
    if (slow) {
      straggling_[replica] = true;
    } else {
      straggling_.erase(replica);
    }
    out.push_back({replica, slow, rate, median});
  }
  // A straggler whose history no longer covers the window (it restarted) is no longer judged.
  for (auto it = straggling_.begin(); it != straggling_.end();) {
    if (rates.count(it->first) == 0) {
      out.push_back({it->first, false, 0, median});
      it = straggling_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace trainctl::sched
