#include "server/watch_hub.h"

#include <vector>

namespace trainctl::server {

void WatchHub::Subscribe(const std::string& job_id, std::shared_ptr<JobWatcher> w) {
  absl::MutexLock lock(&mu_);
  watchers_.emplace(job_id, std::move(w));
}

std::vector<std::string> WatchHub::WatchedUnder(const std::string& prefix) {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (auto it = watchers_.lower_bound(prefix);
       it != watchers_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       it = watchers_.upper_bound(it->first)) {
    out.push_back(it->first);
  }
  return out;
}

void WatchHub::Publish(const v1::Job& job) {
  std::vector<std::shared_ptr<JobWatcher>> targets;
  {
    absl::MutexLock lock(&mu_);
    auto [begin, end] = watchers_.equal_range(job.id());
    for (auto it = begin; it != end; ++it) targets.push_back(it->second);
  }
  std::vector<JobWatcher*> finished;
  for (auto& w : targets) {
    if (!w->Push(job)) finished.push_back(w.get());
  }
  if (finished.empty()) return;
  absl::MutexLock lock(&mu_);
  auto [begin, end] = watchers_.equal_range(job.id());
  for (auto it = begin; it != end;) {
    bool done = false;
    for (JobWatcher* f : finished) done |= it->second.get() == f;
    it = done ? watchers_.erase(it) : std::next(it);
  }
}

bool WatchHub::Watched(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  return watchers_.count(job_id) > 0;
}

void WatchHub::Clear() {
  absl::MutexLock lock(&mu_);
  watchers_.clear();
}

}  // namespace trainctl::server
