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
#include "scheduler/admission.h"
#include "scheduler/model.h"
#include "scheduler/node_health.h"
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
  // The quota of every project that has none of its own (its `project` field is ignored).
  // Unset limits are unlimited.
  v1::Quota default_quota;
  // The lost timeout and the flapping rule.
  NodePolicy nodes;
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
               const std::vector<ReplicaRun>& runs, std::vector<v1::Quota> quotas = {});

  // --- Inputs from API callers -------------------------------------------------------------

  // Validates, fills defaults and stores a new QUEUED job. INVALID_ARGUMENT for a bad spec,
  // FAILED_PRECONDITION when no registered node could ever hold one of its replicas.
  absl::StatusOr<v1::Job> SubmitJob(const v1::JobSpec& spec, int64_t now, Effects* fx);

  // Starts cancelling a job: QUEUED jobs end at once, others stop their replicas first
  // (CANCELLING, then CANCELLED when every replica is gone). Terminal jobs are returned as is.
  absl::StatusOr<v1::Job> CancelJob(const std::string& id, int64_t now, Effects* fx);

  // Replaces a project's quota; takes effect at once (raising it admits waiting jobs; lowering it
  // stops nothing). INVALID_ARGUMENT for a bad quota, with the field path.
  absl::StatusOr<v1::Project> SetQuota(const v1::Quota& quota, int64_t now, Effects* fx);

  // --- Inputs from operators ---------------------------------------------------------------

  // No new work on the node; its replicas keep running. NOT_FOUND for an unknown node,
  // INVALID_ARGUMENT for a reason over 1024 characters.
  absl::StatusOr<v1::Node> CordonNode(const std::string& name, const std::string& reason,
                                      int64_t now, Effects* fx);
  // Lifts the cordon, a drain and the flapping hold. A node whose checks still fail stays
  // ISOLATED; its agent is asked to run its checks again at once.
  absl::StatusOr<v1::Node> UncordonNode(const std::string& name, int64_t now, Effects* fx);
  // Cordons the node and moves every replica on it: stopped with SIGTERM and `deadline_ms` (0:
  // the job's stopGracePeriod) before SIGKILL, then started on another node with the same name
  // and rank, not charged to its restart budget. INVALID_ARGUMENT without a reason.
  absl::StatusOr<v1::Node> DrainNode(const std::string& name, const std::string& reason,
                                     int64_t deadline_ms, int64_t now, Effects* fx);

  // --- Inputs from agents ------------------------------------------------------------------

  // An agent (re)connected. Re-adopts the replicas it reports, stops runs nobody wants, resends
  // launches it never received. Returns the RegisterAck to send back.
  v1::RegisterAck AgentRegistered(const v1::Register& reg, int64_t now, Effects* fx);
  void AgentDisconnected(const std::string& node, int64_t now, Effects* fx);
  // A LOST node whose agent kept its stream and is heard from again is back: the runs moved off
  // it are stopped there.
  void Heartbeat(const std::string& node, int64_t now, Effects* fx);
  // A check run not tied to an exit: periodic, or a preflight that passed. A failed run isolates
  // the node and moves its replicas off it.
  void CheckReported(const std::string& node, const v1::CheckRun& run, int64_t now, Effects* fx);
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

  // Enforces time limits (scheduling.timeout, hangTimeout, launchTimeout), starts replica
  // restarts whose backoff has passed, and marks nodes not heard from within the lost timeout
  // LOST, moving their replicas.
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
  // The API view of a node: its status with resources, free resources and replica count.
  // NOT_FOUND for an unknown node.
  absl::StatusOr<v1::Node> GetNode(const std::string& name) const;
  // Every node, by name.
  std::vector<v1::Node> ListNodes() const;

  // The quota row of a project, or nullptr when it uses the default quota.
  const v1::Quota* FindQuota(const std::string& project) const;
  // A project with its effective quota and usage. INVALID_ARGUMENT for a malformed name; any
  // well-formed name is a project (with the default quota until one is set).
  absl::StatusOr<v1::Project> GetProject(const std::string& name) const;
  // Every project that has a quota row or a job that is not terminal, by name.
  std::vector<v1::Project> ListProjects() const;
  // QUEUED jobs in admission order (of `project`, or all), at most `limit`, each with its
  // queue_status filled as of `now`.
  std::vector<v1::Job> ListQueue(const std::string& project, int32_t limit, int64_t now) const;
  // `job` with queue_status filled when it is QUEUED; unchanged otherwise.
  v1::Job WithQueueStatus(const v1::Job& job, int64_t now) const;
  // The same for many jobs at once; usage and queue order are computed once for the batch.
  std::vector<v1::Job> WithQueueStatus(const std::vector<const v1::Job*>& jobs, int64_t now) const;
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
  // `decision` is what the attempt records: RETRY_JOB, or REDISPATCH.
  void RetryJob(v1::Job* job, const RetryDecision& d, const std::string& decision, int64_t now,
                Effects* fx);
  // A host fault (R16): re-dispatches the job on other hosts, first in the queue (R17), while
  // faultTolerance.jobRetryNum allows; else fails it with "error,exiting" (R21). `charged` false
  // re-dispatches maintenance moves that found no room, without charging or failing.
  void Redispatch(v1::Job* job, const v1::JobError& cause, bool charged, int64_t now, Effects* fx);
  // Moves replica `index` of a live job off its node: a graceful stop first when its process can
  // be reached (grace_ms < 0: the job's stopGracePeriod), else at once.
  void MoveReplica(v1::Job* job, int index, const std::string& why, int64_t grace_ms, int64_t now,
                   Effects* fx);
  // Starts a replica whose move is due on the best other schedulable node, or re-dispatches the
  // job when none has room. `new_run` false: the replica's restart count already names a run
  // not launched yet (an in-place restart whose node cannot take it).
  void PlaceMovedReplica(v1::Job* job, int index, int64_t now, Effects* fx, bool new_run = true);
  // Moves every replica of live jobs off `node`, and stops what other jobs still hold there.
  void MoveReplicasOff(const std::string& node, const std::string& why, int64_t grace_ms,
                       bool node_gone, int64_t now, Effects* fx);
  // Records a check run for `node`: isolation, flapping and recovery, with their events.
  void ApplyCheckRun(const std::string& node, const v1::CheckRun& run, int64_t now, Effects* fx);
  // A LOST node is heard from again (`how`): back in service; stops the runs moved off it.
  void NodeReturned(Node* node, const std::string& how, int64_t now, Effects* fx);
  // Re-derives the node's state and health; records the change (and `reason`) when they moved.
  void RefreshNode(Node* node, const std::string& reason, int64_t now, Effects* fx);
  // LOST nodes (Tick), and drains that have finished.
  void CheckNodes(int64_t now, Effects* fx);
  v1::Node NodeView(const Node& node, const NodeUsage& usage) const;
  // Marks the replica STARTING on its node and sends the launch.
  void LaunchOnItsNode(v1::Job* job, int replica_index, int64_t now, Effects* fx);
  void RecordAttemptEnd(v1::Job* job, const RetryDecision& d, const std::string& decision,
                        int64_t now, Effects* fx);
  enum class CapacityCheck {
    kBusy,      // it would fit the idle cluster: it waits for other jobs' replicas
    kStockout,  // it would not fit even the idle cluster; placementTimeout is running
    kActed,     // the placement timeout passed: a capacity retry was charged, or the job failed
  };
  // Tells a busy cluster from a stockout, and charges capacity retries (R8).
  CapacityCheck CheckCapacity(v1::Job* job, const std::vector<ReplicaDemand>& demands,
                              const std::string& missing, int64_t now, Effects* fx);
  // Starts a new attempt of `job` on the nodes `placed` (one per replica).
  void StartAttemptOn(v1::Job* job, const std::vector<std::string>& placed, int64_t now,
                      Effects* fx);
  // Queue bookkeeping: the global order, the project's order, and the queue-timeout index.
  void Enqueue(const v1::Job& job);
  void Dequeue(const v1::Job& job);
  // When a queued job times out, or 0 for never (queueTimeout; 30m for a retrying job).
  int64_t QueueDeadline(const v1::Job& job) const;
  // The effective quota of a project (its own, or the default).
  v1::Quota QuotaOf(const std::string& project) const;
  std::map<std::string, ProjectUsage> ProjectUsages() const;
  // What `project` may borrow from its cohort now, per resource.
  Res Borrowable(const std::string& project, const v1::Quota& quota,
                 const std::map<std::string, ProjectUsage>& usages) const;
  Res DemandOf(const v1::Job& job) const;
  std::vector<ReplicaDemand> DemandsOf(const v1::Job& job) const;
  // Free resources of every connected node.
  std::vector<NodeFree> FreeNodes() const;
  // Why the job (QUEUED) is not running: every blocker, as of `now`.
  std::vector<v1::Blocker> BlockersOf(const v1::Job& job,
                                      const std::map<std::string, ProjectUsage>& usages,
                                      const std::vector<NodeFree>& free, int64_t now) const;
  v1::Project MakeProject(const std::string& name,
                          const std::map<std::string, ProjectUsage>& usages) const;
  void SendLaunch(const v1::Job& job, int replica_index, Effects* fx);
  void SendStop(const v1::Job& job, const v1::Replica& r, const std::string& reason, Effects* fx);
  void RecordRun(const v1::Job& job, const v1::Replica& r, Effects* fx);
  void AddEvent(Effects* fx, int64_t now, const v1::Job* job, const std::string& replica,
                const std::string& node, const std::string& type, const std::string& reason);
  // The ids of active_, copied (for loops that may change active_).
  std::vector<std::string> ActiveIds() const;
  // Keeps active_ in step with the job's state and its replicas. REQUIRES: job is in jobs_.
  void RefreshActive(const v1::Job& job);
  void Touch(v1::Job* job, int64_t now, Effects* fx);

  // Constant after construction.
  const CoreOptions options_;

  std::mt19937_64 rng_;
  std::map<std::string, v1::Job> jobs_;
  std::map<std::string, Node> nodes_;
  // Jobs waiting for admission, in admission order: all, and per project.
  std::set<QueueKey> queue_;
  std::map<std::string, std::set<QueueKey>> project_queues_;
  // (deadline, job id) of queued jobs with a queue timeout.
  std::set<std::pair<int64_t, std::string>> queue_deadlines_;
  // Since when each blocked job has been overtaken (BEST_EFFORT_FIFO starvation limit).
  std::map<std::string, int64_t> blocked_since_;
  // Quotas set for projects; others use options_.default_quota.
  std::map<std::string, v1::Quota> quotas_;
  // Jobs holding or about to hold resources (PENDING, RUNNING, CANCELLING, or terminal with
  // replicas still stopping).
  std::map<std::string, v1::Job*> active_;
  // Newest first, for listing: (-create_ms, id).
  std::set<std::pair<int64_t, std::string>> by_age_;
  // Node of every run ever launched, for logs of earlier runs.
  std::map<std::string, std::string> run_nodes_;
  bool schedule_needed_ = true;
  // The latest creation time given to a job (ms).
  int64_t last_create_ms_ = 0;
  // The earliest time a queued job's backoff or placement timeout ends; Tick schedules then.
  int64_t next_wakeup_ms_ = 0;
  // Since when each queued job could not fit even on the idle connected cluster (stockout).
  std::map<std::string, int64_t> stockout_since_;
  // After Restore, the first Tick's time: nodes restored from disk count as heard from then, so
  // a scheduler restart gives every agent a full lost timeout to reconnect.
  bool restored_ = false;
  int64_t first_tick_ms_ = 0;
};

}  // namespace trainctl::sched
