// QueueState: a read-only picture of admission — quotas, what each project holds, each project's
// queued jobs in order, and the free nodes — and the pure functions that explain a queued job
// from it: its blockers, its place in line, its project's usage.
//
// The core uses these for its own reads; the reconcile loop publishes a QueueState after each
// turn that changed admission, so `get` and `list` can say why a job waits without waiting for
// the loop (see server/job_snapshots.h).
//
//   QueueState state = ...;                          // AdmissionQueue::State()
//   v1::QueueStatus qs = QueueStatusOf(state, QueuedJobOf(job), now);
//
// Thread-safety: a QueueState is immutable once built; share it freely.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/admission.h"
#include "scheduler/maintenance.h"
#include "scheduler/placement.h"
#include "scheduler/reservation.h"

namespace trainctl::sched {

// What explaining a queued job needs of it.
struct QueuedJob {
  std::string id;
  std::string project;
  // Attempts so far; the next one is attempts + 1.
  int32_t attempts = 0;
  std::optional<absl::Time> next_attempt_time;
  // Some replica of the last attempt still holds resources.
  bool stopping = false;
  std::vector<ReplicaDemand> demands;
  // How long it is expected to run (maintenance.h, ExpectedDuration).
  absl::Duration expected_duration = absl::ZeroDuration();
  // What its spec asks of nodes beyond resources (node selections, scheduling.placement), or
  // nullptr when nothing (PlacementSpecOf).
  std::shared_ptr<const v1::JobSpec> placement_spec = nullptr;
  // Its scheduling.timeout: whether it may start on the reservation's nodes (reservation.h).
  TimeoutClock timeout;
  // The nodes it no longer uses (Job::excluded_nodes).
  std::vector<std::string> excluded_nodes;
  // Held, or waiting on a dependency (dependencies.h): its one blocker, which holds back nobody.
  BlockerKind quiet_kind = BlockerKind::kHeld;
  std::string quiet;
};

QueuedJob QueuedJobOf(const Job& job);
// The same from the API's message (a published snapshot). Replica needs come from the spec.
QueuedJob QueuedJobOf(const v1::Job& job);

// One project's queued job ids, in admission order.
using ProjectOrder = std::shared_ptr<const std::vector<std::string>>;
// Queued job ids per project, in admission order. A project's list is shared by every order built
// while its own queue stays the same.
using QueueOrder = std::map<std::string, ProjectOrder>;
// An order made whole from plain lists.
std::shared_ptr<const QueueOrder> MakeQueueOrder(
    std::map<std::string, std::vector<std::string>> lists);

struct QueueState {
  Quota default_quota;
  // Projects' own quotas.
  std::map<std::string, Quota> quotas;
  std::map<std::string, ProjectUsage> usage;
  // Queued job ids per project, in admission order. Every state built while the queue's
  // membership stays the same shares one (AdmissionQueue keeps it): publishing the state after a
  // turn that changed only usage copies no job id, however long the queue. When a job joins or
  // leaves, only its project's list is built again; the others' lists are shared.
  std::shared_ptr<const QueueOrder> order = std::make_shared<const QueueOrder>();
  // The whole demand of each project's first queued job.
  std::map<std::string, Res> head_demand;
  // Schedulable nodes and what is free on each.
  // Empty while no job is queued (nothing to explain).
  std::vector<NodeFree> free;
  // Nodes with a maintenance window (maintenance.h).
  std::vector<NodeWindow> windows;
  // Waiting jobs that preempt others, with the jobs they preempt (victims.h).
  std::map<std::string, std::set<std::string>> preempting;
  // The cluster's reservation, if a job holds one (reservation.h).
  std::optional<Reservation> reservation;

  // The effective quota of a project (its own, or the default).
  Quota QuotaOf(const std::string& project) const;
  ProjectUsage UsageOf(const std::string& project) const;
  // The project's queued job ids, in admission order (none: empty).
  const std::vector<std::string>& OrderOf(const std::string& project) const;
};

// The most `project` may borrow from its cohort in all, per resource, what it borrows already
// included: the least of its borrowing limit and what the other members leave unused, less what
// other projects already borrow and less what a member needs back for its own first waiting job
// (the owner reclaims by taking it back first).
// `head_demand` gives a project's first queued job's demand, if it has one.
Res Borrowable(const std::string& project, const Quota& quota,
               const std::map<std::string, Quota>& quotas,
               const std::map<std::string, ProjectUsage>& usage,
               const std::function<std::optional<Res>(const std::string&)>& head_demand);

// Why the queued job is not running: every blocker, as of `now`, in a fixed order (BACKOFF,
// STOPPING, QUOTA..., NO_NODES or CAPACITY). PRIORITY is added by QueueStatusOf.
std::vector<v1::Blocker> BlockersOf(const QueueState& state, const QueuedJob& job, absl::Time now);

// Blockers, place in line and the jobs ahead of it.
v1::QueueStatus QueueStatusOf(const QueueState& state, const QueuedJob& job, absl::Time now);

// A project with its effective quota (`default_quota` when it has none of its own), usage,
// queued jobs and what it borrows. The one place a v1::Project is built (its quota mapped by
// model_proto's QuotaToProto).
v1::Project MakeProject(const std::string& name, const Quota& quota, bool default_quota,
                        const ProjectUsage& usage, int32_t queued_jobs);
// The same from a QueueState.
v1::Project ProjectOf(const QueueState& state, const std::string& name);

}  // namespace trainctl::sched
