// The imperative shell around the scheduler core: one thread that owns Core and Store.
//
// gRPC handlers never decide; they Post() work here. A turn takes every posted item, applies
// each to the core, lets the core tick and place queued jobs, commits everything the turn changed
// in ONE SQLite transaction (group commit), and only then sends the commands to agents, publishes
// the changed jobs (and the queue, when admission changed) to JobSnapshots and their watchers,
// and runs the items' after-commit callbacks (RPC replies, acks). So no caller hears "OK", no
// reader sees, and no agent gets a command for a change that is not yet durable.
//
// If a commit fails, memory and disk disagree: the turn's effects are dropped and the commit
// failure handler runs; the default aborts the process so that a restart reloads the durable
// state (systemd restarts it).
//
// Thread-safety: Post() may be called from any thread; everything else runs on the loop thread,
// apart from Start() and Stop(), which the owner calls.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/core.h"
#include "server/replica_tokens.h"
#include "server/secret_env.h"
#include "storage/store.h"

namespace trainctl::server {

class AgentRegistry;
class JobSnapshots;

// What a posted item sees during its turn.
struct Turn {
  sched::Core& core;
  storage::Store& store;
  int64_t now;
  sched::Effects* fx;
  // Run after the commit, on the loop thread, in order. Must not block.
  std::vector<std::function<void()>>* after_commit;
  // API token rows to write in this turn's transaction.
  std::vector<storage::TokenRow>* tokens;
};

class ReconcileLoop {
 public:
  using Work = std::function<void(Turn&)>;
  using Clock = std::function<int64_t()>;
  // Told why a commit failed. Default: log and abort the process.
  using CommitFailureHandler = std::function<void(const absl::Status&)>;

  // Does not take ownership of registry or snapshots; they must outlive the loop.
  ReconcileLoop(std::unique_ptr<sched::Core> core, std::unique_ptr<storage::Store> store,
                AgentRegistry* registry, JobSnapshots* snapshots, Clock clock,
                CommitFailureHandler on_commit_failure = nullptr);
  ~ReconcileLoop();

  // Publishes every job the core holds, then starts the loop's thread.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Finishes the queued work, then joins the thread.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  void Post(Work work) ABSL_LOCKS_EXCLUDED(mu_);

  // What reads may show of a job: published snapshots and the jobs that calls return go through
  // it. Set before Start().
  void set_redactor(SecretRedactor redactor) { redactor_ = std::move(redactor); }
  // With authentication: each launch gets its job's replica token as TRAINCTL_TOKEN (not owned;
  // null: none).
  void set_replica_tokens(const ReplicaTokens* tokens) { replica_tokens_ = tokens; }
  const SecretRedactor& redactor() const { return redactor_; }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  void RunTurn(std::vector<Work> items);
  // Publishes `jobs` to the snapshots, with the queue's picture when admission changed.
  void Publish(const std::vector<v1::Job>& jobs);

  SecretRedactor redactor_;
  const ReplicaTokens* replica_tokens_ = nullptr;
  // Constant after construction; touched by the loop thread only once it runs.
  const std::unique_ptr<sched::Core> core_;
  const std::unique_ptr<storage::Store> store_;
  AgentRegistry* const registry_;
  JobSnapshots* const snapshots_;
  const Clock clock_;
  const CommitFailureHandler on_commit_failure_;

  // Loop thread only.
  int64_t last_tick_ms_ = 0;
  uint64_t published_queue_version_ = 0;

  absl::Mutex mu_;
  std::deque<Work> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trainctl::server
