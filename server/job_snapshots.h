// JobSnapshots: what readers see of jobs — an immutable snapshot of each job and of the
// admission queue, published by the reconcile loop after each commit.
//
// `get`, `list` and `watch` are served from here and never wait behind a write turn. The loop
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
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/queue_state.h"
#include "server/watch_hub.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

class JobSnapshots {
 public:
  using JobPtr = std::shared_ptr<const v1::Job>;

  // Watchers are notified through `hub`, which must outlive this.
  explicit JobSnapshots(WatchHub* hub) : hub_(hub) {}

  // Replaces the snapshots of `jobs` and, when `queue` is not null, the queue's, and pushes the
  // jobs to their watchers.
  void Publish(const std::vector<JobPtr>& jobs, std::shared_ptr<const sched::QueueState> queue)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Forgets deleted jobs (after the turn that deleted them committed).
  void Remove(const std::vector<std::string>& ids) ABSL_LOCKS_EXCLUDED(mu_);

  // The job with its queue status computed as of `now_ms` when it is QUEUED. NOT_FOUND when
  // unknown.
  absl::StatusOr<v1::Job> Get(const std::string& id, int64_t now_ms) const ABSL_LOCKS_EXCLUDED(mu_);
  // A page holds at most this many bytes of jobs (or one job, however large).
  static constexpr size_t kMaxPageBytes = size_t{3} << 20;

  // Newest first, filtered (states, project, label selector) and paged like Core::ListJobs, a
  // page ending early rather than grow past kMaxPageBytes (counting the bytes of the view asked
  // for: JOB_VIEW_BASIC leaves out each pool's command, args and env and the attempts).
  // INVALID_ARGUMENT for a page size outside 1..1000, a token this server did not return, or a
  // label selector that is not KEY=VALUE[,KEY=VALUE...].
  absl::StatusOr<v1::ListJobsResponse> List(const v1::ListJobsRequest& req, int64_t now_ms) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Sends the job's current snapshot to `watcher` and subscribes it to later ones (unless the
  // job is already terminal). NOT_FOUND when unknown.
  absl::Status Watch(const std::string& id, std::shared_ptr<JobWatcher> watcher)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The bytes of `job` in JOB_VIEW_BASIC, about (without copying it).
  static size_t BasicBytes(const v1::Job& job);
  // Clears what JOB_VIEW_BASIC leaves out.
  static void ToBasic(v1::Job* job);
  // `job` with its queue status filled from `queue` when it is QUEUED.
  static v1::Job WithQueueStatus(const JobPtr& job, const sched::QueueState* queue, int64_t now_ms);

  WatchHub* const hub_;

  mutable absl::Mutex mu_;
  std::map<std::string, JobPtr> jobs_ ABSL_GUARDED_BY(mu_);
  // Newest first, for listing: (-create ms, id), the order and tokens of Core::ListJobs.
  std::set<std::pair<int64_t, std::string>> by_age_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const sched::QueueState> queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::server
