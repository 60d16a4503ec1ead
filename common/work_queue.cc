// WorkQueue (common/work_queue.h).
#include "common/work_queue.h"

#include <utility>

namespace trainctl {

WorkQueue::WorkQueue(int threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

WorkQueue::~WorkQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

bool WorkQueue::Post(std::function<void()> work) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || queue_.size() >= max_queued_) return false;
  queue_.push_back(std::move(work));
  return true;
}

void WorkQueue::Run() {
  for (;;) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and everything posted has run
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace trainctl
