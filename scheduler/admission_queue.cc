#include "scheduler/admission_queue.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/model_proto.h"
#include "scheduler/dependencies.h"
#include "scheduler/maintenance.h"
#include "scheduler/node_registry.h"
#include "scheduler/topology.h"

namespace trainctl::sched {
namespace {

// A retrying (re-dispatched) job gives up after this long in the queue (R17).
constexpr absl::Duration kRetryQueueTimeout = absl::Minutes(30);
// BEST_EFFORT_FIFO's starvation limit when the quota sets none.
constexpr absl::Duration kDefaultStarvationLimit = absl::Minutes(10);

// The key of idle_fits_ for a job with placement constraints or excluded nodes (shapes' keys
// start with "s"). Excluded nodes only grow: their number tells an answer from before the last.
std::string IdleFitKeyOfJob(const Job& job) {
  return job.excluded_nodes.empty() ? "j" + job.id
                                    : absl::StrCat("j", job.id, "/", job.excluded_nodes.size());
}

}  // namespace

// A job waits as a retry after a failed attempt; after a preemption it waits in its own place.
static bool WaitsAsRetry(const Job& job) {
  return !job.attempts.empty() && job.attempts.back().decision != Decision::kPreempt;
}

AdmissionQueue::QueueKey AdmissionQueue::KeyOf(const Job& job) {
  return {WaitsAsRetry(job) ? 0 : 1, -job.priority, job.create_time, job.id};
}

std::optional<absl::Duration> AdmissionQueue::QueueTimeoutOf(const Job& job) {
  absl::Duration timeout = absl::Milliseconds(job.policy.queue_timeout_ms);
  if (timeout <= absl::ZeroDuration() && WaitsAsRetry(job)) timeout = kRetryQueueTimeout;
  if (timeout <= absl::ZeroDuration()) return std::nullopt;
  return timeout;
}

std::optional<absl::Time> AdmissionQueue::DeadlineOf(const Job& job) {
  if (job.held) return std::nullopt;  // its queueTimeout counts from its release (Core::ReleaseJob)
  const std::optional<absl::Duration> timeout = QueueTimeoutOf(job);
  if (!timeout) return std::nullopt;
  return job.queue_time.value_or(job.create_time) + *timeout;
}

void AdmissionQueue::RestoreQuotas(std::vector<Quota> quotas) {
  ++version_;
  for (Quota& q : quotas) {
    std::string project = q.project;
    quotas_[project] = std::move(q);
  }
  pass_needed_ = true;
}

// --- Membership ----------------------------------------------------------------------------------

void AdmissionQueue::Enqueue(const Job& job) {
  ++version_;
  order_stale_.insert(job.project);
  const QueueKey key = KeyOf(job);
  queue_.insert(key);
  project_queues_[job.project].insert(key);
  if (std::optional<absl::Time> deadline = DeadlineOf(job)) {
    deadlines_.insert({*deadline, job.id});
  }
  pass_needed_ = true;
}

void AdmissionQueue::Dequeue(const Job& job) {
  ++version_;
  order_stale_.insert(job.project);
  const QueueKey key = KeyOf(job);
  queue_.erase(key);
  auto it = project_queues_.find(job.project);
  if (it != project_queues_.end()) {
    it->second.erase(key);
    if (it->second.empty()) project_queues_.erase(it);
  }
  if (std::optional<absl::Time> deadline = DeadlineOf(job)) deadlines_.erase({*deadline, job.id});
  stockout_since_.erase(job.id);
  blocked_since_.erase(job.id);
  idle_fits_.erase(IdleFitKeyOfJob(job));
  if (reservation_ && reservation_->job_id == job.id) DropReservation();
}

// --- Usage ---------------------------------------------------------------------------------------

void AdmissionQueue::Hold(const UsageKey& key, const Res& need, bool run,
                          absl::Duration queue_wait) {
  fair_share_.rollup().Hold(key, need, run, queue_wait);
  const std::string& project = key.project;
  ++version_;
  usage_[project].used += need;
  holders_[project]++;
}

void AdmissionQueue::Release(const UsageKey& key, const Res& need) {
  fair_share_.rollup().Release(key, need);
  const std::string& project = key.project;
  ++version_;
  ProjectUsage& u = usage_[project];
  u.used -= need;
  if (--holders_[project] <= 0) {
    holders_.erase(project);
    u.used = Res{};
    if (u.running_jobs <= 0) usage_.erase(project);
  }
}

void AdmissionQueue::Admitted(const std::string& project) {
  ++version_;
  usage_[project].running_jobs++;
}

void AdmissionQueue::Released(const std::string& project) {
  ++version_;
  ProjectUsage& u = usage_[project];
  if (--u.running_jobs <= 0 && holders_.count(project) == 0) usage_.erase(project);
}

// --- Quotas --------------------------------------------------------------------------------------

absl::Status AdmissionQueue::SetQuota(const Quota& quota, absl::Time now, Effects* fx) {
  // The message form: what ValidateQuota checks, and what the event shows.
  const v1::Quota message = QuotaToProto(quota);
  absl::Status valid = ValidateQuota(message);
  if (!valid.ok()) return valid;
  quotas_[quota.project] = quota;
  ++version_;
  fx->quotas.insert(quota.project);
  AddEvent(
      fx, now, nullptr, "", "", "QuotaChanged",
      absl::StrCat("quota of project ", quota.project, " set to ", message.ShortDebugString()));
  pass_needed_ = true;  // raising a quota admits waiting jobs at once
  return absl::OkStatus();
}

void AdmissionQueue::SetDefaultQuota(const Quota& quota, absl::Time now, Effects* fx) {
  default_quota_ = quota;
  default_quota_.project.clear();
  ++version_;
  const std::string shown = QuotaToProto(default_quota_).ShortDebugString();
  AddEvent(fx, now, nullptr, "", "", "DefaultQuotaChanged",
           absl::StrCat("the default quota, of every project without one of its own, set to ",
                        shown.empty() ? "unlimited" : shown));
  pass_needed_ = true;  // a raised default admits waiting jobs at once
}

const Quota* AdmissionQueue::FindQuota(const std::string& project) const {
  auto it = quotas_.find(project);
  return it == quotas_.end() ? nullptr : &it->second;
}

Quota AdmissionQueue::EffectiveQuota(const std::string& project) const {
  auto it = quotas_.find(project);
  Quota q = it != quotas_.end() ? it->second : default_quota_;
  q.project = project;
  return q;
}

// --- The pass ------------------------------------------------------------------------------------

AdmissionPlan AdmissionQueue::Pass(const JobTable& jobs, NodeRegistry* registry, absl::Time now,
                                   Timers* timers) {
  AdmissionPlan plan;
  // Usage accrues whether or not a pass is needed (fair_share.h).
  AccrueUsage(now);
  if (!pass_needed_) return plan;
  pass_needed_ = false;
  // Nothing waits: no need to index the nodes (work that grows with the cluster, every turn that
  // changed what a node holds).
  if (queue_.empty()) return plan;
  const NodeRegistry& nodes = *registry;
  std::map<std::string, ProjectUsage> usage = usage_;
  FreeIndex& free = registry->PassIndex();
  const std::vector<NodeWindow> windows = WindowsOf(nodes);  // maintenance.h
  // Windows are judged by the job's expected end if it started now (placement_pipeline.h).
  PlacementPipeline pipeline(&free, &windows);
  const std::string no_nodes = ReasonText(BlockerKind::kNoNodes, kNoNodesMissing);
  std::set<std::string> started;
  // Preemption (preemption_search.cc): the nodes victims still hold are their preemptors' alone;
  // victims chosen in this pass are not chosen again.
  const bool preemption = AnyPreemptionPolicy();
  std::set<std::string> reserved;
  std::vector<std::string> ready;  // preemptors whose victims are gone: they go first
  if (preemption || !preempting_.empty() || !preempting_known_) {
    reserved = PreemptionsUnderWay(jobs, nodes, &ready);
  }
  std::set<std::string> taken;
  // The nodes a job keeps off: preemption's, and the reservation's unless it backfills
  // (reservation.h): its timeout ends by the reservation's expected start.
  // Built again only when the reservation or preemption's nodes changed (both bump version_).
  std::set<std::string> fenced;
  std::optional<uint64_t> fenced_version;
  auto keep_off = [&](const Job& job) -> const std::set<std::string>* {
    if (!reservation_ || reservation_->job_id == job.id ||
        MayBackfill(*reservation_, LatestEnd(TimeoutClockOf(job), now))) {
      return &reserved;
    }
    if (fenced_version != version_) {
      fenced = reserved;
      fenced.insert(reservation_->nodes.begin(), reservation_->nodes.end());
      fenced_version = version_;
    }
    return &fenced;
  };
  // The first job in this pass's order that waited long enough for the reservation while another
  // job held it.
  const Job* candidate = nullptr;
  std::vector<ReplicaDemand> candidate_demands;
  // A project's first queued job that this pass has not started: what it needs back from its
  // cohort.
  auto head_demand = [&](const std::string& project) -> std::optional<Res> {
    auto q = project_queues_.find(project);
    if (q == project_queues_.end()) return std::nullopt;
    for (const QueueKey& key : q->second) {
      if (started.count(std::get<3>(key)) == 0) return DemandOf(*jobs.Find(std::get<3>(key)));
    }
    return std::nullopt;
  };
  auto set_reason = [&plan](const Job& job, const std::string& reason) {
    if (job.queue_reason != reason) plan.reasons.push_back({job.id, reason});
  };

  // Each project offers its jobs in order; across projects, retries (R17) first, then the
  // project with the lowest fair share (then the least held now, counting this pass's starts),
  // then the job's own key: priority, submission time (fair_share.h). With fair share off both
  // shares are 0.
  ClusterCapacity(nodes);
  // (share, weight) of each project offered, computed once per pass.
  std::map<std::string, std::pair<double, double>> shares;
  auto share_of = [&](const std::string& project) -> const std::pair<double, double>& {
    auto [it, inserted] = shares.try_emplace(project);
    if (inserted) it->second = {ShareOf(project), WeightOf(project)};
    return it->second;
  };
  // (retry first, share, share held now, next job's key, project)
  using Cursor = std::tuple<int32_t, double, double, QueueKey, std::string>;
  std::set<Cursor> round;
  auto offer = [&](const std::string& project, const QueueKey& key) {
    const auto& [share, weight] = share_of(project);
    auto u = usage.find(project);
    const double held =
        u == usage.end() ? 0 : fair_share_.AllocationShare(u->second.used, weight, capacity_);
    round.insert({std::get<0>(key), share, held, key, project});
  };
  for (const auto& [project, q] : project_queues_) offer(project, *q.begin());
  auto advance = [&](const std::string& project, const QueueKey& after) {
    const std::set<QueueKey>& q = project_queues_.at(project);
    auto next = q.upper_bound(after);
    if (next != q.end()) offer(project, *next);
  };
  // Preemptors whose victims have gone take the room first.
  for (const std::string& id : ready) {
    const Job* job = jobs.Find(id);
    if (job == nullptr || job->state != v1::JOB_STATE_QUEUED) continue;
    const Quota quota = EffectiveQuota(job->project);
    const Res demand = DemandOf(*job);
    if (!EvaluateQuota(job->project, quota, usage[job->project], demand,
                       Borrowable(job->project, quota, quotas_, usage, head_demand))
             .fits_now) {
      continue;
    }
    std::vector<ReplicaDemand> demands;
    for (const Replica& r : job->replicas) demands.push_back(ReplicaDemandOf(r));
    JobPlacement placed =
        pipeline.PlaceGang({&job->spec, &demands, ExpectedEnd(job->spec, now),
                            MaintenanceCheck::kAvoidFirst, &reserved, &job->excluded_nodes});
    if (!placed.ok()) continue;
    stockout_since_.erase(job->id);
    plan.starts.push_back({job->id, std::move(placed.nodes)});
    started.insert(job->id);
    usage[job->project].used += demand;
    usage[job->project].running_jobs++;
  }

  while (!round.empty()) {
    const QueueKey key = std::get<3>(*round.begin());
    const std::string project = std::get<4>(*round.begin());
    round.erase(round.begin());
    const Job& job = *jobs.Find(std::get<3>(key));
    if (started.count(job.id) != 0) {
      advance(project, key);
      continue;
    }
    // Its victims are still checkpointing or stopping: the room they hold is its own.
    if (auto it = preempting_.find(job.id); it != preempting_.end()) {
      set_reason(job, ReasonText(BlockerKind::kPreempting,
                                 absl::StrCat("waiting for ", absl::StrJoin(it->second, ", "),
                                              " to checkpoint and stop")));
      advance(project, key);
      continue;
    }
    // Held, or waiting on a dependency: it holds back nobody (dependencies.h).
    if (const QuietWait wait = WaitsWithoutBlocking(job); !wait.text.empty()) {
      set_reason(job, wait.text);
      advance(project, key);
      continue;
    }
    // A retry waits for its backoff and for the last attempt's replicas to be gone; it holds
    // back nobody meanwhile.
    if (job.next_attempt_time && *job.next_attempt_time > now) {
      timers->WakeAt(*job.next_attempt_time);
      advance(project, key);
      continue;
    }
    bool stopping = false;
    for (const Replica& r : job.replicas) {
      const Node* node = nodes.Find(r.node);
      stopping |= HoldsResources(r.state) && node != nullptr && node->connected;
    }
    if (stopping) {
      advance(project, key);
      continue;
    }
    const Quota quota = EffectiveQuota(project);
    const Res demand = DemandOf(job);
    const Res borrowable = Borrowable(project, quota, quotas_, usage, head_demand);
    QuotaEval qe = EvaluateQuota(project, quota, usage[project], demand, borrowable);
    if (!qe.fits_ever) {  // can never run under this quota: waits without blocking others
      set_reason(job, qe.blockers[0].message());
      advance(project, key);
      continue;
    }
    std::string reason;
    // Blocked by capacity, not by its quota (a reservation is only for such a job).
    bool capacity = false;
    std::vector<ReplicaDemand> demands;
    if (qe.fits_now) {
      for (const Replica& r : job.replicas) demands.push_back(ReplicaDemandOf(r));
      const std::set<std::string>* off = keep_off(job);
      GangRequest request{&job.spec, &demands, ExpectedEnd(job.spec, now),
                          MaintenanceCheck::kAvoidFirst, off};
      request.excluded = &job.excluded_nodes;
      JobPlacement placed = pipeline.PlaceGang(request);
      if (placed.ok()) {  // its places are taken in `free`
        if (reservation_ && reservation_->job_id == job.id) DropReservation();
        stockout_since_.erase(job.id);
        plan.starts.push_back({job.id, std::move(placed.nodes)});
        started.insert(job.id);
        usage[project].used += demand;
        usage[project].running_jobs++;
        advance(project, key);
        continue;
      }
      if (placed.kind == PlacementKind::kMaintenance) {
        // Only hosts with a maintenance window before its expected end have room: it waits.
        set_reason(job, placed.Reason());
        advance(project, key);
        continue;
      }
      GangRequest fenced_off = request;
      fenced_off.reserved = &reserved;
      if (off == &fenced && pipeline.CheckGang(fenced_off).ok()) {
        // It fits only on the reservation's nodes, and would not end before its job starts.
        set_reason(job, ReservationReason(*reservation_));
        if (quota.queueing_strategy == v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO) {
          advance(project, key);  // a later job of its project may backfill
        }
        continue;
      }
      const std::string& missing = placed.missing;
      if (IsStockout(job, demands, missing, nodes, now, timers, &plan)) {
        // Too large for the healthy cluster even when idle: waiting for other jobs would not
        // help, so it holds back nobody.
        set_reason(job, free.empty()
                            ? no_nodes
                            : absl::StrCat(placed.Reason(), " (even with the cluster idle)"));
        advance(project, key);
        continue;
      }
      reason = free.empty() ? no_nodes : placed.Reason();
      capacity = !free.empty();
    } else {
      reason = qe.blockers[0].message();
      if (reservation_ && reservation_->job_id == job.id) {
        DropReservation();  // its quota holds it now, not the cluster
      }
    }
    // Blocked by capacity or quota: would preempting others let it start?
    if (preemption) {
      if (demands.empty()) {
        for (const Replica& r : job.replicas) demands.push_back(ReplicaDemandOf(r));
      }
      std::optional<AdmissionPlan::Preemption> found = SearchVictims(
          job, quota, demands, usage, borrowable, &pipeline, jobs, taken, reserved, now);
      if (found) {
        std::set<std::string>& victims = preempting_[job.id];
        for (const std::string& v : found->victims) {
          taken.insert(v);
          victims.insert(v);
          for (const Replica& r : jobs.Find(v)->replicas) {
            if (HoldsResources(r.state)) reserved.insert(r.node);
          }
        }
        set_reason(job, ReasonText(BlockerKind::kPreempting,
                                   absl::StrCat("preempting ", absl::StrJoin(found->victims, ", "),
                                                ": ", found->reason)));
        plan.preemptions.push_back(std::move(*found));
        ++version_;
        advance(project, key);
        continue;
      }
    }
    // A job ahead of it in this pass's order waits for the reservation that was given up in
    // this pass: it takes it at the pass's end.
    if (capacity && (reservation_ || candidate == nullptr)) {
      if (!Reserve(job, demands, jobs, free, windows, reserved, nodes.shape_version(), now,
                   timers) &&
          candidate == nullptr) {
        candidate = &job;
        candidate_demands = demands;
      }
      if (reservation_ && reservation_->job_id == job.id) {
        reason = absl::StrCat(reason, "; ", ReservedText(*reservation_));
      }
    }
    set_reason(job, reason);
    if (quota.queueing_strategy == v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO) {
      auto [since, inserted] = blocked_since_.insert({job.id, now});
      const absl::Duration limit = quota.starvation_limit.value_or(kDefaultStarvationLimit);
      if (now - since->second < limit) {
        timers->WakeAt(since->second + limit);
        advance(project, key);  // later jobs may go past it, for now
      }
    }
  }
  // The reservation's job started in this pass: the first job in this pass's order that waited
  // long enough takes it over.
  if (!reservation_ && candidate != nullptr) {
    Reserve(*candidate, candidate_demands, jobs, free, windows, reserved, nodes.shape_version(),
            now, timers);
  }
  return plan;
}

bool AdmissionQueue::IsStockout(const Job& job, const std::vector<ReplicaDemand>& demands,
                                const std::string& missing, const NodeRegistry& nodes,
                                absl::Time now, Timers* timers, AdmissionPlan* plan) {
  // Only a cluster too small even when idle is a stockout; waiting behind running jobs is not.
  // Whether the idle cluster holds the job changes only with the nodes themselves.
  if (FitsIdle(job, demands, nodes)) {
    stockout_since_.erase(job.id);
    return false;
  }
  auto [it, inserted] = stockout_since_.insert({job.id, now});
  const absl::Time deadline = it->second + absl::Milliseconds(job.policy.placement_timeout_ms);
  if (now < deadline) {
    timers->WakeAt(deadline);
    return true;
  }
  stockout_since_.erase(it);
  plan->stockouts.push_back({job.id, nodes.IdleNodes().empty() ? kNoNodesMissing : missing});
  return true;
}

bool AdmissionQueue::FitsIdle(const Job& job, const std::vector<ReplicaDemand>& demands,
                              const NodeRegistry& nodes) {
  if (idle_fits_version_ != nodes.shape_version()) {
    idle_fits_.clear();
    idle_fits_version_ = nodes.shape_version();
  }
  // Without placement constraints, the answer follows from the demands alone: their resources
  // and ports, exactly (the bits of the cpu count, not a rounding of it). Else it is the job's.
  std::string key;
  if (HasPlacementConstraints(job.spec) || !job.excluded_nodes.empty()) {
    key = IdleFitKeyOfJob(job);
  } else {
    key = "s";
    for (const ReplicaDemand& d : demands) {
      const double cpu = d.need.cpu;
      key.append(reinterpret_cast<const char*>(&cpu), sizeof(cpu));
      absl::StrAppend(&key, ",", d.need.memory_mb, ",", d.need.gpus, ",", d.ports, ";");
    }
  }
  auto [fit, unknown] = idle_fits_.try_emplace(std::move(key));
  if (unknown) {
    FreeIndex idle(nodes.IdleNodes());
    PlacementPipeline pipeline(&idle, nullptr);  // no windows: the cluster as it could be
    GangRequest request{&job.spec, &demands};
    request.excluded = &job.excluded_nodes;
    fit->second = pipeline.CheckGang(request).ok();
  }
  return fit->second;
}

std::vector<std::string> AdmissionQueue::ExpiredDeadlines(absl::Time now) const {
  std::vector<std::string> out;
  for (const auto& [deadline, id] : deadlines_) {
    if (deadline > now) break;
    out.push_back(id);
  }
  return out;
}

}  // namespace trainctl::sched
