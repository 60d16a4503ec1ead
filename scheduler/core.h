// The scheduler core: routes every input to the part that owns it and gathers the effects.
//
//   NodeRegistry     nodes, connections, health, cordon/drain, what runs where
//   AdmissionQueue   queued jobs, quotas, usage per project, which job is admitted next
//   PlacementPolicy  where a gang or a moved replica goes (pure)
//   FailureClassifier + RetryEngine   one typed decision per replica end (pure)
//   JobLifecycle     the job and replica state machines: applies what the others decided
//   JobTable         the jobs and their indexes
//   Timers           the next wakeup
//
// Each input takes `now` (an absl::Time from an injectable clock; durations are absl::Duration)
// and appends what it decided to `fx`: rows to persist, events, and commands for agents. The core
// performs no I/O; the shell (server/reconcile_loop) commits `fx` in one transaction before any
// command leaves, so a crash never loses an acknowledged change. Given the same state, inputs and
// times, the core makes the same decisions, which the unit tests rely on.
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
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/admission_queue.h"
#include "scheduler/dependencies.h"
#include "scheduler/image_pulls.h"
#include "scheduler/job_lifecycle.h"
#include "scheduler/job_table.h"
#include "scheduler/node_registry.h"
#include "scheduler/queue_state.h"
#include "scheduler/request_index.h"
#include "scheduler/stragglers.h"
#include "scheduler/timers.h"

namespace trainctl::sched {

struct CoreOptions {
  // Parent of every job's default checkpoint directory ("<root>/<job id>").
  std::string checkpoint_root = "/var/lib/trainctl/checkpoints";
  // Where a job's own checkpointDir may lie: strictly under one of these (absolute) directories.
  // Empty: under checkpoint_root. Agents create the directory, often as root, so a job must not
  // name /etc.
  std::vector<std::string> checkpoint_allowed_roots;
  // Told to agents in RegisterAck (in whole ms).
  absl::Duration heartbeat_interval = absl::Seconds(2);
  // Seed for job ids; 0 picks a random seed.
  uint64_t id_seed = 0;
  // The quota of every project that has none of its own (its `project` field is ignored).
  // Unset limits are unlimited.
  Quota default_quota;
  // The lost timeout, the flapping rule and the port range of every node.
  NodePolicy nodes;
  // Where projects' replica uids come from (project_uids.h; trainctld --replica-uid-range).
  UidRange replica_uid_range;
  // scheduling.settleWindow of jobs that set none (GANG jobs: how long a non-transient exit
  // waits for an earlier failure of a peer).
  absl::Duration settle_window = absl::Seconds(3);
  // Failures whose exit times are this close count as simultaneous when the root cause of a
  // gang's failure is chosen (agents' clocks and reports disagree a little).
  absl::Duration skew_tolerance = absl::Seconds(1);
  // Fair share across projects (fair_share.h; trainctld --fair-share, --fair-share-half-life,
  // --fair-share-resource-weights).
  FairShareOptions fair_share;
  // How long a gang blocked on capacity waits before the cluster keeps room for it
  // (reservation.h; trainctld --reservation-after); nullopt: never.
  std::optional<absl::Duration> reservation_after = AdmissionQueue::kDefaultReservationAfter;
  // Which ranks of a gang are stragglers (stragglers.h; --straggler-ratio, --straggler-window).
  StragglerOptions stragglers;
  // How long the agents have to answer a round of a fabric check (fabric_checks.h;
  // --gang-check-timeout).
  absl::Duration fabric_check_timeout = absl::Minutes(1);
};

class Core {
 public:
  explicit Core(CoreOptions options);

  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // Loads persisted state after a restart. Every node starts disconnected; its agent's next
  // Register re-adopts the replicas it still runs. REQUIRES: called once, before any input.
  void Restore(std::vector<Job> jobs, std::vector<Node> nodes, const std::vector<ReplicaRun>& runs,
               std::vector<Quota> quotas = {});
  // The latest creation time of any stored job, loaded or not: new jobs are created after it,
  // so their ids (which begin with the creation time) never repeat a stored job's.
  void RestoreLastCreate(absl::Time t) { jobs_.NoteCreated(t); }
  // The project's replica uid, if it has one (project_uids.h).
  std::optional<uint32_t> ProjectUid(const std::string& project) const {
    return queue_.uids().Find(project);
  }
  // Brings the projects' fair-share ledgers to `now` (fair_share.h). The shell calls it at the
  // start of each turn, before anything changes what replicas hold, so that the time between two
  // turns is charged to what was held in it; each admission pass calls it too.
  void AccrueUsage(absl::Time now) { queue_.AccrueUsage(now); }
  // The projects' stored fair-share ledgers (fair_share.h).
  void RestoreUsageLedgers(std::vector<UsageLedger> rows) {
    queue_.fair_share().Restore(std::move(rows));
  }
  // The stored accounting rows of the latest hours (usage_rollup.h). REQUIRES: after Restore.
  void RestoreUsageHours(std::vector<UsageHour> rows) {
    queue_.fair_share().rollup().Restore(std::move(rows));
  }
  // The projects' stored replica uids (project_uids.h).
  void RestoreProjectUids(std::map<std::string, uint32_t> uids) {
    queue_.uids().Restore(std::move(uids));
  }

  // --- Inputs from API callers -------------------------------------------------------------
  // Returned jobs stay valid until the next input.

  // Validates, fills defaults and stores a new QUEUED job. INVALID_ARGUMENT for a bad spec,
  // FAILED_PRECONDITION when no registered node could ever hold one of its replicas. The first
  // job of a project gives the project its replica uid (Effects::project_uids);
  // RESOURCE_EXHAUSTED when CoreOptions::replica_uid_range has none left.
  // `creator`: the token owner behind the call (Job.creator), also the scope of `request`.
  // With a request id, a second submit of the same creator and id within 24 hours returns the
  // job the first one created (and changes nothing), or ALREADY_EXISTS when its spec hash
  // differs (see request_index.h).
  // `stored_ends`: the end states of the jobs spec.depends_on names that the core no longer
  // holds (read from the store by the caller); a dependency on a job in neither is refused
  // (INVALID_ARGUMENT naming spec.dependsOn[i].job).
  absl::StatusOr<const Job*> SubmitJob(const v1::JobSpec& spec, absl::Time now, Effects* fx,
                                       const std::string& creator = "",
                                       const CreateRequestKey& request = {},
                                       const std::map<std::string, v1::JobState>& stored_ends = {});
  // --- Queue operations (core_queue_ops.cc): each an event naming `actor` ---------------------
  // Holds a QUEUED job out of admission until ReleaseJob; it holds back no job behind it.
  // NOT_FOUND; FAILED_PRECONDITION for a job not QUEUED or held already; INVALID_ARGUMENT for a
  // reason over 1024 characters.
  absl::StatusOr<const Job*> HoldJob(const std::string& id, const std::string& actor,
                                     const std::string& reason, absl::Time now, Effects* fx);
  // Lets a held job be admitted; its queueTimeout counts afresh from now. FAILED_PRECONDITION
  // for a job that is not held.
  absl::StatusOr<const Job*> ReleaseJob(const std::string& id, const std::string& actor,
                                        absl::Time now, Effects* fx);
  // Changes a QUEUED job's priority, queueTimeout and labels (req's set fields), validated as at
  // submit. FAILED_PRECONDITION naming the job's state otherwise.
  absl::StatusOr<const Job*> UpdateJob(const v1::UpdateJobRequest& req, const std::string& actor,
                                       absl::Time now, Effects* fx);
  // Sends a PENDING or RUNNING job back to the queue as a preemption without a preemptor (the
  // notice, the grace period, the attempt's end, charged to nothing). FAILED_PRECONDITION
  // otherwise, or while a preemption of it is under way.
  absl::StatusOr<const Job*> RequeueJob(const std::string& id, const std::string& actor,
                                        const std::string& reason, absl::Time now, Effects* fx);
  // Starts cancelling a job: QUEUED jobs end at once, others stop their replicas first
  // (CANCELLING, then CANCELLED when every replica is gone). Terminal jobs are returned as is.
  absl::StatusOr<const Job*> CancelJob(const std::string& id, absl::Time now, Effects* fx);
  // Grows a RUNNING job whose elastic pools shrank back toward its spec's size: its gang restarts
  // with every removed replica there is room for (JobLifecycle::RequestGrow). NOT_FOUND for an
  // unknown job; FAILED_PRECONDITION saying why it cannot grow now. `actor` names who asked.
  absl::StatusOr<const Job*> ResizeJob(const std::string& id, const std::string& actor,
                                       absl::Time now, Effects* fx);
  // Forgets a terminal job whose replicas have all ended; its rows (attempts, runs, events) go
  // with it (Effects::deleted_jobs). NOT_FOUND for an unknown job, FAILED_PRECONDITION while it
  // is not terminal or a replica of it still holds its node. `why` non-empty: a JobDeleted event
  // (not tied to the job, so it outlives it) records it; retention passes none.
  absl::Status DeleteJob(const std::string& id, const std::string& why, absl::Time now,
                         Effects* fx);
  // DeleteJob for a job the core no longer holds (ForgetJob), as read from the database: records
  // the deletion like DeleteJob and lists the rows to delete. DeleteJob when the core holds it
  // after all; FAILED_PRECONDITION when `stored` is not terminal.
  absl::Status DeleteStoredJob(const v1::Job& stored, const std::string& why, absl::Time now,
                               Effects* fx);
  // Drops a terminal job whose replicas have all ended from memory, its rows staying in the
  // database (trainctld keeps only live and recently ended jobs in the core; readers find the
  // others in the database). The errors of DeleteJob; no effect.
  absl::Status ForgetJob(const std::string& id);
  // Replaces a project's quota; takes effect at once (raising it admits waiting jobs; lowering it
  // stops nothing). INVALID_ARGUMENT for a bad quota, with the field path (ValidateQuota; the API
  // checks the message it got the same way before mapping it with QuotaFromProto).
  // The quota of every project without one of its own (CoreOptions::default_quota), replaced.
  void SetDefaultQuota(const Quota& quota, absl::Time now, Effects* fx);
  absl::StatusOr<v1::Project> SetQuota(const Quota& quota, absl::Time now, Effects* fx);
  // Progress reported through the API: the step reached (0: none named), and `checkpoint` when
  // the replica finished writing a checkpoint (which ends a preemption's grace period).
  // NOT_FOUND for an unknown job or replica, FAILED_PRECONDITION when the replica is not running.
  absl::Status ReportProgress(const std::string& job_id, const std::string& replica, int64_t step,
                              bool checkpoint, absl::Time now, Effects* fx);

  // --- Inputs from operators ---------------------------------------------------------------

  // No new work on the node; its replicas keep running. NOT_FOUND for an unknown node,
  // INVALID_ARGUMENT for a reason over 1024 characters.
  absl::StatusOr<v1::Node> CordonNode(const std::string& name, const std::string& reason,
                                      absl::Time now, Effects* fx);
  // Lifts the cordon, a drain and the flapping hold. A node whose checks still fail stays
  // ISOLATED; its agent is asked to run its checks again at once.
  absl::StatusOr<v1::Node> UncordonNode(const std::string& name, absl::Time now, Effects* fx);
  // Cordons the node and moves every replica on it: stopped with SIGTERM and `deadline` (zero:
  // the job's stopGracePeriod) before SIGKILL, then started on another node with the same name
  // and rank, not charged to its restart budget. INVALID_ARGUMENT without a reason.
  absl::StatusOr<v1::Node> DrainNode(const std::string& name, const std::string& reason,
                                     absl::Duration deadline, absl::Time now, Effects* fx);

  // Records or clears (req.clear) the node's maintenance window (maintenance.h). A window that
  // already began drains the node at once. NOT_FOUND, INVALID_ARGUMENT naming the field.
  absl::StatusOr<v1::Node> SetNodeMaintenance(const v1::SetNodeMaintenanceRequest& req,
                                              absl::Time now, Effects* fx);

  // Revokes the node's agent certificate (see NodeRegistry::Revoke) and moves its replicas as
  // from a lost node. NOT_FOUND, FAILED_PRECONDITION without a certificate.
  absl::StatusOr<v1::Node> RevokeNode(const std::string& name, const std::string& reason,
                                      absl::Time now, Effects* fx);

  // Forgets a node that is not connected and holds no replica of a live job (NodeRegistry::
  // Delete). FAILED_PRECONDITION naming the replica otherwise.
  absl::StatusOr<v1::Node> DeleteNode(const std::string& name, const std::string& reason,
                                      absl::Time now, Effects* fx);

  // --- Inputs from agents ------------------------------------------------------------------

  // The scheduler refused an agent stream claiming `node`, for `why`: an event row.
  void AgentRefused(const std::string& node, const std::string& why, absl::Time now, Effects* fx);

  // An agent (re)connected. Re-adopts the replicas it reports, stops runs nobody wants, resends
  // launches it never received. Returns the RegisterAck to send back, with the agent's fence
  // time (node_health.h, "Fencing").
  v1::RegisterAck AgentRegistered(const v1::Register& reg, absl::Time now, Effects* fx);
  void AgentDisconnected(const std::string& node, absl::Time now, Effects* fx);
  // A LOST node whose agent kept its stream and is heard from again is back: the runs moved off
  // it are stopped there.
  void Heartbeat(const std::string& node, absl::Time now, Effects* fx);
  // A check run not tied to an exit: periodic, or a preflight that passed. A failed periodic run
  // isolates the node and moves its replicas off it.
  // What the agent's --maintenance-file says now (NodeRegistry::MaintenanceReported).
  void MaintenanceReported(const std::string& node, const v1::MaintenanceReport& report,
                           absl::Time now, Effects* fx);
  void CheckReported(const std::string& node, const v1::CheckRun& run, absl::Time now, Effects* fx);
  void ReplicaStarted(const std::string& node, const v1::ReplicaStarted& started, absl::Time now,
                      Effects* fx);
  // The host's check run attached to the exit counts even for a stale run; then the retry
  // engine decides what the end means, unless it confirms a stop trainctl asked for.
  void ReplicaExited(const std::string& node, const v1::ReplicaExited& exited, absl::Time now,
                     Effects* fx);
  // A sign of progress of a run (checkpoint written, progress file touched). Stale runs are
  // ignored.
  void ReplicaProgress(const std::string& node, const v1::ReplicaProgress& progress, absl::Time now,
                       Effects* fx);
  // A run's stacks, captured by its agent before it stopped the run (StopReplica.capture_stacks):
  // kept with the job (Effects::stacks) and told in a StacksCaptured event. Ignored for a job
  // the core does not hold (deleted) and for a run launched on another node. Of one attempt's
  // captures, the first kStackTextsPerAttempt keep their texts; later ones keep the summaries
  // only (truncated), so a large gang's rounds store at most that many texts (256 KiB each).
  static constexpr int32_t kStackTextsPerAttempt = 64;
  void StacksCaptured(const std::string& node, const v1::ReplicaStacks& stacks, absl::Time now,
                      Effects* fx);
  // The fabric checks under way (fabric_checks.h).
  size_t FabricChecksUnderWay() const { return lifecycle_.fabric().size(); }
  // An agent's answer to a fabric check (fabric_checks.h). Stale answers are ignored.
  void FabricReported(const std::string& node, const v1::FabricReport& report, absl::Time now,
                      Effects* fx) {
    lifecycle_.fabric().Report(node, report, now, fx);
  }
  // How many replicas are judged stragglers now, by project (stragglers.h).
  std::map<std::string, int> StragglersByProject() const {
    return stragglers_.CountByProject(jobs_);
  }
  // How the pull of a launching run's image goes (ImagePulls): the replica's message, an
  // ImagePulling event at the first report and ImagePulled when it is ready. Unknown and stale
  // runs, and runs that are not launching, are ignored.
  void ImagePull(const std::string& node, const v1::ImagePull& pull, absl::Time now, Effects* fx);

  // --- Time and placement ------------------------------------------------------------------

  // Enforces time limits (scheduling.timeout, hangTimeout, launchTimeout, queue timeouts),
  // starts replica restarts whose backoff has passed, and marks nodes not heard from within the
  // lost timeout LOST, moving their replicas one fence margin later (node_health.h).
  void Tick(absl::Time now, Effects* fx);
  // Places QUEUED jobs in admission order. Cheap when nothing changed since the last call.
  // Returns how many jobs it admitted (started). The same as StartAdmitted(PlanAdmissions(now)).
  size_t Schedule(absl::Time now, Effects* fx);
  // Schedule's two halves, for a caller that measures them apart: the admission pass, which
  // decides which queued jobs start and on which nodes (and which ran out of time waiting for
  // capacity), and the start of what it decided: attempts, replicas, launches and events. Nothing
  // may happen to the core between the two calls.
  AdmissionPlan PlanAdmissions(absl::Time now);
  // The jobs that ended since the last call tell the jobs waiting on them (dependencies.h); a
  // waiting job whose condition can never hold ends FAILED under dependencyPolicy FAIL (and
  // tells its own waiters in turn). Called before each PlanAdmissions, so that a job whose
  // dependency ended this turn is admitted in its pass (core_queue_ops.cc).
  void SettleDependencies(absl::Time now, Effects* fx);
  size_t StartAdmitted(const AdmissionPlan& plan, absl::Time now, Effects* fx);

  // --- Reads -------------------------------------------------------------------------------

  // The job `scope` created with `request_id` within RequestIndex::kWindow before `now`, among
  // the jobs the core holds; nullptr when none.
  const RequestIndex::Entry* FindRequest(const std::string& scope, const std::string& request_id,
                                         absl::Time now) const {
    return requests_.Find(scope, request_id, now);
  }

  // nullptr when unknown.
  const Job* FindJob(const std::string& id) const { return jobs_.Find(id); }
  // Every job, by id.
  const std::map<std::string, Job>& jobs() const { return jobs_.all(); }
  const Node* FindNode(const std::string& name) const { return nodes_.Find(name); }
  const std::map<std::string, Node>& nodes() const { return nodes_.nodes(); }
  // The API view of a node. NOT_FOUND for an unknown node.
  // Nodes as the registry sees them, with the reservation that keeps them (reservation.h).
  absl::StatusOr<v1::Node> GetNode(const std::string& name) const;
  std::vector<v1::Node> ListNodes() const;

  // The quota row of a project, or nullptr when it uses the default quota.
  const Quota* FindQuota(const std::string& project) const { return queue_.FindQuota(project); }
  // A project with its effective quota and usage. INVALID_ARGUMENT for a malformed name; any
  // well-formed name is a project (with the default quota until one is set).
  absl::StatusOr<v1::Project> GetProject(const std::string& name) const;
  // Every project that has a quota row, a queued job or an admitted job, by name.
  std::vector<v1::Project> ListProjects() const;
  // QUEUED jobs in admission order (of `project`, or all), at most `limit`, each with its
  // queue_status filled as of `now`.
  std::vector<v1::Job> ListQueue(const std::string& project, int32_t limit, absl::Time now) const;
  // The API view of `job`, with queue_status filled when it is QUEUED.
  v1::Job View(const Job& job, absl::Time now) const;
  // Changes whenever QueueSnapshot() may return something new.
  uint64_t QueueVersion() const { return queue_.version() + nodes_.version(); }
  // The picture of admission that queue statuses are computed from (see queue_state.h).
  std::shared_ptr<const QueueState> QueueSnapshot() const { return queue_.State(jobs_, nodes_); }

  // Where the log of (job, replica, attempt, restart) lives: its node and run id. attempt 0 means
  // the current attempt; restart < 0 the latest run of that attempt.
  absl::Status LocateRun(const std::string& job_id, const std::string& replica, int32_t attempt,
                         int32_t restart, std::string* node, std::string* run_id,
                         bool* finished) const {
    return jobs_.LocateRun(job_id, replica, attempt, restart, node, run_id, finished);
  }

  // Recounts what every replica holds (resources and ports) and every project runs, and compares
  // with what the parts keep incrementally. For tests; INTERNAL naming the first difference.
  absl::Status CheckUsage() const;

 private:
  // Marks lost nodes LOST and moves the replicas of those whose fence wait is over; finishes
  // drains of empty nodes.
  void CheckNodes(absl::Time now, Effects* fx);
  // Drains the nodes whose maintenance window began and uncordons those whose window ended.
  void CheckMaintenance(absl::Time now, Effects* fx);
  // OK when job `id` may be deleted or forgotten: it ended and none of its replicas holds a node.
  absl::Status CheckEnded(const std::string& id) const;
  // Every root a checkpoint directory may lie under: the allowed roots and the default's parent.
  std::vector<std::string> CheckpointRoots() const;
  // `job`'s dependency `d` can never be met: FAILED under dependencyPolicy FAIL, else an event.
  void DependencyNeverMet(Job* job, const v1::DependencyStatus& d, absl::Time now, Effects* fx);
  // The jobs waiting on `id`, which ended as `state`, learn of it.
  void SettleWaiters(const std::string& id, v1::JobState state, absl::Time now, Effects* fx);

  // --- Job arrays (core_arrays.cc; job_arrays.h) ---------------------------------------------

  // Makes the just-submitted `job` an array: out of the queue, no replicas of its own.
  void MakeArray(Job* job, absl::Time now, Effects* fx);
  // Counts the elements this turn changed into their arrays; ends the arrays that are done.
  void CountArrayElements(absl::Time now, Effects* fx);
  // Starts the next elements of every open array that has room (parallelism, the start window).
  void FeedArrays(absl::Time now, Effects* fx);
  Job* StartElement(Job* array, int32_t index, absl::Time now, Effects* fx);
  void EndArray(Job* array, absl::Time now, Effects* fx);
  // The array `id` names an element of, when that element has not started (nullptr otherwise):
  // its index in `*index`.
  Job* UnstartedElement(const std::string& id, int32_t* index);
  // Cancel, hold and release of a whole array, and of an element not started yet (which act on
  // its array's row and return it).
  const Job* CancelArray(Job* array, absl::Time now, Effects* fx);
  absl::StatusOr<const Job*> HoldArray(Job* array, const std::string& actor,
                                       const std::string& reason, absl::Time now, Effects* fx);
  absl::StatusOr<const Job*> ReleaseArray(Job* array, const std::string& actor, absl::Time now,
                                          Effects* fx);
  enum class UnstartedAction { kCancel, kHold, kRelease };
  absl::StatusOr<const Job*> UnstartedOp(Job* array, int32_t index, UnstartedAction op,
                                         const std::string& actor, absl::Time now, Effects* fx);

  // Constant after construction.
  const CoreOptions options_;

  JobTable jobs_;
  RequestIndex requests_;
  NodeRegistry nodes_;
  AdmissionQueue queue_;
  Timers timers_;
  JobLifecycle lifecycle_;
  ImagePulls pulls_;
  Stragglers stragglers_;
  DependencyIndex dependencies_;
  // Arrays that have not ended, and the ends of elements that never started (cancelled), for
  // the jobs that wait on them.
  std::set<std::string> open_arrays_;
  std::vector<std::string> unstarted_ends_;
};

}  // namespace trainctl::sched
