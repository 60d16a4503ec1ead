// The scheduler core: every decision about jobs, replicas and nodes, in one place.
//
// Core owns the in-memory state (jobs, nodes, the queue) and changes it only through the input
// methods below. Each input takes `now` (ms since the epoch, from an injectable clock) and appends
// what it decided to `fx`: rows to persist, events, and commands for agents. The core performs no
// I/O; the shell (server/reconcile_loop) commits `fx` in one transaction before any command
// leaves, so a crash never loses an acknowledged change. Given the same state, inputs and times,
// the core makes the same decisions, which the unit tests rely on.
//
// Thread-safety: none. Exactly one thread (the reconcile loop) may call a Core.
//
//   Core core(options);
//   Effects fx;
//   auto job = core.SubmitJob(spec, now, &fx);   // QUEUED
//   core.Schedule(now, &fx);                      // PENDING, LaunchReplica commands in fx
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/model.h"
#include "scheduler/placement.h"
#include "scheduler/retry_engine.h"

namespace trainctl::sched {

struct CoreOptions {
  // Parent of every job's default checkpoint directory ("<root>/<job id>").
  std::string checkpoint_root = "/var/lib/trainctl/checkpoints";
  // Told to agents in RegisterAck.
  int32_t heartbeat_interval_ms = 2000;
  // Seed for job ids; 0 picks a random seed.
  uint64_t id_seed = 0;
};

struct ListJobsQuery {
  int32_t page_size = 100;
  std::string page_token;
  std::set<v1::JobState> states;
  std::string project;
};

class Core {
 public:
  explicit Core(CoreOptions options);

  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // Loads persisted state after a restart. Every node starts disconnected; its agent's next
  // Register re-adopts the replicas it still runs. REQUIRES: called once, before any input.
  void Restore(std::vector<v1::Job> jobs, std::vector<Node> nodes,
               const std::vector<ReplicaRun>& runs);

  // --- Inputs from API callers -------------------------------------------------------------

  // Validates, fills defaults and stores a new QUEUED job. INVALID_ARGUMENT for a bad spec,
  // FAILED_PRECONDITION when no registered node could ever hold one of its replicas.
  absl::StatusOr<v1::Job> SubmitJob(const v1::JobSpec& spec, int64_t now, Effects* fx);

  // Starts cancelling a job: QUEUED jobs end at once, others stop their replicas first
  // (CANCELLING, then CANCELLED when every replica is gone). Terminal jobs are returned as is.
  absl::StatusOr<v1::Job> CancelJob(const std::string& id, int64_t now, Effects* fx);

  // --- Inputs from agents ------------------------------------------------------------------

  // An agent (re)connected. Re-adopts the replicas it reports, stops runs nobody wants, resends
  // launches it never received. Returns the RegisterAck to send back.
  v1::RegisterAck AgentRegistered(const v1::Register& reg, int64_t now, Effects* fx);
  void AgentDisconnected(const std::string& node, int64_t now, Effects* fx);
  void Heartbeat(const std::string& node, int64_t now);
  void ReplicaStarted(const std::string& node, const v1::ReplicaStarted& started, int64_t now,
                      Effects* fx);
  void ReplicaExited(const std::string& node, const v1::ReplicaExited& exited, int64_t now,
                     Effects* fx);
  // A sign of progress of a run (checkpoint written, progress file touched). Stale runs are
  // ignored.
  void ReplicaProgress(const std::string& node, const v1::ReplicaProgress& progress, int64_t now,
                       Effects* fx);
  // Progress reported through the API. NOT_FOUND for an unknown job or replica,
  // FAILED_PRECONDITION when the replica is not running.
  absl::Status ReportProgress(const std::string& job_id, const std::string& replica, int64_t now,
                              Effects* fx);

  // --- Time and placement ------------------------------------------------------------------

  // Enforces time limits (scheduling.timeout, hangTimeout, launchTimeout) and starts replica
  // restarts whose backoff has passed.
  void Tick(int64_t now, Effects* fx);

  // Places QUEUED jobs, highest priority first, then oldest. Cheap when nothing changed since
  // the last call (no submit, exit or node change).
  void Schedule(int64_t now, Effects* fx);

  // --- Reads -------------------------------------------------------------------------------

  // nullptr when unknown.
  const v1::Job* FindJob(const std::string& id) const;
  absl::StatusOr<std::vector<const v1::Job*>> ListJobs(const ListJobsQuery& q,
                                                       std::string* next_page_token) const;
  const Node* FindNode(const std::string& name) const;
  const std::map<std::string, Node>& nodes() const { return nodes_; }

  // What placed replicas hold on each node, and how many replicas that is.
  struct NodeUsage {
    Res used;
    int32_t replicas = 0;
  };
  std::map<std::string, NodeUsage> Usage() const;

  // Where the log of (job, replica, attempt, restart) lives: its node and run id. attempt 0 means
  // the current attempt; restart < 0 the latest run of that attempt.
  absl::Status LocateRun(const std::string& job_id, const std::string& replica, int32_t attempt,
                         int32_t restart, std::string* node, std::string* run_id,
                         bool* finished) const;

 private:
  // Queue order: retrying jobs first (R17), then higher priority, then earlier creation, then id.
  using QueueKey = std::tuple<int32_t, int32_t, int64_t, std::string>;
  static QueueKey KeyOf(const v1::Job& job);

  std::string NewJobId();
  v1::Replica* FindReplica(v1::Job* job, const std::string& name);
  // The job and replica of `run_id` if it is the replica's current run; else nullptrs.
  std::pair<v1::Job*, v1::Replica*> CurrentRun(const std::string& run_id);
  int32_t CurrentAttempt(const v1::Job& job) const;
  std::string RunIdOf(const v1::Job& job, const v1::Replica& r) const;

  void SetJobState(v1::Job* job, v1::JobState state, const std::string& reason, int64_t now,
                   Effects* fx);
  void EndJob(v1::Job* job, v1::JobState state, const v1::JobError& error,
              const std::string& reason, int64_t now, Effects* fx);
  void StopLiveReplicas(v1::Job* job, const std::string& reason, int64_t now, Effects* fx);
  void MaybeFinishCancel(v1::Job* job, int64_t now, Effects* fx);
  void MaybeMarkRunning(v1::Job* job, int64_t now, Effects* fx);
  // Asks the retry engine about a failed (or finished) run and carries out its decision.
  void HandleRunEnd(v1::Job* job, v1::Replica* r, const Failure& failure, int64_t now, Effects* fx);
  void RestartReplica(v1::Job* job, v1::Replica* r, const RetryDecision& d, int64_t now,
                      Effects* fx);
  void RetryJob(v1::Job* job, const RetryDecision& d, int64_t now, Effects* fx);
  // Marks the replica STARTING on its node and sends the launch.
  void LaunchOnItsNode(v1::Job* job, int replica_index, int64_t now, Effects* fx);
  void RecordAttemptEnd(v1::Job* job, const RetryDecision& d, const std::string& decision,
                        int64_t now, Effects* fx);
  // Returns whether the job's queue wait hit a capacity retry or failure.
  bool CheckCapacity(v1::Job* job, const std::vector<ReplicaDemand>& demands,
                     const std::string& missing, int64_t now, Effects* fx);
  bool StartAttempt(v1::Job* job, int64_t now, Effects* fx);
  void SendLaunch(const v1::Job& job, int replica_index, Effects* fx);
  void SendStop(const v1::Job& job, const v1::Replica& r, const std::string& reason, Effects* fx);
  void RecordRun(const v1::Job& job, const v1::Replica& r, Effects* fx);
  void AddEvent(Effects* fx, int64_t now, const v1::Job* job, const std::string& replica,
                const std::string& node, const std::string& type, const std::string& reason);
  // Keeps active_ in step with the job's state and its replicas.
  void RefreshActive(const v1::Job& job);
  void Touch(v1::Job* job, int64_t now, Effects* fx);

  // Constant after construction.
  const CoreOptions options_;

  std::mt19937_64 rng_;
  std::map<std::string, v1::Job> jobs_;
  std::map<std::string, Node> nodes_;
  // Jobs waiting for placement, in admission order.
  std::set<QueueKey> queue_;
  // Jobs holding or about to hold resources (PENDING, RUNNING, CANCELLING, or terminal with
  // replicas still stopping).
  std::set<std::string> active_;
  // Newest first, for listing: (-create_ms, id).
  std::set<std::pair<int64_t, std::string>> by_age_;
  // Node of every run ever launched, for logs of earlier runs.
  std::map<std::string, std::string> run_nodes_;
  bool schedule_needed_ = true;
  // The earliest time a queued job's backoff or placement timeout ends; Tick schedules then.
  int64_t next_wakeup_ms_ = 0;
  // Since when each queued job could not fit even on the idle connected cluster (stockout).
  std::map<std::string, int64_t> stockout_since_;
};

}  // namespace trainctl::sched
