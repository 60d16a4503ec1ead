#include "server/job_snapshots.h"

#include <algorithm>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/array_ids.h"
#include "common/time_util.h"
#include "model/model.h"
#include "scheduler/job_arrays.h"

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
  // The snapshots replaced are freed after the lock is released: freeing a large gang's job is
  // work the readers need not wait for.
  std::vector<JobPtr> replaced;
  std::shared_ptr<const sched::QueueState> old_queue;
  absl::MutexLock lock(&mu_);
  if (queue != nullptr) {
    old_queue = std::move(queue_);
    queue_ = std::move(queue);
  }
  replaced.reserve(jobs.size());
  for (const JobPtr& job : jobs) {
    auto [it, inserted] = jobs_.insert({job->id(), job});
    if (inserted) {
      by_age_.insert({-TimestampToMs(job->create_time()), job->id()});
    } else {
      replaced.push_back(std::move(it->second));
      it->second = job;
    }
    // Under the lock: a watcher subscribing meanwhile sees this state either in its first
    // snapshot or as this push, never neither. Only a watched job's queue status is computed.
    if (hub_->Watched(job->id())) hub_->Publish(WithQueueStatus(job, queue_.get(), clock_()));
    // Watchers of an array's elements that have not started see them change with the array
    // (cancelled before they started, or the array ended).
    if (job->has_array()) {
      for (const std::string& id : hub_->WatchedUnder(job->id() + "-")) {
        const std::optional<ElementId> e = ParseElementId(id);
        if (!e || e->array != job->id() || jobs_.count(id) != 0) continue;
        if (std::optional<v1::Job> element = sched::SynthesizeElement(*job, e->index)) {
          hub_->Publish(*element);
        }
      }
    }
  }
}

void JobSnapshots::Remove(const std::vector<std::string>& ids) {
  std::vector<JobPtr> removed;  // freed after the lock, as in Publish
  absl::MutexLock lock(&mu_);
  for (const std::string& id : ids) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    by_age_.erase({-TimestampToMs(it->second->create_time()), id});
    removed.push_back(std::move(it->second));
    jobs_.erase(it);
  }
}

v1::Job JobSnapshots::WithQueueStatus(const JobPtr& job, const sched::QueueState* queue,
                                      int64_t now_ms) {
  v1::Job out = *job;
  if (job->has_array()) {
    // An array is in no queue: what keeps its elements not started yet from starting.
    if (!IsTerminal(job->state()) && job->array().waiting() > 0) {
      const sched::ArrayWait wait = sched::WaitingBlocker(*job);
      out.set_queue_reason(wait.text);
      *out.mutable_queue_status()->add_blockers() = sched::MakeBlocker(wait.kind, wait.text);
    }
    return out;
  }
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

std::string JobSnapshots::TokenOf(const v1::Job& job) {
  return absl::StrCat(-TimestampToMs(job.create_time()), ":", job.id());
}

absl::StatusOr<std::optional<v1::Job>> JobSnapshots::FromArchive(const std::string& id) const {
  if (archive_ == nullptr) return std::nullopt;
  absl::StatusOr<std::optional<v1::Job>> stored = archive_->Get(id);
  if (stored.ok() && stored->has_value()) redactor_.Redact(&**stored);
  return stored;
}

bool JobSnapshots::Holds(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  return jobs_.count(id) > 0;
}

void JobSnapshots::ForEach(const std::function<void(const v1::Job&)>& fn) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, job] : jobs_) fn(*job);
}

absl::StatusOr<v1::Job> JobSnapshots::Get(const std::string& id, int64_t now_ms) const {
  JobPtr job;
  std::shared_ptr<const sched::QueueState> queue;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it != jobs_.end()) {
      job = it->second;
      queue = queue_;
    }
  }
  if (job != nullptr) return WithQueueStatus(job, queue.get(), now_ms);
  absl::StatusOr<std::optional<v1::Job>> stored = FromArchive(id);
  if (!stored.ok()) return stored.status();
  if (stored->has_value()) return **std::move(stored);
  // An element of a job array that has not started is read from its array (job_arrays.h).
  if (const std::optional<ElementId> e = ParseElementId(id)) {
    absl::StatusOr<v1::Job> array = Get(e->array, now_ms);
    if (array.ok() && array->has_array()) {
      if (std::optional<v1::Job> element = sched::SynthesizeElement(*array, e->index)) {
        return *std::move(element);
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
}

absl::StatusOr<v1::ListJobsResponse> JobSnapshots::List(const v1::ListJobsRequest& req,
                                                        int64_t now_ms) const {
  const int32_t size = req.page_size() == 0 ? 100 : req.page_size();
  if (size < 1 || size > 1000) {
    return absl::InvalidArgumentError(absl::StrCat("pageSize must be 1..1000, got ", size));
  }
  std::optional<std::pair<int64_t, std::string>> after;
  if (!req.page_token().empty()) {
    std::pair<std::string, std::string> parts =
        absl::StrSplit(req.page_token(), absl::MaxSplits(':', 1));
    int64_t position = 0;
    if (!absl::SimpleAtoi(parts.first, &position) || parts.second.empty()) {
      return absl::InvalidArgumentError("pageToken is not one this server returned");
    }
    after.emplace(position, parts.second);
  }
  absl::StatusOr<Selector> selector = ParseLabelSelector(req.label_selector());
  if (!selector.ok()) return selector.status();
  bool live_only = !req.states().empty();
  for (int state : req.states()) {
    if (state == v1::JOB_STATE_UNSPECIFIED || !v1::JobState_IsValid(state)) {
      return absl::InvalidArgumentError(
          absl::StrCat("states must hold job states (QUEUED..CANCELLED), got ", state));
    }
    if (IsTerminal(static_cast<v1::JobState>(state))) live_only = false;
  }
  // `list --array`: on its first page, one row first for the elements not started yet.
  std::optional<v1::Job> waiting;
  if (!req.array().empty() && !after) {
    absl::StatusOr<v1::Job> array = Get(req.array(), now_ms);
    if (!array.ok()) return array.status();
    if (!array->has_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("array: job ", req.array(), " is not a job array"));
    }
    const bool queued_asked =
        req.states().empty() || std::find(req.states().begin(), req.states().end(),
                                          v1::JOB_STATE_QUEUED) != req.states().end();
    if (queued_asked) waiting = sched::WaitingRow(*array);
  }
  const int32_t rest = waiting ? size - 1 : size;
  absl::StatusOr<v1::ListJobsResponse> page;
  if (rest == 0) {
    // The waiting row fills the page: the next one starts from the newest element.
    page = v1::ListJobsResponse();
    page->set_next_page_token(absl::StrCat(std::numeric_limits<int64_t>::min() / 2, ":", "-"));
  } else if (archive_ == nullptr || live_only) {
    // Every live job is held: the database has nothing more to show.
    page = ListHeld(req, rest, after, *selector, now_ms);
  } else {
    page = ListArchived(req, rest, after, *selector, now_ms);
  }
  if (!page.ok() || !waiting) return page;
  v1::ListJobsResponse out;
  v1::Job* first = out.add_jobs();
  *first = *std::move(waiting);
  if (req.view() == v1::JOB_VIEW_BASIC) ToBasic(first);
  for (v1::Job& job : *page->mutable_jobs()) *out.add_jobs() = std::move(job);
  out.set_next_page_token(page->next_page_token());
  return out;
}

bool JobSnapshots::InArrayFilter(const v1::ListJobsRequest& req, const v1::Job& job) {
  // Without `array`, elements are left out: their array is one row with their counts.
  if (req.array().empty()) return !job.has_element();
  return job.element().array() == req.array();
}

v1::ListJobsResponse JobSnapshots::ListHeld(
    const v1::ListJobsRequest& req, int32_t size,
    const std::optional<std::pair<int64_t, std::string>>& after, const Selector& selector,
    int64_t now_ms) const {
  const std::set<int> states(req.states().begin(), req.states().end());
  const bool basic = req.view() == v1::JOB_VIEW_BASIC;
  std::vector<JobPtr> page;
  size_t page_bytes = 0;
  std::string next_token;
  std::shared_ptr<const sched::QueueState> queue;
  {
    absl::MutexLock lock(&mu_);
    queue = queue_;
    auto it = after ? by_age_.upper_bound(*after) : by_age_.begin();
    for (; it != by_age_.end(); ++it) {
      const JobPtr& job = jobs_.at(it->second);
      if (!states.empty() && states.count(job->state()) == 0) continue;
      if (!req.project().empty() && job->project() != req.project()) continue;
      if (!InArrayFilter(req, *job)) continue;
      if (!Matches(*job, selector)) continue;
      const size_t bytes = basic ? BasicBytes(*job) : job->ByteSizeLong();
      // A page ends at pageSize jobs, or before it would outgrow kMaxPageBytes (it holds one job
      // at least), so that every page fits a client's 4 MiB message limit.
      if (static_cast<int32_t>(page.size()) == size ||
          (!page.empty() && page_bytes + bytes > kMaxPageBytes)) {
        // There is more: the token names the last job returned.
        next_token = TokenOf(*page.back());
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

absl::StatusOr<v1::ListJobsResponse> JobSnapshots::ListArchived(
    const v1::ListJobsRequest& req, int32_t size,
    const std::optional<std::pair<int64_t, std::string>>& after, const Selector& selector,
    int64_t now_ms) const {
  const std::set<int> states(req.states().begin(), req.states().end());
  const bool basic = req.view() == v1::JOB_VIEW_BASIC;
  storage::JobScan scan;
  scan.project = req.project();
  for (int state : states) {
    if (state >= 0 && state < 32) scan.states |= 1u << state;
  }
  if (after) scan.after.emplace(-after->first, after->second);
  scan.max_rows = kMaxScanRows;
  std::shared_ptr<const sched::QueueState> queue;
  {
    absl::MutexLock lock(&mu_);
    queue = queue_;
  }
  // Each job shown, and whether it came from the archive (its attempts are read afterwards).
  std::vector<std::pair<v1::Job, bool>> page;
  size_t page_bytes = 0;
  std::string next_token;
  absl::Status unreadable;
  auto visit = [&](int64_t, const std::string& id, const std::string& row) {
    JobPtr held;
    {
      absl::MutexLock lock(&mu_);
      if (auto it = jobs_.find(id); it != jobs_.end()) held = it->second;
    }
    v1::Job job;
    if (held != nullptr) {
      job = WithQueueStatus(held, queue.get(), now_ms);
    } else {
      absl::StatusOr<v1::Job> parsed = storage::ParseJobRow(id, row);
      if (!parsed.ok()) {
        unreadable = parsed.status();
        return false;
      }
      job = *std::move(parsed);
      redactor_.Redact(&job);
    }
    // A held job's snapshot may be a turn behind its row: it is shown, so it is what must match.
    if (!states.empty() && states.count(job.state()) == 0) return true;
    if (!InArrayFilter(req, job)) return true;
    if (!Matches(job, selector)) return true;
    const size_t bytes = basic ? BasicBytes(job) : job.ByteSizeLong();
    if (static_cast<int32_t>(page.size()) == size ||
        (!page.empty() && page_bytes + bytes > kMaxPageBytes)) {
      next_token = TokenOf(page.back().first);
      return false;
    }
    page_bytes += bytes;
    page.emplace_back(std::move(job), held == nullptr);
    return true;
  };
  absl::StatusOr<std::optional<storage::JobArchive::Position>> resume = archive_->Scan(scan, visit);
  if (!unreadable.ok()) return unreadable;
  if (!resume.ok()) return resume.status();
  // The scan read its most rows before the page filled: the next call goes on from there.
  if (resume->has_value()) next_token = absl::StrCat(-(*resume)->first, ":", (*resume)->second);
  v1::ListJobsResponse resp;
  page_bytes = 0;
  for (auto& [job, archived] : page) {
    if (archived && !basic) {
      if (absl::Status read = archive_->AddAttempts(&job); !read.ok()) return read;
    }
    if (basic) ToBasic(&job);
    // Its attempts may make the page outgrow its limit after all: it ends before this job.
    const size_t bytes = job.ByteSizeLong();
    if (resp.jobs_size() > 0 && page_bytes + bytes > kMaxPageBytes) {
      next_token = TokenOf(resp.jobs(resp.jobs_size() - 1));
      break;
    }
    page_bytes += bytes;
    *resp.add_jobs() = std::move(job);
  }
  resp.set_next_page_token(next_token);
  return resp;
}

absl::Status JobSnapshots::Watch(const std::string& id, std::shared_ptr<JobWatcher> watcher) {
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it != jobs_.end()) {
      if (watcher->Push(WithQueueStatus(it->second, queue_.get(), clock_())) &&
          !IsTerminal(it->second->state())) {
        hub_->Subscribe(id, std::move(watcher));
      }
      return absl::OkStatus();
    }
  }
  // A job only the archive has ended long ago: its one state is all there is to watch.
  absl::StatusOr<std::optional<v1::Job>> stored = FromArchive(id);
  if (!stored.ok()) return stored.status();
  if (stored->has_value()) {
    watcher->Push(**stored);
    return absl::OkStatus();
  }
  // An element of a job array that has not started: as read from its array, then each change
  // (its start as a job of its own is published under its id).
  if (const std::optional<ElementId> e = ParseElementId(id)) {
    {
      absl::MutexLock lock(&mu_);
      // It started meanwhile: a job of its own.
      if (auto own = jobs_.find(id); own != jobs_.end()) {
        if (watcher->Push(WithQueueStatus(own->second, queue_.get(), clock_())) &&
            !IsTerminal(own->second->state())) {
          hub_->Subscribe(id, std::move(watcher));
        }
        return absl::OkStatus();
      }
      auto it = jobs_.find(e->array);
      if (it != jobs_.end() && it->second->has_array()) {
        if (std::optional<v1::Job> element = sched::SynthesizeElement(*it->second, e->index)) {
          if (watcher->Push(*element) && !IsTerminal(element->state())) {
            hub_->Subscribe(id, std::move(watcher));
          }
          return absl::OkStatus();
        }
      }
    }
    // An array only the archive holds has ended: its element's one state.
    absl::StatusOr<std::optional<v1::Job>> array = FromArchive(e->array);
    if (array.ok() && array->has_value() && (*array)->has_array()) {
      if (std::optional<v1::Job> element = sched::SynthesizeElement(**array, e->index)) {
        watcher->Push(*element);
        return absl::OkStatus();
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
}

}  // namespace trainctl::server
