#include "server/outbox.h"

#include "server/agent_registry.h"

namespace trainctl::server {

void Outbox::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Outbox::Deliver(Batch batch) {
  if (batch.commands.empty() && batch.after_commit.empty()) return;
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(batch));
}

void Outbox::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Outbox::Run() {
  for (;;) {
    std::deque<Batch> batches;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and everything is delivered
      batches.swap(queue_);
    }
    for (Batch& batch : batches) {
      for (sched::Command& c : batch.commands) registry_->Send(std::move(c));
      for (auto& f : batch.after_commit) f();
    }
  }
}

}  // namespace trainctl::server
