// AdmissionQueue: the jobs waiting for admission, the projects' quotas and what each project's
// admitted jobs hold, and the scheduling pass that decides which job is admitted next (R1, R17).
//
// Order: retrying (re-dispatched) jobs first, then higher priority, then earlier submission.
// Fairness: each project offers its jobs in that order and the best next job across projects
// goes first. A project leaves a pass when its next job is blocked (STRICT_FIFO), or when a
// blocked job of it has been overtaken for its starvation limit (BEST_EFFORT_FIFO). A job larger
// than its quota, or than the idle cluster, holds back nobody.
//
// Usage is kept incrementally: the job lifecycle tells the queue what each project's replicas
// hold (Hold/Release) and when a job is admitted or released (Admitted/Released); nothing is
// re-summed over running jobs. The pass is Nomad-like: it returns a plan (which jobs to start on
// which nodes, which stockouts are due, which queue reasons changed) and the core applies it.
//
// Thread-safety: none; owned by the core.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/admission.h"
#include "scheduler/fair_share.h"
#include "scheduler/job_table.h"
#include "scheduler/node_selection.h"
#include "scheduler/placement.h"
#include "scheduler/placement_pipeline.h"
#include "scheduler/project_uids.h"
#include "scheduler/queue_state.h"
#include "scheduler/reservation.h"
#include "scheduler/timers.h"
#include "scheduler/topology.h"

namespace trainctl::sched {

class NodeRegistry;

// What a scheduling pass decided.
struct AdmissionPlan {
  struct Start {
    std::string job_id;
    std::vector<std::string> nodes;  // one per replica, in rank order
  };
  // Jobs to start now, in admission order.
  std::vector<Start> starts;
  struct Stockout {
    std::string job_id;
    // What the healthy cluster lacks, even idle: "no node has 8 free gpus for worker-0 (...)",
    // or "no node is connected and READY".
    std::string missing;
  };
  // Jobs whose placementTimeout passed while the cluster could not hold them even idle: the
  // retry engine charges a capacity retry or fails them.
  std::vector<Stockout> stockouts;
  // New queue reasons (job id, reason), for jobs whose reason changed.
  std::vector<std::pair<std::string, std::string>> reasons;
  struct Preemption {
    // The waiting job, and the jobs it preempts (victims.h), in the order chosen.
    std::string job_id;
    std::vector<std::string> victims;
    // For the victims' events: "job j-2 (priority 10) of project team-a needs ...".
    std::string reason;
  };
  // Preemptions decided: the lifecycle gives each victim its notice.
  std::vector<Preemption> preemptions;
};

class AdmissionQueue {
 public:
  // `default_quota` is every project's quota that has none of its own; projects' replica uids
  // come from `uid_range`. A gang blocked on capacity for `reservation_after` gets the cluster's
  // reservation (reservation.h); nullopt: never.
  explicit AdmissionQueue(
      Quota default_quota, UidRange uid_range = {}, FairShareOptions fair_share = {},
      std::optional<absl::Duration> reservation_after = kDefaultReservationAfter)
      : default_quota_(std::move(default_quota)),
        uids_(uid_range),
        fair_share_(fair_share),
        reservation_after_(reservation_after) {}

  // trainctld --reservation-after's default.
  static constexpr absl::Duration kDefaultReservationAfter = absl::Minutes(10);

  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  void RestoreQuotas(std::vector<Quota> quotas);

  // --- Membership ----------------------------------------------------------------------------

  // REQUIRES: `job` is QUEUED and not in the queue.
  void Enqueue(const Job& job);
  // Removes `job` if queued; forgets its stockout and starvation clocks.
  void Dequeue(const Job& job);
  // Asks for a scheduling pass (something changed that may let a job in).
  void Wake() { pass_needed_ = true; }

  // --- Usage ---------------------------------------------------------------------------------

  // A replica of `key.project` holds `need` now, or no longer does; the rollup (usage_rollup.h)
  // counts it under `key`, and a `run` (see UsageRollup::Hold) with its `queue_wait`.
  void Hold(const UsageKey& key, const Res& need, bool run = false,
            absl::Duration queue_wait = absl::ZeroDuration());
  void Release(const UsageKey& key, const Res& need);
  // A job of `project` was admitted (PENDING, RUNNING, CANCELLING), or left those states.
  void Admitted(const std::string& project);
  void Released(const std::string& project);

  // --- Quotas --------------------------------------------------------------------------------

  // Replaces a project's quota; takes effect at the next pass. INVALID_ARGUMENT with the field
  // path for a bad quota (ValidateQuota, on its message form).
  absl::Status SetQuota(const Quota& quota, absl::Time now, Effects* fx);
  // Replaces the quota of every project without one of its own (trainctld's SIGHUP).
  void SetDefaultQuota(const Quota& quota, absl::Time now, Effects* fx);
  // The project's own quota row, or nullptr when it uses the default.
  const Quota* FindQuota(const std::string& project) const;
  // The project's own quota row, or the default (whose `project` is not set), without a copy.
  const Quota& QuotaOrDefault(const std::string& project) const {
    const Quota* q = FindQuota(project);
    return q != nullptr ? *q : default_quota_;
  }
  // Each project's replica uid (shown in ProjectView).
  // Each project's decayed usage, which orders the queue across projects (fair_share.h).
  FairShare& fair_share() { return fair_share_; }
  // The project's fair share (fair_share.h) over the cluster as the last pass counted it.
  double ShareOf(const std::string& project) const;
  // Brings the fair-share ledgers to `now` with what projects hold now: called before anything
  // changes what they hold (each turn's start), and by every pass.
  void AccrueUsage(absl::Time now) { fair_share_.Accrue(usage_, now); }
  const FairShare& fair_share() const { return fair_share_; }
  ProjectUids& uids() { return uids_; }
  const ProjectUids& uids() const { return uids_; }

  // --- The pass ------------------------------------------------------------------------------

  // Decides which queued jobs start now and where. Cheap when nothing changed since the last
  // pass. Asks `timers` for the wakeups it needs (backoffs, placement timeouts, starvation).
  // Places gangs on `nodes`' PassIndex.
  AdmissionPlan Pass(const JobTable& jobs, NodeRegistry* nodes, absl::Time now, Timers* timers);

  // How long the job may wait in the queue: queueTimeout, or 30m for a retrying job (R17).
  static std::optional<absl::Duration> QueueTimeoutOf(const Job& job);
  // Queued jobs whose queue timeout has passed at `now`, oldest deadline first.
  std::vector<std::string> ExpiredDeadlines(absl::Time now) const;

  // --- Reads ---------------------------------------------------------------------------------

  // Everything queue statuses and projects are computed from, as of now. The queued jobs' order
  // is built again only after the membership changed; until then, every state shares it.
  std::shared_ptr<const QueueState> State(const JobTable& jobs, const NodeRegistry& nodes) const;
  // Queued job ids in admission order, of `project` (or all), at most `limit`.
  std::vector<std::string> Queued(const std::string& project, int32_t limit) const;
  // Changes whenever anything State() returns may have changed.
  uint64_t version() const { return version_; }
  // What the project's admitted jobs hold, as counted incrementally.
  ProjectUsage UsageOf(const std::string& project) const {
    auto it = usage_.find(project);
    return it == usage_.end() ? ProjectUsage{} : it->second;
  }
  // The project's effective quota: its own, or the default, with `project` set.
  Quota EffectiveQuota(const std::string& project) const;
  // A project with its effective quota, usage and queued jobs, as of now.
  v1::Project ProjectView(const std::string& project) const;
  // Projects that have a quota row, a queued job, an admitted job or fair-share usage.
  std::set<std::string> Projects() const;
  // The cluster's reservation (reservation.h), or nullptr while no job holds one.
  const Reservation* reservation() const { return reservation_ ? &*reservation_ : nullptr; }

 private:
  // Queue order: retrying jobs first (R17), then higher priority, then earlier creation, then id.
  using QueueKey = std::tuple<int32_t, int32_t, absl::Time, std::string>;
  static QueueKey KeyOf(const Job& job);
  // When a queued job times out (queueTimeout; 30m for a retrying job), if it does.
  static std::optional<absl::Time> DeadlineOf(const Job& job);
  // Tells a busy cluster from a stockout; a due stockout goes into `plan`. Returns true when the
  // job should hold back nobody (a stockout).
  bool IsStockout(const Job& job, const std::vector<ReplicaDemand>& demands,
                  const std::string& missing, const NodeRegistry& nodes, absl::Time now,
                  Timers* timers, AdmissionPlan* plan);
  // Whether the job would fit the idle connected cluster (cached in idle_fits_).
  bool FitsIdle(const Job& job, const std::vector<ReplicaDemand>& demands,
                const NodeRegistry& nodes);

  // --- Preemption (preemption_search.cc) -----------------------------------------------------

  // Whether any project's quota lets a waiting job preempt (reclaim or preemptWithinProject):
  // without one, the pass does no preemption work at all.
  bool AnyPreemptionPolicy() const;
  // The victims whose removal lets the blocked `job` start (victims.h), by quota (`usage`,
  // `borrowable` as the pass sees them) and by placement (`pipeline`'s what-if, off the
  // `reserved` nodes), never one in `taken` (chosen for another job in this pass); nullopt when
  // none would.
  std::optional<AdmissionPlan::Preemption> SearchVictims(
      const Job& job, const Quota& quota, const std::vector<ReplicaDemand>& demands,
      const std::map<std::string, ProjectUsage>& usage, const Res& borrowable,
      PlacementPipeline* pipeline, const JobTable& jobs, const std::set<std::string>& taken,
      const std::set<std::string>& reserved, absl::Time now) const;
  // Before a pass: forgets the preempting jobs whose victims are all gone (they compete again),
  // and returns the nodes the victims still hold, which other jobs may not take meanwhile. After
  // a restart, first finds the preemptions under way in `jobs`.
  // Those whose victims are all gone are in `ready`: they take the room first.
  std::set<std::string> PreemptionsUnderWay(const JobTable& jobs, const NodeRegistry& nodes,
                                            std::vector<std::string>* ready);
  // --- Reservations (admission_reservation.cc) ----------------------------------------------

  // The job `job`, blocked on capacity at `now` (not by its quota, not a stockout), gets the
  // reservation once it has waited reservation_after_, unless another job holds it; one it holds
  // is made again once its expected start passed or the nodes changed. `free` is the pass's book
  // (this pass's starts taken), `reserved` the nodes preemption's victims free for others.
  // Returns false when the job waited long enough but another job holds the reservation.
  bool Reserve(const Job& job, const std::vector<ReplicaDemand>& demands, const JobTable& jobs,
               const FreeIndex& free, const std::vector<NodeWindow>& windows,
               const std::set<std::string>& reserved, uint64_t shape_version, absl::Time now,
               Timers* timers);
  // Drops the reservation (its job started, left the queue or waits for its quota).
  void DropReservation();
  // The room of every admitted job, with the latest it ends.
  static std::vector<RunningRoom> RunningRooms(const JobTable& jobs, absl::Time now);
  static RunningRoom RoomOf(const Job& job, absl::Time now);

  // The project's quota's fair-share weight (1 unless set), without copying the quota.
  double WeightOf(const std::string& project) const;
  // The allocatable total of the connected schedulable nodes, kept until their shape changes.
  const Res& ClusterCapacity(const NodeRegistry& nodes);

  Quota default_quota_;

  std::map<std::string, Quota> quotas_;
  ProjectUids uids_;
  FairShare fair_share_;
  // The allocatable total of the connected schedulable nodes (fair share's denominators), as of
  // capacity_version_ (NodeRegistry::shape_version()).
  Res capacity_;
  uint64_t capacity_version_ = 0;
  std::map<std::string, ProjectUsage> usage_;
  // Replicas holding resources, per project: a project with none holds exactly nothing (no
  // float residue of cpu sums), and leaves usage_ once it has no admitted job either.
  std::map<std::string, int32_t> holders_;
  // Jobs waiting for admission, in admission order: all, and per project.
  std::set<QueueKey> queue_;
  std::map<std::string, std::set<QueueKey>> project_queues_;
  // (deadline, job id) of queued jobs with a queue timeout.
  std::set<std::pair<absl::Time, std::string>> deadlines_;
  // Since when each blocked job has been overtaken (BEST_EFFORT_FIFO starvation limit).
  std::map<std::string, absl::Time> blocked_since_;
  // Since when each queued job could not fit even on the idle connected cluster (stockout).
  std::map<std::string, absl::Time> stockout_since_;
  // Whether queued jobs that did not fit would fit the idle cluster, as of idle_fits_version_
  // (NodeRegistry::shape_version()); FitsIdle keys it. Jobs without placement constraints share
  // one answer per shape of their demands, so a deep queue of a few shapes costs a few copies of
  // the idle cluster when the nodes change, not one per job.
  std::map<std::string, bool> idle_fits_;
  uint64_t idle_fits_version_ = 0;
  bool pass_needed_ = true;
  uint64_t version_ = 0;
  // The queue's order as State() last built it, for the next State() to share, and the projects
  // whose queue changed since (Enqueue, Dequeue): State() builds their lists again and shares the
  // rest.
  mutable std::shared_ptr<const QueueOrder> order_;
  mutable std::set<std::string> order_stale_;
  // Waiting jobs whose victims are still checkpointing or stopping, with those victims: they do
  // not look for more, and the room their victims hold is theirs (preemption_search.cc).
  std::map<std::string, std::set<std::string>> preempting_;
  // Whether preempting_ was rebuilt from the jobs after a restart.
  bool preempting_known_ = false;
  std::optional<absl::Duration> reservation_after_;
  // The one job whose room is kept (reservation.h); in memory only: after a restart the job,
  // still blocked, gets it again at the first pass.
  std::optional<Reservation> reservation_;
};

}  // namespace trainctl::sched
