// Outbox: the thread that delivers what a reconcile-loop turn decided, once the turn's commit made
// it durable: the commands for agents (AgentRegistry::Send) and the turn's after-commit callbacks
// (RPC replies, acknowledgements to agents), in the order the turns committed them and, within a
// turn, commands first.
//
// Why a thread of its own: every gRPC write or reply wakes one of gRPC's threads, and on a busy
// host the woken thread takes the CPU from the thread that woke it. Sent from the loop, each of a
// turn's hundreds of messages could preempt the loop (two thirds of its context switches in
// bench_scale with 1,000 agents); handed over here once per turn, the loop wakes one thread per
// turn and goes on with the next.
//
// Thread-safety: Deliver from one thread (the loop's); Start and Stop from the owner.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "model/model.h"

namespace trainctl::server {

class AgentRegistry;

class Outbox {
 public:
  // What one turn hands over.
  struct Batch {
    std::vector<sched::Command> commands;
    std::vector<std::function<void()>> after_commit;
  };

  // `registry` (not owned) must outlive the outbox.
  explicit Outbox(AgentRegistry* registry) : registry_(registry) {}
  ~Outbox() { Stop(); }

  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  void Start();
  // Queues `batch` for delivery and returns.
  void Deliver(Batch batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Delivers everything queued, then joins the thread.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  AgentRegistry* const registry_;
  absl::Mutex mu_;
  std::deque<Batch> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trainctl::server
