// The imperative shell around the scheduler core: one thread that owns Core and Store.
//
// gRPC handlers never decide; they Post() work here. A turn takes every posted item, applies
// each to the core, lets the core tick and place queued jobs, commits everything the turn changed
// in ONE SQLite transaction (group commit), and only then sends the commands to agents, publishes
// job updates to watchers, and runs the items' after-commit callbacks (RPC replies, acks). So no
// caller hears "OK" and no agent gets a command for a change that is not yet durable.
//
// If a commit fails, memory and disk disagree; the process aborts so that a restart reloads the
// durable state (systemd restarts it).
//
// Thread-safety: Post() may be called from any thread; everything else runs on the loop thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "scheduler/core.h"
#include "storage/store.h"

namespace trainctl::server {

class AgentRegistry;
class WatchHub;

// What a posted item sees during its turn.
struct Turn {
  sched::Core& core;
  storage::Store& store;
  int64_t now;
  sched::Effects* fx;
  // Run after the commit, on the loop thread, in order. Must not block.
  std::vector<std::function<void()>>* after_commit;
};

class ReconcileLoop {
 public:
  using Work = std::function<void(Turn&)>;
  using Clock = std::function<int64_t()>;

  // Does not take ownership of registry or hub; they must outlive the loop.
  ReconcileLoop(std::unique_ptr<sched::Core> core, std::unique_ptr<storage::Store> store,
                AgentRegistry* registry, WatchHub* hub, Clock clock);
  ~ReconcileLoop();

  void Start();
  // Finishes the queued work, then joins the thread.
  void Stop();

  void Post(Work work);

 private:
  void Run();
  void RunTurn(std::vector<Work> items);

  std::unique_ptr<sched::Core> core_;
  std::unique_ptr<storage::Store> store_;
  AgentRegistry* const registry_;
  WatchHub* const hub_;
  const Clock clock_;
  int64_t last_tick_ms_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> queue_;  // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  std::thread thread_;
};

}  // namespace trainctl::server
