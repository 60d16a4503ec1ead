// JobSnapshots: what readers see of jobs — an immutable snapshot of each job and of the
// admission queue, published by the reconcile loop after each commit.
//
// `get`, `list` and `watch` are served from here and never wait behind a write turn. The core
// holds only live jobs and those that ended within --finished-job-cache, and so do the
// snapshots; with an archive (set_archive), the others are read from the database on the
// archive's own connection: `get` and `watch` look there for a job they do not hold, and `list`
// walks the database's jobs newest first, showing the snapshot of each job it holds (fresher, and
// with its queue status) and the row of the others. A list filtered to live states only is
// served from the snapshots alone. The loop
// publishes, after a turn's commit and before it replies to anyone, the jobs that turn changed
// (each a new shared_ptr<const v1::Job>; no turn copies the whole state) and, when admission
// changed, a new QueueState. A queued job's queue status is computed at read time from the
// published QueueState, so it is as fresh as the last commit. Watchers subscribe here too: a
// subscription and a publication never interleave, so a watcher misses no update.
//
//   JobSnapshots snapshots(&hub);
//   snapshots.Publish({job}, queue_state);                 // loop thread, after the commit
//   absl::StatusOr<v1::Job> job = snapshots.Get(id, now);  // any thread
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/time_util.h"
#include "scheduler/queue_state.h"
#include "server/secret_env.h"
#include "server/watch_hub.h"
#include "storage/job_archive.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

class JobSnapshots {
 public:
  using JobPtr = std::shared_ptr<const v1::Job>;

  // Watchers are notified through `hub`, which must outlive this. A watched queued job is pushed
  // with its queue status as of `clock()` (ms since the epoch).
  explicit JobSnapshots(WatchHub* hub, std::function<int64_t()> clock = WallNowMs)
      : hub_(hub), clock_(std::move(clock)) {}

  // Reads jobs these snapshots do not hold from `archive` (not owned), showing them through
  // `redactor` as the loop shows the jobs it publishes. Set before any read.
  void set_archive(storage::JobArchive* archive, SecretRedactor redactor) {
    archive_ = archive;
    redactor_ = std::move(redactor);
  }

  // Replaces the snapshots of `jobs` and, when `queue` is not null, the queue's, and pushes the
  // jobs to their watchers.
  void Publish(const std::vector<JobPtr>& jobs, std::shared_ptr<const sched::QueueState> queue)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Forgets deleted jobs (after the turn that deleted them committed), and jobs the core forgot
  // (their rows stay in the database).
  void Remove(const std::vector<std::string>& ids) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether the snapshots hold the job (a live one, or one that ended recently).
  bool Holds(const std::string& id) const ABSL_LOCKS_EXCLUDED(mu_);
  // The job with its queue status computed as of `now_ms` when it is QUEUED. NOT_FOUND when
  // unknown.
  absl::StatusOr<v1::Job> Get(const std::string& id, int64_t now_ms) const ABSL_LOCKS_EXCLUDED(mu_);
  // A page holds at most this many bytes of jobs (or one job, however large).
  static constexpr size_t kMaxPageBytes = size_t{3} << 20;
  static constexpr int32_t kMaxScanRows = 10'000;

  // Newest first, filtered (states, project, label selector, array) and paged like
  // Core::ListJobs, a
  // page ending early rather than grow past kMaxPageBytes (counting the bytes of the view asked
  // for: JOB_VIEW_BASIC leaves out each pool's command, args and env and the attempts).
  // INVALID_ARGUMENT for a page size outside 1..1000, a state that is not one, a token this server
  // did not return, or a label selector that is not KEY=VALUE[,KEY=VALUE...]. From the archive, one
  // call reads at most kMaxScanRows rows: a page may hold fewer jobs than asked for (none, even)
  // and still have a next page token, where the next call goes on.
  absl::StatusOr<v1::ListJobsResponse> List(const v1::ListJobsRequest& req, int64_t now_ms) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Calls `fn` on every job held, under the snapshots' lock: `fn` must be quick and must not call
  // back into these snapshots (metrics count jobs by state with it).
  void ForEach(const std::function<void(const v1::Job&)>& fn) const ABSL_LOCKS_EXCLUDED(mu_);
  // Sends the job's current snapshot to `watcher` and subscribes it to later ones (unless the
  // job is already terminal), a queued job's with its queue status. NOT_FOUND when unknown.
  absl::Status Watch(const std::string& id, std::shared_ptr<JobWatcher> watcher)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The bytes of `job` in JOB_VIEW_BASIC, about (without copying it).
  static size_t BasicBytes(const v1::Job& job);
  // Clears what JOB_VIEW_BASIC leaves out.
  static void ToBasic(v1::Job* job);
  // The page token that names `job` (the last of a page) as the place to go on after.
  static std::string TokenOf(const v1::Job& job);
  // The page of `req` from the snapshots alone (every job or only live states asked for).
  v1::ListJobsResponse ListHeld(const v1::ListJobsRequest& req, int32_t size,
                                const std::optional<std::pair<int64_t, std::string>>& after,
                                const std::vector<std::pair<std::string, std::string>>& selector,
                                int64_t now_ms) const ABSL_LOCKS_EXCLUDED(mu_);
  // The page of `req` walking the archive, with the snapshots of the jobs held.
  absl::StatusOr<v1::ListJobsResponse> ListArchived(
      const v1::ListJobsRequest& req, int32_t size,
      const std::optional<std::pair<int64_t, std::string>>& after,
      const std::vector<std::pair<std::string, std::string>>& selector, int64_t now_ms) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `job` is listed by `req` as far as arrays go: an element of req.array, or, with no
  // req.array, any job but an element.
  static bool InArrayFilter(const v1::ListJobsRequest& req, const v1::Job& job);
  // The job from the archive, redacted; nullopt when it has none (or there is no archive).
  absl::StatusOr<std::optional<v1::Job>> FromArchive(const std::string& id) const;
  // `job` with its queue status filled from `queue` when it is QUEUED.
  static v1::Job WithQueueStatus(const JobPtr& job, const sched::QueueState* queue, int64_t now_ms);

  WatchHub* const hub_;
  const std::function<int64_t()> clock_;
  storage::JobArchive* archive_ = nullptr;
  SecretRedactor redactor_;

  mutable absl::Mutex mu_;
  std::map<std::string, JobPtr> jobs_ ABSL_GUARDED_BY(mu_);
  // Newest first, for listing: (-create ms, id), the order and tokens of Core::ListJobs.
  std::set<std::pair<int64_t, std::string>> by_age_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const sched::QueueState> queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::server
