// AdmissionQueue's preemption search (admission_queue.h): for a job the pass finds blocked, the
// victims that would let it start (victims.h decides who may be one and which set), and the
// bookkeeping of preemptions under way — the waiting job does not search again while its victims
// checkpoint and stop, and the nodes they hold are its own until they are gone.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "scheduler/admission_queue.h"
#include "scheduler/job_lifecycle.h"
#include "scheduler/node_registry.h"
#include "scheduler/victims.h"

namespace trainctl::sched {

namespace {

bool Reclaims(const Quota& q) {
  return q.reclaim == v1::RECLAIM_POLICY_LOWER_PRIORITY || q.reclaim == v1::RECLAIM_POLICY_ANY;
}

bool PreemptsWithin(const Quota& q) {
  return q.preempt_within_project == v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY;
}

// Whether `demand` fits the quota's own limits with `usage` (no borrowing).
bool FitsOwnQuota(const Quota& q, const ProjectUsage& usage, const Res& demand) {
  const Res used = usage.used;
  if (q.gpus && used.gpus + demand.gpus > *q.gpus) return false;
  if (q.cpu && used.cpu + demand.cpu > *q.cpu + 1e-9) return false;
  if (q.memory_mb && used.memory_mb + demand.memory_mb > *q.memory_mb) return false;
  if (q.max_running_jobs && usage.running_jobs + 1 > *q.max_running_jobs) return false;
  return true;
}

bool AnyBorrowed(const Res& r) { return r.gpus > 0 || r.cpu > 1e-9 || r.memory_mb > 0; }

// Whether any replica of `job` still holds resources on a connected node.
bool StillHolds(const Job& job, const NodeRegistry& nodes) {
  for (const Replica& r : job.replicas) {
    if (!HoldsResources(r.state)) continue;
    const Node* node = nodes.Find(r.node);
    if (node != nullptr && node->connected) return true;
  }
  return false;
}

}  // namespace

bool AdmissionQueue::AnyPreemptionPolicy() const {
  if (Reclaims(default_quota_) || PreemptsWithin(default_quota_)) return true;
  for (const auto& [project, q] : quotas_) {
    if (Reclaims(q) || PreemptsWithin(q)) return true;
  }
  return false;
}

std::set<std::string> AdmissionQueue::PreemptionsUnderWay(const JobTable& jobs,
                                                          const NodeRegistry& nodes,
                                                          std::vector<std::string>* ready) {
  if (!preempting_known_) {
    // After a restart: the victims say whom they make room for.
    preempting_known_ = true;
    for (const std::string& id : jobs.active()) {
      const Job* job = jobs.Find(id);
      // A requeue (no preemptor) makes room for nobody in particular.
      if (job != nullptr && JobLifecycle::Preempting(*job) && !job->preemption->by.empty()) {
        preempting_[job->preemption->by].insert(id);
      }
    }
  }
  std::set<std::string> reserved;
  for (auto it = preempting_.begin(); it != preempting_.end();) {
    const Job* waiting = jobs.Find(it->first);
    bool under_way = false;
    for (const std::string& id : it->second) {
      const Job* victim = jobs.Find(id);
      if (victim == nullptr) continue;
      if (!JobLifecycle::Preempting(*victim) && !StillHolds(*victim, nodes)) continue;
      under_way = true;
      for (const Replica& r : victim->replicas) {
        if (HoldsResources(r.state)) reserved.insert(r.node);
      }
    }
    if (under_way && waiting != nullptr && waiting->state == v1::JOB_STATE_QUEUED) {
      ++it;
      continue;
    }
    if (!under_way && waiting != nullptr && waiting->state == v1::JOB_STATE_QUEUED) {
      ready->push_back(it->first);
    }
    it = preempting_.erase(it);
    ++version_;
  }
  return reserved;
}

std::optional<AdmissionPlan::Preemption> AdmissionQueue::SearchVictims(
    const Job& job, const Quota& quota, const std::vector<ReplicaDemand>& demands,
    const std::map<std::string, ProjectUsage>& usage, const Res& borrowable,
    PlacementPipeline* pipeline, const JobTable& jobs, const std::set<std::string>& taken,
    const std::set<std::string>& reserved, absl::Time now) const {
  if (!Reclaims(quota) && !PreemptsWithin(quota)) return std::nullopt;
  const Res demand = DemandOf(job);
  auto usage_of = [&usage](const std::string& project) {
    auto it = usage.find(project);
    return it == usage.end() ? ProjectUsage{} : it->second;
  };
  Preemptor preemptor;
  preemptor.job_id = job.id;
  preemptor.project = job.project;
  preemptor.priority = job.priority;
  preemptor.cohort = quota.cohort;
  preemptor.reclaim = quota.reclaim;
  preemptor.within_project = quota.preempt_within_project;
  preemptor.fits_own_quota = FitsOwnQuota(quota, usage_of(job.project), demand);

  // Only the active jobs of projects that may hold a victim: its own, when it preempts within
  // it; borrowers of its cohort, when it reclaims and fits its own quota (WhyNotVictim says why
  // no other job is one). A pass costs its blocked jobs times these, not times every active job.
  struct Source {
    const std::string* project;
    const Quota* quota;
    bool borrower;  // it borrows from its cohort now: its jobs go first
    bool beyond;    // a borrower beyond its fair share of the cohort: before the others
  };
  std::vector<Source> projects;
  if (PreemptsWithin(quota)) {
    const Res used = usage_of(job.project).used;
    const bool borrower = AnyBorrowed(Borrowed(quota, used));
    projects.push_back({&job.project, &quota, borrower,
                        borrower && BeyondCohortShare(job.project, quota, quotas_, used)});
  }
  if (Reclaims(quota) && !quota.cohort.empty() && preemptor.fits_own_quota) {
    for (const auto& [project, u] : usage) {
      if (project == job.project) continue;
      const Quota* cq = &QuotaOrDefault(project);
      if (cq->cohort != quota.cohort || !AnyBorrowed(Borrowed(*cq, u.used))) continue;
      projects.push_back({&project, cq, true, BeyondCohortShare(project, *cq, quotas_, u.used)});
    }
  }
  std::vector<VictimCandidate> candidates;
  for (const Source& p : projects) {
    for (const auto& [id, c] : jobs.ActiveOf(*p.project)) {
      if (!IsLive(c->state) || c->attempts.empty()) continue;
      VictimCandidate v;
      v.job_id = c->id;
      v.project = c->project;
      v.cohort = p.quota->cohort;
      v.priority = c->priority;
      v.borrower = p.borrower;
      v.beyond_fair_share = p.beyond;
      v.preemptible = c->policy.preemptible;
      v.being_preempted = JobLifecycle::Preempting(*c) || taken.count(c->id) != 0;
      v.started = c->attempts.back().start_time.value_or(now);
      v.min_runtime = absl::Milliseconds(c->policy.min_runtime_ms);
      if (!MayPreempt(preemptor, v, now)) continue;
      // Work lost: what it holds, times the time since its last checkpoint or progress report.
      absl::Time since = v.started;
      if (c->last_checkpoint) since = std::max(since, *c->last_checkpoint);
      for (const Replica& r : c->replicas) {
        if (!HoldsResources(r.state)) continue;
        v.holds += r.need;
        v.allocations.push_back({r.node, ReplicaDemandOf(r)});
        if (r.last_progress_time) since = std::max(since, *r.last_progress_time);
      }
      const double seconds = absl::ToDoubleSeconds(std::max(now - since, absl::ZeroDuration()));
      v.gpu_seconds_lost = static_cast<double>(v.holds.gpus) * seconds;
      v.cpu_seconds_lost = v.holds.cpu * seconds;
      candidates.push_back(std::move(v));
    }
  }
  if (candidates.empty()) return std::nullopt;

  GangRequest request{&job.spec, &demands, ExpectedEnd(job.spec, now),
                      MaintenanceCheck::kAvoidFirst, &reserved};
  request.excluded = &job.excluded_nodes;  // victims whose room is only there free nothing for it
  auto fits = [&](const std::vector<const VictimCandidate*>& victims) {
    // By quota: the project's own victims give back what they hold.
    ProjectUsage own = usage_of(job.project);
    std::vector<Allocation> released;
    for (const VictimCandidate* v : victims) {
      if (v->project == job.project) {
        own.used -= v->holds;
        own.running_jobs--;
      }
      released.insert(released.end(), v->allocations.begin(), v->allocations.end());
    }
    if (!EvaluateQuota(job.project, quota, own, demand, borrowable).fits_now) return false;
    // By placement: the pipeline's what-if, without copying the cluster.
    return pipeline->CheckGangWithout(request, released).ok();
  };
  std::optional<std::vector<std::string>> chosen = ChooseVictims(candidates, fits);
  if (!chosen) return std::nullopt;

  AdmissionPlan::Preemption out;
  out.job_id = job.id;
  out.victims = *std::move(chosen);
  std::string needs =
      absl::StrFormat("%g cpu, %d MiB, %d gpus", demand.cpu, demand.memory_mb, demand.gpus);
  bool own_project = true;
  for (const std::string& v : out.victims) own_project &= jobs.Find(v)->project == job.project;
  out.reason = absl::StrCat(
      "job ", job.id, " (priority ", job.priority, ") of project ", job.project, " needs ", needs,
      own_project ? ": its project preempts lower priority (preemptWithinProject)"
                  : ": its project takes back quota it lent to its cohort (reclaim)");
  return out;
}

}  // namespace trainctl::sched
