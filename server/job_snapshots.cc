#include "server/job_snapshots.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/time_util.h"
#include "scheduler/model.h"

namespace trainctl::server {
namespace {

using Selector = std::vector<std::pair<std::string, std::string>>;

// "k=v,k2=v2" as (key, value) pairs; INVALID_ARGUMENT naming the part that is not KEY=VALUE.
absl::StatusOr<Selector> ParseLabelSelector(const std::string& text) {
  Selector out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const size_t eq = part.find('=');
    if (eq == 0 || eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "labelSelector must be KEY=VALUE[,KEY=VALUE...], got \"", part, "\" in \"", text, "\""));
    }
    out.emplace_back(std::string(part.substr(0, eq)), std::string(part.substr(eq + 1)));
  }
  return out;
}

bool Matches(const v1::Job& job, const Selector& selector) {
  for (const auto& [key, value] : selector) {
    auto it = job.spec().labels().find(key);
    if (it == job.spec().labels().end() || it->second != value) return false;
  }
  return true;
}

}  // namespace

void JobSnapshots::Publish(const std::vector<JobPtr>& jobs,
                           std::shared_ptr<const sched::QueueState> queue) {
  absl::MutexLock lock(&mu_);
  if (queue != nullptr) queue_ = std::move(queue);
  for (const JobPtr& job : jobs) {
    auto [it, inserted] = jobs_.insert({job->id(), job});
    if (inserted) {
      by_age_.insert({-TimestampToMs(job->create_time()), job->id()});
    } else {
      it->second = job;
    }
    // Under the lock: a watcher subscribing meanwhile sees this state either in its first
    // snapshot or as this push, never neither.
    hub_->Publish(*job);
  }
}

void JobSnapshots::Remove(const std::vector<std::string>& ids) {
  absl::MutexLock lock(&mu_);
  for (const std::string& id : ids) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    by_age_.erase({-TimestampToMs(it->second->create_time()), id});
    jobs_.erase(it);
  }
}

v1::Job JobSnapshots::WithQueueStatus(const JobPtr& job, const sched::QueueState* queue,
                                      int64_t now_ms) {
  v1::Job out = *job;
  if (job->state() == v1::JOB_STATE_QUEUED && queue != nullptr) {
    *out.mutable_queue_status() =
        sched::QueueStatusOf(*queue, sched::QueuedJobOf(*job), sched::FromMs(now_ms));
  }
  return out;
}

size_t JobSnapshots::BasicBytes(const v1::Job& job) {
  size_t heavy = 0;
  for (const v1::WorkerPool& pool : job.spec().worker_pools()) {
    for (const std::string& a : pool.command()) heavy += a.size();
    for (const std::string& a : pool.args()) heavy += a.size();
    for (const auto& [k, v] : pool.env()) heavy += k.size() + v.size();
  }
  for (const v1::Attempt& a : job.attempts()) heavy += a.ByteSizeLong();
  const size_t bytes = job.ByteSizeLong();
  return bytes > heavy ? bytes - heavy : 0;
}

void JobSnapshots::ToBasic(v1::Job* job) {
  for (v1::WorkerPool& pool : *job->mutable_spec()->mutable_worker_pools()) {
    pool.clear_command();
    pool.clear_args();
    pool.clear_env();
  }
  job->clear_attempts();
}

absl::StatusOr<v1::Job> JobSnapshots::Get(const std::string& id, int64_t now_ms) const {
  JobPtr job;
  std::shared_ptr<const sched::QueueState> queue;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
    job = it->second;
    queue = queue_;
  }
  return WithQueueStatus(job, queue.get(), now_ms);
}

absl::StatusOr<v1::ListJobsResponse> JobSnapshots::List(const v1::ListJobsRequest& req,
                                                        int64_t now_ms) const {
  const int32_t size = req.page_size() == 0 ? 100 : req.page_size();
  if (size < 1 || size > 1000) {
    return absl::InvalidArgumentError(absl::StrCat("pageSize must be 1..1000, got ", size));
  }
  std::pair<int64_t, std::string> after;
  if (!req.page_token().empty()) {
    std::pair<std::string, std::string> parts =
        absl::StrSplit(req.page_token(), absl::MaxSplits(':', 1));
    if (!absl::SimpleAtoi(parts.first, &after.first) || parts.second.empty()) {
      return absl::InvalidArgumentError("pageToken is not one this server returned");
    }
    after.second = parts.second;
  }
  absl::StatusOr<Selector> selector = ParseLabelSelector(req.label_selector());
  if (!selector.ok()) return selector.status();
  const std::set<int> states(req.states().begin(), req.states().end());
  const bool basic = req.view() == v1::JOB_VIEW_BASIC;
  std::vector<JobPtr> page;
  size_t page_bytes = 0;
  std::string next_token;
  std::shared_ptr<const sched::QueueState> queue;
  {
    absl::MutexLock lock(&mu_);
    queue = queue_;
    auto it = req.page_token().empty() ? by_age_.begin() : by_age_.upper_bound(after);
    for (; it != by_age_.end(); ++it) {
      const JobPtr& job = jobs_.at(it->second);
      if (!states.empty() && states.count(job->state()) == 0) continue;
      if (!req.project().empty() && job->project() != req.project()) continue;
      if (!Matches(*job, *selector)) continue;
      const size_t bytes = basic ? BasicBytes(*job) : job->ByteSizeLong();
      // A page ends at pageSize jobs, or before it would outgrow kMaxPageBytes (it holds one job
      // at least), so that every page fits a client's 4 MiB message limit.
      if (static_cast<int32_t>(page.size()) == size ||
          (!page.empty() && page_bytes + bytes > kMaxPageBytes)) {
        // There is more: the token names the last job returned.
        const JobPtr& last = page.back();
        next_token = absl::StrCat(-TimestampToMs(last->create_time()), ":", last->id());
        break;
      }
      page.push_back(job);
      page_bytes += bytes;
    }
  }
  v1::ListJobsResponse resp;
  for (const JobPtr& job : page) {
    v1::Job* out = resp.add_jobs();
    *out = WithQueueStatus(job, queue.get(), now_ms);
    if (basic) ToBasic(out);
  }
  resp.set_next_page_token(next_token);
  return resp;
}

absl::Status JobSnapshots::Watch(const std::string& id, std::shared_ptr<JobWatcher> watcher) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  if (watcher->Push(*it->second) && !IsTerminal(it->second->state())) {
    hub_->Subscribe(id, std::move(watcher));
  }
  return absl::OkStatus();
}

}  // namespace trainctl::server
