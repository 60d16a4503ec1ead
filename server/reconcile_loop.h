// The imperative shell around the scheduler core: one thread that owns Core and Store.
//
// gRPC handlers never decide; they Post() work here. A turn takes every posted item, applies
// each to the core, lets the core tick and place queued jobs, commits everything the turn changed
// in ONE SQLite transaction (group commit), and only then publishes the changed jobs (and the
// queue, when admission changed) to JobSnapshots and their watchers, and hands the commands for
// agents and the items' after-commit callbacks (RPC replies, acks) to the Outbox, whose thread
// delivers them in order while the loop goes on. So no caller hears "OK", no reader sees, and
// no agent gets a command for a change that is not yet durable.
//
// If a commit fails (a full disk, an I/O error), memory and disk disagree: the turn's effects are
// dropped, its callers hear the error through their `refused` callbacks, and the core is rebuilt
// from the database (the reloader), as a restart would. Writes are then refused: posted work that
// changes state is not run (its callers hear the same error at once), ticks and placement pause,
// and agents' reports stay unacknowledged, while reads (PostRead) keep being answered from the
// rebuilt core. Every second the loop probes the store; once a write commits again, every agent
// stream is closed, so each agent registers with the rebuilt core and resends what it has not
// had acknowledged, and work resumes by itself. Without a reloader, a failed commit ends the
// process (a restart reloads the durable state).
//
// Retention (set_job_retention_ms): a turn now and then deletes the terminal jobs that ended
// longer ago than the retention, a small batch at a time (kRetentionBatch), oldest first; while
// more are due, the next turn takes the next batch. A job still stopping a replica is passed over
// until a later pass.
//
// Memory (set_finished_job_cache_ms): a terminal job stays in the core, and in the snapshots,
// for the cache time after its last change; then, once none of its replicas holds a node, the
// core forgets it (Core::ForgetJob) and readers find it in the database (JobArchive); sooner,
// oldest first, while more than set_finished_job_cache_jobs of them are held. So the core holds
// the live jobs and some recently ended ones, however many the database keeps.
//
// Thread-safety: Post() may be called from any thread; everything else runs on the loop thread,
// apart from Start() and Stop(), which the owner calls.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/latency_histogram.h"
#include "scheduler/core.h"
#include "server/outbox.h"
#include "server/project_secrets.h"
#include "server/replica_tokens.h"
#include "server/secret_env.h"
#include "storage/store.h"
#include "storage/workdir_store.h"

namespace trainctl::server {

class AgentRegistry;
class DaemonMetrics;
class JobSnapshots;

// Rows a turn's work writes in the turn's transaction, beside the core's.
struct TurnWrites {
  std::vector<storage::TokenRow> tokens;
  std::vector<storage::SecretRow> secrets;
  // (project, name) of secrets to delete.
  std::vector<std::pair<std::string, std::string>> deleted_secrets;
  // Jobs created with a working directory (Batch::workdir_uses).
  std::vector<storage::WorkdirUse> workdir_uses;
};

// What a posted item sees during its turn.
struct Turn {
  sched::Core& core;
  storage::Store& store;
  // The loop's clock when the turn began.
  absl::Time now;
  sched::Effects* fx;
  // Run after the commit, on the Outbox's thread, in order (after the turn's commands). Must not
  // block, and must not touch the core.
  std::vector<std::function<void()>>* after_commit;
  // Rows to write in this turn's transaction.
  TurnWrites* writes;
};

class ReconcileLoop {
 public:
  using Work = std::function<void(Turn&)>;
  using Clock = std::function<int64_t()>;
  // Told why posted work was not done: its turn's commit failed, or writes are refused.
  using Refuse = std::function<void(const absl::Status&)>;
  // Builds a core from the database's durable state (as trainctld's start does).
  using Reloader = std::function<absl::StatusOr<std::unique_ptr<sched::Core>>(storage::Store&)>;
  // Told, on the loop thread, when writes start being refused (the reason) and when they work
  // again (OK).
  using WriteStateListener = std::function<void(const absl::Status&)>;

  // Does not take ownership of registry or snapshots; they must outlive the loop.
  ReconcileLoop(std::unique_ptr<sched::Core> core, std::unique_ptr<storage::Store> store,
                AgentRegistry* registry, JobSnapshots* snapshots, Clock clock);
  ~ReconcileLoop();

  // Publishes every job the core holds, then starts the loop's thread.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Finishes the queued work, then joins the thread, and logs how long its turns took.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Work that may change state. `refused` (may be null) runs instead of the work's own replies
  // when the work is not done; see the file comment.
  void Post(Work work, Refuse refused = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  // Work that only reads the core or the store: it runs while writes are refused too. `refused`
  // runs when its turn's commit failed (the turn's other work changed state).
  void PostRead(Work work, Refuse refused) ABSL_LOCKS_EXCLUDED(mu_);

  // OK while writes are accepted, else why they are refused.
  absl::Status write_status() const ABSL_LOCKS_EXCLUDED(mu_);

  // What reads may show of a job: published snapshots and the jobs that calls return go through
  // it. Set before Start().
  void set_redactor(SecretRedactor redactor) { redactor_ = std::move(redactor); }
  // With authentication: each launch gets its job's replica token as TRAINCTL_TOKEN (not owned;
  // null: none).
  void set_replica_tokens(const ReplicaTokens* tokens) { replica_tokens_ = tokens; }
  // Launches get the values of their pools' secretRefs from `secrets` (not owned); unset, a
  // launch that needs one fails.
  void set_project_secrets(const ProjectSecrets* secrets) { secrets_ = secrets; }
  const SecretRedactor& redactor() const { return redactor_; }
  // Set before Start(). Without a reloader a failed commit aborts the process.
  void set_reloader(Reloader reloader) { reloader_ = std::move(reloader); }
  void set_write_state_listener(WriteStateListener listener) {
    write_listener_ = std::move(listener);
  }
  // Where turns, commits and what each turn did are counted (not owned; null: nowhere). Set
  // before Start().
  void set_metrics(DaemonMetrics* metrics) { metrics_ = metrics; }
  // Told the ids of the jobs a turn deleted, once it committed (trainctld's copy of their logs
  // goes too). Called on the loop's thread: must not block.
  void set_jobs_deleted_listener(std::function<void(const std::vector<std::string>&)> listener) {
    jobs_deleted_ = std::move(listener);
  }
  DaemonMetrics* metrics() const { return metrics_; }
  // Terminal jobs that ended longer ago than this are deleted (0: never). Set before Start().
  void set_job_retention_ms(int64_t ms) { retention_ms_ = ms; }
  int64_t job_retention_ms() const { return retention_ms_; }
  // Hourly usage rows (usage_hours) of hours older than this are deleted, at most
  // storage::kUsageExpireBatch a minute (0: never). Set before Start().
  void set_usage_retention_ms(int64_t ms) { usage_retention_ms_ = ms; }
  // Terminal jobs leave memory this long after their last change (0: at once). Set before
  // Start().
  void set_finished_job_cache_ms(int64_t ms) { finished_cache_ms_ = ms; }
  // And at most this many terminal jobs stay: beyond it the oldest leave sooner. Set before
  // Start().
  void set_finished_job_cache_jobs(int64_t n) { finished_cache_jobs_ = n; }
  // Called by the loop thread on every pass, at least every tick (500 ms) while it is well: the
  // daemon's watchdog (common/watchdog.h). Before Start.
  void set_alive(std::function<void()> alive) { alive_ = std::move(alive); }
  // The most jobs one turn forgets.
  static constexpr size_t kForgetBatch = 256;
  // The most jobs one turn deletes for retention.
  static constexpr int32_t kRetentionBatch = 16;

 private:
  struct Item {
    Work work;
    Refuse refused;
    bool read_only = false;
  };

  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  void RunTurn(std::vector<Item> items);
  // While writes are refused: runs the reads, refuses the rest.
  void RunRefusingTurn(std::vector<Item> items, const absl::Status& why);
  // After a failed commit: refuses the turn's work, rebuilds the core, refuses writes.
  void RecoverFromFailedCommit(std::vector<Item>& items, const absl::Status& why);
  // While writes are refused: whether a probe write commits; if so, accepts writes again.
  void ProbeWrites();
  void SetWriteStatus(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes the next batch of jobs past the retention, when a pass is due.
  void ExpireJobs(Turn& t);
  // Publishes every job of the core, and the queue; notes the terminal ones for ForgetEnded.
  void PublishAll();
  // Notes when the terminal jobs among `jobs` last changed, and that `deleted` are gone.
  void NoteEnded(const std::vector<v1::Job>& jobs, const std::vector<std::string>& deleted);
  // Forgets the terminal jobs that changed longer ago than the cache time (kForgetBatch at
  // most) and removes their snapshots.
  void ForgetEnded(int64_t now);
  // Publishes `jobs` to the snapshots, with the queue's picture when admission changed.
  void Publish(std::vector<v1::Job> jobs);

  SecretRedactor redactor_;
  const ReplicaTokens* replica_tokens_ = nullptr;
  const ProjectSecrets* secrets_ = nullptr;
  DaemonMetrics* metrics_ = nullptr;
  std::function<void(const std::vector<std::string>&)> jobs_deleted_;
  Reloader reloader_;
  WriteStateListener write_listener_;
  std::function<void()> alive_;
  // Replaced only by the loop thread (a rebuild); touched by it alone once it runs.
  std::unique_ptr<sched::Core> core_;
  const std::unique_ptr<storage::Store> store_;
  AgentRegistry* const registry_;
  JobSnapshots* const snapshots_;
  const Clock clock_;
  int64_t retention_ms_ = 0;
  int64_t usage_retention_ms_ = 0;
  int64_t finished_cache_ms_ = 10 * 60'000;
  int64_t finished_cache_jobs_ = 10'000;

  // Loop thread only.
  int64_t next_retention_ms_ = 0;
  int64_t next_usage_retention_ms_ = 0;
  // Where the current retention pass goes on from.
  storage::EndedJob retention_cursor_;
  int64_t last_tick_ms_ = 0;
  int64_t last_probe_ms_ = 0;
  uint64_t published_queue_version_ = 0;
  // The terminal jobs the core holds, by their last change (ms, id), and that change by id.
  std::set<std::pair<int64_t, std::string>> ended_;
  std::unordered_map<std::string, int64_t> ended_at_;
  // How long each turn took, on a steady clock.
  LatencyHistogram turns_;
  // Jobs admitted; the time of every admission pass (Core::PlanAdmissions: deciding), and of
  // starting what the passes admitted (Core::StartAdmitted), on a steady clock; and the loop
  // thread's CPU time in the passes that admitted any, both halves (their own cost, without the
  // time other threads ran meanwhile).
  uint64_t admitted_ = 0;
  double deciding_seconds_ = 0;
  double starting_seconds_ = 0;
  double admitting_cpu_seconds_ = 0;

  mutable absl::Mutex mu_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status write_status_ ABSL_GUARDED_BY(mu_);
  // Delivers each committed turn's commands and callbacks; stopped after the loop's thread.
  Outbox outbox_;
  std::thread thread_;
};

}  // namespace trainctl::server
