// Fan-out of job updates to WatchJob streams.
//
// The reconcile loop publishes every job it changed after each commit; a watcher receives the
// newest state of its job, coalescing updates it had no time to send (a watcher needs the latest
// state, not every intermediate one), and the stream ends after a terminal state is sent.
//
// Thread-safety: every method may be called from any thread. Subscribe and Publish are called
// on the loop thread, so a watcher that subscribes with the current snapshot misses no update.
// JobWatcher::Push runs with no hub lock held.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

class JobWatcher {
 public:
  virtual ~JobWatcher() = default;
  // Delivers the job's newest state. Returns false once the watcher is finished.
  virtual bool Push(const v1::Job& job) = 0;
};

class WatchHub {
 public:
  void Subscribe(const std::string& job_id, std::shared_ptr<JobWatcher> w) ABSL_LOCKS_EXCLUDED(mu_);
  void Publish(const v1::Job& job) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether anyone watches the job.
  bool Watched(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The watched job ids that begin with `prefix` (the elements of a job array: "<array>-").
  std::vector<std::string> WatchedUnder(const std::string& prefix) ABSL_LOCKS_EXCLUDED(mu_);
  // Closes every watcher (server shutdown).
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::multimap<std::string, std::shared_ptr<JobWatcher>> watchers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::server
