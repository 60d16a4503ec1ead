#include "scheduler/core.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/job_validation.h"
#include "scheduler/maintenance.h"
#include "scheduler/placement.h"
#include "scheduler/retry_engine.h"

namespace trainctl::sched {

Core::Core(CoreOptions options)
    : options_(std::move(options)),
      jobs_(options_.id_seed),
      nodes_(options_.nodes),
      queue_(options_.default_quota, options_.replica_uid_range, options_.fair_share,
             options_.reservation_after),
      lifecycle_(&jobs_, &nodes_, &queue_, &timers_, options_.skew_tolerance),
      pulls_(&jobs_),
      stragglers_(options_.stragglers) {
  lifecycle_.fabric().set_timeout(options_.fabric_check_timeout);
}

void Core::Restore(std::vector<Job> jobs, std::vector<Node> nodes,
                   const std::vector<ReplicaRun>& runs, std::vector<Quota> quotas) {
  queue_.RestoreQuotas(std::move(quotas));
  nodes_.Restore(std::move(nodes));
  // Jobs an older trainctld stored carry no checkpoint root: the one their directory matches now.
  for (Job& job : jobs) {
    if (job.checkpoint_root.empty() && !job.checkpoint_dir.empty()) {
      job.checkpoint_root = CheckpointRootOf(job.checkpoint_dir, CheckpointRoots());
    }
    // Straggler rates live in memory (stragglers.h): judged afresh from new reports.
    for (Replica& r : job.replicas) r.straggler.clear();
  }
  jobs_.Restore(std::move(jobs), runs);
  for (const auto& [id, job] : jobs_.all()) {
    requests_.Add(job);
    if (job.state == v1::JOB_STATE_QUEUED) dependencies_.Add(job);
    if (job.array && !IsTerminal(job.state)) open_arrays_.insert(id);
  }
  lifecycle_.Restore();
}

// --- API callers -------------------------------------------------------------------------------

absl::StatusOr<const Job*> Core::SubmitJob(const v1::JobSpec& spec_in, absl::Time now, Effects* fx,
                                           const std::string& creator,
                                           const CreateRequestKey& request,
                                           const std::map<std::string, v1::JobState>& stored_ends) {
  if (absl::Status id = ValidateRequestId(request.id); !id.ok()) return id;
  if (!request.id.empty()) {
    if (const RequestIndex::Entry* seen = requests_.Find(creator, request.id, now)) {
      const Job* first = jobs_.Find(seen->job_id);
      if (first != nullptr && seen->spec_hash == request.spec_hash) return first;
      if (first != nullptr) {
        return RequestIdTaken(request.id, seen->job_id);
      }
    }
  }
  absl::Status valid = ValidateJobSpec(spec_in);
  if (!valid.ok()) return valid;
  TC_ASSIGN_OR_RETURN(std::vector<v1::DependencyStatus> dependencies,
                      ResolveDependencies(spec_in, jobs_, stored_ends));
  v1::JobSpec spec = spec_in;
  if (!spec.checkpoint_dir().empty()) {
    std::vector<std::string> roots = options_.checkpoint_allowed_roots;
    if (roots.empty()) roots.push_back(options_.checkpoint_root);
    absl::StatusOr<std::string> dir = CheckpointDirUnder(spec.checkpoint_dir(), roots);
    if (!dir.ok()) return dir.status();
    spec.set_checkpoint_dir(*dir);
  }
  ApplyDefaults(&spec);
  if (!spec.scheduling().has_settle_window()) {
    *spec.mutable_scheduling()->mutable_settle_window() =
        MsToDuration(ToMs(options_.settle_window));
  }
  for (int p = 0; p < spec.worker_pools_size(); ++p) {
    absl::Status fits =
        CheckFitsLargestNode(absl::StrCat("workerPools[", p, "].resources"),
                             Res::FromProto(spec.worker_pools(p).resources()), nodes_.nodes());
    if (!fits.ok()) return fits;
  }
  // Last: nothing fails after it, so no uid is given to a project whose job was refused.
  TC_ASSIGN_OR_RETURN(const ProjectUids::Allocation uid, queue_.uids().Allocate(spec.project()));
  if (uid.fresh) fx->project_uids.insert(spec.project());
  const Job* job = lifecycle_.Submit(std::move(spec), options_.checkpoint_root, now, fx);
  if (Job* mutable_job = jobs_.Find(job->id)) {
    mutable_job->checkpoint_root = CheckpointRootOf(job->checkpoint_dir, CheckpointRoots());
    mutable_job->creator = creator;
    mutable_job->request_id = request.id;
    mutable_job->request_hash = request.spec_hash;
    requests_.Add(*mutable_job);
    mutable_job->dependencies = std::move(dependencies);
    dependencies_.Add(*mutable_job);
    if (mutable_job->spec.has_array()) MakeArray(mutable_job, now, fx);
    // A dependency that ended as its condition can never accept: decided at once.
    if (const v1::DependencyStatus* never = NeverMet(mutable_job->dependencies)) {
      DependencyNeverMet(mutable_job, *never, now, fx);
    }
  }
  return job;
}

std::vector<std::string> Core::CheckpointRoots() const {
  std::vector<std::string> roots = options_.checkpoint_allowed_roots;
  roots.push_back(options_.checkpoint_root);
  return roots;
}

absl::StatusOr<const Job*> Core::CancelJob(const std::string& id, absl::Time now, Effects* fx) {
  Job* job = jobs_.Find(id);
  int32_t index = 0;
  if (Job* array = job == nullptr ? UnstartedElement(id, &index) : nullptr) {
    return UnstartedOp(array, index, UnstartedAction::kCancel, "", now, fx);
  }
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  if (job->array) return CancelArray(job, now, fx);
  lifecycle_.Cancel(job, now, fx);
  return job;
}

absl::StatusOr<const Job*> Core::ResizeJob(const std::string& id, const std::string& actor,
                                           absl::Time now, Effects* fx) {
  Job* job = jobs_.Find(id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  TC_RETURN_IF_ERROR(lifecycle_.RequestGrow(job, actor, now, fx));
  return job;
}

absl::Status Core::CheckEnded(const std::string& id) const {
  const Job* job = jobs_.Find(id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  if (!IsTerminal(job->state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", EnumShortName(job->state),
                     "; only a job that ended can be deleted (cancel it first)"));
  }
  for (const Replica& r : job->replicas) {
    if (HoldsResources(r.state)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", id, " is ", EnumShortName(job->state), " but its replica ", r.name, " is still ",
          EnumShortName(r.state), "; delete it once that replica ended"));
    }
  }
  return absl::OkStatus();
}

absl::Status Core::DeleteJob(const std::string& id, const std::string& why, absl::Time now,
                             Effects* fx) {
  if (int32_t index = 0; UnstartedElement(id, &index) != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("element ", id,
                     " has not started, so it has nothing to delete; `trainctl "
                     "cancel ",
                     id, "` keeps it from starting"));
  }
  if (absl::Status ended = CheckEnded(id); !ended.ok()) return ended;
  const Job* job = jobs_.Find(id);
  if (!why.empty()) {
    AddEvent(fx, now, nullptr, "", "", "JobDeleted",
             absl::StrCat("job ", id, " (project ", job->spec.project(), ", ",
                          EnumShortName(job->state), ") deleted: ", why));
  }
  // Rows of it this turn changed are not written back.
  fx->jobs.erase(id);
  for (auto it = fx->attempts.lower_bound({id, std::numeric_limits<int32_t>::min()});
       it != fx->attempts.end() && it->first == id;) {
    it = fx->attempts.erase(it);
  }
  fx->deleted_jobs.push_back(id);
  return ForgetJob(id);
}

absl::Status Core::DeleteStoredJob(const v1::Job& stored, const std::string& why, absl::Time now,
                                   Effects* fx) {
  if (jobs_.Find(stored.id()) != nullptr) return DeleteJob(stored.id(), why, now, fx);
  if (!IsTerminal(stored.state())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", stored.id(), " is ", EnumShortName(stored.state()),
        " in the database but not held by the scheduler; restart trainctld to load it"));
  }
  if (!why.empty()) {
    AddEvent(fx, now, nullptr, "", "", "JobDeleted",
             absl::StrCat("job ", stored.id(), " (project ", stored.project(), ", ",
                          EnumShortName(stored.state()), ") deleted: ", why));
  }
  fx->deleted_jobs.push_back(stored.id());
  return absl::OkStatus();
}

absl::Status Core::ForgetJob(const std::string& id) {
  if (absl::Status ended = CheckEnded(id); !ended.ok()) return ended;
  requests_.Remove(*jobs_.Find(id));
  jobs_.Erase(id);
  return absl::OkStatus();
}

absl::StatusOr<v1::Project> Core::SetQuota(const Quota& quota, absl::Time now, Effects* fx) {
  absl::Status set = queue_.SetQuota(quota, now, fx);
  if (!set.ok()) return set;
  return queue_.ProjectView(quota.project);
}

void Core::SetDefaultQuota(const Quota& quota, absl::Time now, Effects* fx) {
  queue_.SetDefaultQuota(quota, now, fx);
}

absl::Status Core::ReportProgress(const std::string& job_id, const std::string& replica,
                                  int64_t step, bool checkpoint, absl::Time now, Effects* fx) {
  Job* job = jobs_.Find(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  Replica* r = job->FindReplica(replica);
  if (r == nullptr) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no replica \"", replica, "\""));
  }
  if (r->state != v1::REPLICA_STATE_RUNNING) {
    return absl::FailedPreconditionError(
        absl::StrCat("replica ", replica, " is ", EnumShortName(r->state), ", not RUNNING"));
  }
  lifecycle_.Progress(job, r, now, step, now, fx);
  if (step > 0) stragglers_.Step(*job, *r, step, now);
  if (checkpoint) lifecycle_.Checkpointed(job, now, now, fx);
  return absl::OkStatus();
}

// --- Operators ---------------------------------------------------------------------------------

absl::StatusOr<v1::Node> Core::CordonNode(const std::string& name, const std::string& reason,
                                          absl::Time now, Effects* fx) {
  absl::Status done = nodes_.Cordon(name, reason, now, fx);
  if (!done.ok()) return done;
  return GetNode(name);
}

absl::StatusOr<v1::Node> Core::UncordonNode(const std::string& name, absl::Time now, Effects* fx) {
  absl::Status done = nodes_.Uncordon(name, now, fx);
  if (!done.ok()) return done;
  return GetNode(name);
}

absl::StatusOr<v1::Node> Core::DrainNode(const std::string& name, const std::string& reason,
                                         absl::Duration deadline, absl::Time now, Effects* fx) {
  absl::StatusOr<std::string> why = nodes_.Drain(name, reason, deadline, now, fx);
  if (!why.ok()) return why.status();
  std::optional<absl::Duration> grace;  // unset: each job's stopGracePeriod
  if (deadline > absl::ZeroDuration()) grace = deadline;
  lifecycle_.MoveReplicasOff(name, MoveCause::kDrain, *why, grace, /*node_gone=*/false, now, fx);
  CheckNodes(now, fx);  // an empty node is drained at once
  return GetNode(name);
}

absl::StatusOr<v1::Node> Core::SetNodeMaintenance(const v1::SetNodeMaintenanceRequest& req,
                                                  absl::Time now, Effects* fx) {
  absl::StatusOr<std::optional<v1::MaintenanceWindow>> window = WindowFromRequest(req);
  if (!window.ok()) return window.status();
  absl::Status done = nodes_.SetMaintenance(req.name(), *window, now, fx);
  if (!done.ok()) return done;
  CheckNodes(now, fx);  // a window that already began drains the node at once
  return GetNode(req.name());
}

absl::StatusOr<v1::Node> Core::RevokeNode(const std::string& name, const std::string& reason,
                                          absl::Time now, Effects* fx) {
  absl::StatusOr<std::string> why = nodes_.Revoke(name, reason, now, fx);
  if (!why.ok()) return why.status();
  lifecycle_.MoveReplicasOff(name, MoveCause::kLost, *why, std::nullopt, /*node_gone=*/true, now,
                             fx);
  return GetNode(name);
}

absl::StatusOr<v1::Node> Core::DeleteNode(const std::string& name, const std::string& reason,
                                          absl::Time now, Effects* fx) {
  for (const std::string& id : jobs_.ActiveIds()) {
    const Job* job = jobs_.Find(id);
    for (const Replica& r : job->replicas) {
      if (r.node != name || (!IsLive(r.state) && !HoldsResources(r.state))) continue;
      return absl::FailedPreconditionError(
          absl::StrCat("node ", name, " still has replica ", r.name, " of job ", id,
                       "; drain it first (trainctl node drain ", name, ")"));
    }
  }
  return nodes_.Delete(name, reason, now, fx);
}

// --- Agents ------------------------------------------------------------------------------------

void Core::AgentRefused(const std::string& node, const std::string& why, absl::Time now,
                        Effects* fx) {
  nodes_.Refused(node, why, now, fx);
}

v1::RegisterAck Core::AgentRegistered(const v1::Register& reg, absl::Time now, Effects* fx) {
  nodes_.Register(reg, now, fx);
  lifecycle_.Reconcile(reg, now, fx);
  // A notice the agent may not have had (trainctld stopped after deciding a preemption and before
  // the notice left): sent again; the agent delivers each notice once.
  for (const std::string& id : jobs_.ActiveIds()) {
    Job* job = jobs_.Find(id);
    if (!JobLifecycle::Preempting(*job)) continue;
    for (const Replica& r : job->replicas) {
      if (r.node == reg.node() && r.state == v1::REPLICA_STATE_RUNNING) {
        lifecycle_.SendNotices(job, now, fx);
        break;
      }
    }
  }
  if (reg.has_maintenance()) MaintenanceReported(reg.node(), reg.maintenance(), now, fx);
  v1::RegisterAck ack;
  ack.set_heartbeat_interval_ms(static_cast<int32_t>(ToMs(options_.heartbeat_interval)));
  ack.set_lost_timeout_ms(ToMs(options_.nodes.lost_timeout));
  ack.set_fence_after_ms(ToMs(FenceAfter(options_.nodes.lost_timeout)));
  ack.set_fence_grace_ms(ToMs(FenceMargin(options_.nodes.lost_timeout)));
  return ack;
}

void Core::AgentDisconnected(const std::string& node, absl::Time now, Effects* fx) {
  nodes_.Disconnect(node, now, fx);
}

void Core::Heartbeat(const std::string& node, absl::Time now, Effects* fx) {
  nodes_.Heartbeat(node, now, fx);
}

void Core::MaintenanceReported(const std::string& node, const v1::MaintenanceReport& report,
                               absl::Time now, Effects* fx) {
  nodes_.MaintenanceReported(node, report, now, fx);
  CheckNodes(now, fx);  // a window that already began drains the node at once
}

void Core::CheckReported(const std::string& node, const v1::CheckRun& run, absl::Time now,
                         Effects* fx) {
  const NodeRegistry::CheckOutcome out = nodes_.ApplyCheckRun(node, run, now, fx);
  if (run.passed() || run.phase() != "periodic" || !out.isolated) return;
  lifecycle_.MoveReplicasOff(
      node, MoveCause::kUnhealthy,
      absl::StrCat("node ", node, " failed its periodic check: ", FailedItems(run)), std::nullopt,
      /*node_gone=*/false, now, fx);
}

void Core::ReplicaStarted(const std::string& node, const v1::ReplicaStarted& started,
                          absl::Time now, Effects* fx) {
  auto [job, r] = jobs_.CurrentRun(started.run_id());
  if (job == nullptr) return;  // stale or duplicate report
  if (r->node != node) {
    return nodes_.IgnoredReport(node, started.run_id(), r->node, now, fx);
  }
  lifecycle_.Started(job, r, started, now, fx);
}

void Core::ReplicaExited(const std::string& node, const v1::ReplicaExited& exited, absl::Time now,
                         Effects* fx) {
  // The host's verdict counts even for a stale run: every host that failed is isolated (R16).
  if (exited.has_checks()) nodes_.ApplyCheckRun(node, exited.checks(), now, fx);
  auto [job, r] = jobs_.CurrentRun(exited.run_id());
  if (job != nullptr && r->node != node) {
    return nodes_.IgnoredReport(node, exited.run_id(), r->node, now, fx);
  }
  // A run already ended (or waiting the settle window) is reported again: a duplicate.
  if (job == nullptr || IsTerminal(r->state) || r->state == v1::REPLICA_STATE_SETTLING) return;
  lifecycle_.RecordExit(job, r, exited, now, fx);
  // A stop trainctl asked for (a move, a gang restart, the job's end) is not a failure.
  if (lifecycle_.FinishStop(job, r, exited, now, fx)) return;
  Failure failure;
  failure.report = exited;
  if (lifecycle_.StopKindOf(*job, *r, exited) == JobLifecycle::StopKind::kForHang) {
    failure.kind = Failure::Kind::kHung;
  } else if (exited.node_shutdown()) {
    // The agent is going away (systemd stop, host maintenance): no new work on its node until it
    // registers again; the retry engine moves the replica at once.
    nodes_.MarkShuttingDown(node, now, fx);
  }
  lifecycle_.EndRun(job, r, failure, now, fx);
}

// --- Time and placement ------------------------------------------------------------------------

void Core::CheckNodes(absl::Time now, Effects* fx) {
  // LOST now; their replicas move only once their agents have fenced them (node_health.h).
  nodes_.DetectLost(now, fx);
  for (const NodeRegistry::Lost& lost : nodes_.DueMoves(now, fx)) {
    lifecycle_.MoveReplicasOff(lost.node, MoveCause::kLost, lost.why, std::nullopt,
                               /*node_gone=*/true, now, fx);
  }
  CheckMaintenance(now, fx);
  nodes_.FinishDrains(now, fx);
}

void Core::CheckMaintenance(absl::Time now, Effects* fx) {
  nodes_.EndMaintenance(now, fx);
  for (const NodeRegistry::Lost& drained : nodes_.StartMaintenance(now, fx)) {
    lifecycle_.MoveReplicasOff(drained.node, MoveCause::kDrain, drained.why, std::nullopt,
                               /*node_gone=*/false, now, fx);
  }
  const absl::Time next = nodes_.NextMaintenanceChange(now);
  if (next != absl::InfiniteFuture()) timers_.WakeAt(next);
}

void Core::Tick(absl::Time now, Effects* fx) {
  requests_.Expire(now);
  CheckNodes(now, fx);
  if (timers_.TakeDue(now)) queue_.Wake();
  const std::vector<std::string> expired = queue_.ExpiredDeadlines(now);
  if (!expired.empty()) {
    const std::shared_ptr<const QueueState> state = QueueSnapshot();
    for (const std::string& id : expired) {
      Job* job = jobs_.Find(id);
      const absl::Time since = job->queue_time.value_or(job->create_time);
      std::vector<std::string> why;
      for (const v1::Blocker& b : BlockersOf(*state, QueuedJobOf(*job), now)) {
        why.push_back(b.message());
      }
      const bool retry = !job->attempts.empty();
      const JobError error = QueueTimeoutError(now - since, *AdmissionQueue::QueueTimeoutOf(*job),
                                               retry, absl::StrJoin(why, "; "));
      if (retry) {
        AddEvent(fx, now, job, "", "", "JobQueueTimeout", "error,exiting: " + error.message);
      }
      lifecycle_.End(job, v1::JOB_STATE_FAILED, error, error.message, now, fx);  // dequeues it
    }
  }
  lifecycle_.Tick(now, fx);
  stragglers_.Check(&jobs_, now, fx, [&](Job* job, Replica* r, double ratio, bool tell) {
    return ReplaceStraggler(&lifecycle_, job, r, ratio, tell, now, fx);
  });
}

size_t Core::Schedule(absl::Time now, Effects* fx) {
  SettleDependencies(now, fx);
  return StartAdmitted(PlanAdmissions(now), now, fx);
}

AdmissionPlan Core::PlanAdmissions(absl::Time now) {
  if (nodes_.TakeChanged()) queue_.Wake();
  return queue_.Pass(jobs_, &nodes_, now, &timers_);
}

size_t Core::StartAdmitted(const AdmissionPlan& plan, absl::Time now, Effects* fx) {
  for (UsageLedger& row : queue_.fair_share().DueRows(now)) {
    const double share = queue_.ShareOf(row.project);
    fx->tally.fair_shares.push_back({row, share});
    fx->usage_ledgers.push_back(std::move(row));
  }
  // The accounting rows the same accrual charged (usage_rollup.h).
  UsageRollup& rollup = queue_.fair_share().rollup();
  for (UsageHour& row : rollup.DueRows(now)) fx->usage_hours.push_back(std::move(row));
  for (const auto& [project, added] : rollup.TakeAdded()) {
    UsageAdded& sum = fx->tally.usage_added[project];
    sum.gpu_seconds += added.gpu_seconds;
    sum.cpu_seconds += added.cpu_seconds;
    sum.memory_mb_seconds += added.memory_mb_seconds;
  }
  for (const AdmissionPlan::Stockout& s : plan.stockouts) {
    Job* job = jobs_.Find(s.job_id);
    const RetryDecision d = DecideOnStockout(*job, s.missing);
    fx->tally.failures.push_back({d.failure_class, d.action});
    lifecycle_.ApplyStockout(job, d, now, fx);
  }
  for (const AdmissionPlan::Start& start : plan.starts) {
    Job* job = jobs_.Find(start.job_id);
    fx->tally.admissions.push_back(
        {job->project, now - job->queue_time.value_or(job->create_time)});
    lifecycle_.StartAttempt(job, start.nodes, now, fx);
  }
  for (const AdmissionPlan::Preemption& p : plan.preemptions) {
    const Job* by = jobs_.Find(p.job_id);
    for (const std::string& victim : p.victims) {
      lifecycle_.Preempt(jobs_.Find(victim), *by, p.reason, now, fx);
    }
  }
  for (const auto& [id, reason] : plan.reasons) {
    lifecycle_.SetQueueReason(jobs_.Find(id), reason, now, fx);
  }
  SettleDependencies(now, fx);  // jobs this turn ended (a stockout's failure)
  return plan.starts.size();
}

// --- Reads -------------------------------------------------------------------------------------

absl::StatusOr<v1::Project> Core::GetProject(const std::string& name) const {
  if (!IsDnsLabel(name, 63)) {
    return absl::InvalidArgumentError(
        absl::StrCat("project must be 1..63 characters of a-z, 0-9 and '-'; got \"", name, "\""));
  }
  return queue_.ProjectView(name);
}

std::vector<v1::Project> Core::ListProjects() const {
  std::vector<v1::Project> out;
  for (const std::string& name : queue_.Projects()) out.push_back(queue_.ProjectView(name));
  return out;
}

std::vector<v1::Job> Core::ListQueue(const std::string& project, int32_t limit,
                                     absl::Time now) const {
  const std::shared_ptr<const QueueState> state = QueueSnapshot();
  std::vector<v1::Job> out;
  for (const std::string& id : queue_.Queued(project, limit)) {
    const Job& job = *jobs_.Find(id);
    out.push_back(ToProto(job));
    *out.back().mutable_queue_status() = QueueStatusOf(*state, QueuedJobOf(job), now);
  }
  return out;
}

namespace {

void MarkReserved(const Reservation* reservation, v1::Node* node) {
  if (reservation == nullptr || !reservation->Holds(node->name())) return;
  v1::NodeReservation* r = node->mutable_reservation();
  r->set_job_id(reservation->job_id);
  if (reservation->expected_start) {
    *r->mutable_expected_start_time() = ToProtoTime(*reservation->expected_start);
  }
}

}  // namespace

absl::StatusOr<v1::Node> Core::GetNode(const std::string& name) const {
  absl::StatusOr<v1::Node> node = nodes_.View(name);
  if (node.ok()) MarkReserved(queue_.reservation(), &*node);
  return node;
}

std::vector<v1::Node> Core::ListNodes() const {
  std::vector<v1::Node> views = nodes_.Views();
  for (v1::Node& node : views) MarkReserved(queue_.reservation(), &node);
  return views;
}

v1::Job Core::View(const Job& job, absl::Time now) const {
  v1::Job out = ToProto(job);
  if (job.state == v1::JOB_STATE_QUEUED && !job.array) {
    *out.mutable_queue_status() = QueueStatusOf(*QueueSnapshot(), QueuedJobOf(job), now);
  }
  return out;
}

absl::Status Core::CheckUsage() const {
  std::map<std::string, NodeRegistry::NodeUsage> by_node;
  std::map<std::string, ProjectUsage> by_project;
  for (const auto& [id, job] : jobs_.all()) {
    if (IsAdmitted(job.state)) by_project[job.project].running_jobs++;
    for (const Replica& r : job.replicas) {
      if (!HoldsResources(r.state)) continue;
      by_node[r.node].used += r.need;
      by_node[r.node].replicas++;
      by_project[job.project].used += r.need;
    }
  }
  auto same = [](const Res& a, const Res& b) {
    return std::abs(a.cpu - b.cpu) < 1e-6 && a.memory_mb == b.memory_mb && a.gpus == b.gpus;
  };
  std::set<std::string> node_names;
  for (const auto& [name, u] : by_node) node_names.insert(name);
  for (const auto& [name, n] : nodes_.nodes()) node_names.insert(name);
  for (const std::string& name : node_names) {
    const NodeRegistry::NodeUsage kept = nodes_.UsageOf(name);
    const NodeRegistry::NodeUsage counted = by_node[name];
    if (kept.replicas != counted.replicas || !same(kept.used, counted.used)) {
      return absl::InternalError(absl::StrCat("node ", name, " holds ", kept.replicas,
                                              " replicas by its count, ", counted.replicas,
                                              " by the jobs"));
    }
  }
  if (absl::Status ports = lifecycle_.binding().CheckPorts(jobs_); !ports.ok()) return ports;
  if (absl::Status devices = lifecycle_.binding().CheckDevices(jobs_); !devices.ok())
    return devices;
  std::set<std::string> projects = queue_.Projects();
  for (const auto& [name, u] : by_project) projects.insert(name);
  for (const std::string& name : projects) {
    const ProjectUsage kept = queue_.UsageOf(name);
    const ProjectUsage counted = by_project[name];
    if (kept.running_jobs != counted.running_jobs || !same(kept.used, counted.used)) {
      return absl::InternalError(
          absl::StrCat("project ", name, " runs ", kept.running_jobs, " jobs holding ",
                       kept.used.gpus, " gpus by its count, ", counted.running_jobs,
                       " jobs holding ", counted.used.gpus, " gpus by the jobs"));
    }
  }
  return absl::OkStatus();
}

}  // namespace trainctl::sched
