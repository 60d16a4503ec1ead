// WorkQueue: a few threads that run posted functions in order of posting, for work that may
// block (a read of a file or of the database) and must not run on the thread that has it (the
// reconcile loop's outbox, a gRPC callback thread).
//
//   WorkQueue readers(2, 256);
//   if (!readers.Post([=] { done(Read()); })) done(absl::ResourceExhaustedError("busy"));
//
// The destructor runs what was posted before it, then joins the threads.
//
// Thread-safety: Post may be called from any thread, also from a posted function.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace trainctl {

class WorkQueue {
 public:
  // `threads` >= 1; at most `max_queued` functions wait at once.
  WorkQueue(int threads, size_t max_queued);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `work`; false (and `work` is dropped unrun) when max_queued wait already or the queue
  // is being destroyed.
  bool Post(std::function<void()> work) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t max_queued_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace trainctl
