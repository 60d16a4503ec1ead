// Core: projects, quotas, cohorts and why queued jobs wait.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/core_internal.h"
#include "scheduler/job_validation.h"

namespace trainctl::sched {

using namespace internal;

namespace {

// A retrying (re-dispatched) job gives up after this long in the queue (R17).
constexpr int64_t kRetryQueueTimeoutMs = 30 * 60'000;

}  // namespace

// --- Queue bookkeeping -----------------------------------------------------------------------

void Core::Enqueue(const v1::Job& job) {
  queue_.insert(KeyOf(job));
  project_queues_[job.project()].insert(KeyOf(job));
  if (int64_t deadline = QueueDeadline(job); deadline > 0) {
    queue_deadlines_.insert({deadline, job.id()});
  }
  schedule_needed_ = true;
}

void Core::Dequeue(const v1::Job& job) {
  queue_.erase(KeyOf(job));
  auto it = project_queues_.find(job.project());
  if (it != project_queues_.end()) {
    it->second.erase(KeyOf(job));
    if (it->second.empty()) project_queues_.erase(it);
  }
  if (int64_t deadline = QueueDeadline(job); deadline > 0) {
    queue_deadlines_.erase({deadline, job.id()});
  }
  stockout_since_.erase(job.id());
  blocked_since_.erase(job.id());
}

int64_t Core::QueueDeadline(const v1::Job& job) const {
  int64_t timeout = DurationToMs(job.spec().scheduling().queue_timeout());
  if (timeout <= 0 && !job.attempts().empty()) timeout = kRetryQueueTimeoutMs;
  if (timeout <= 0) return 0;
  int64_t since = TimestampToMs(job.queue_time());
  if (since <= 0) since = TimestampToMs(job.create_time());
  return since + timeout;
}

// --- Usage -----------------------------------------------------------------------------------

v1::Quota Core::QuotaOf(const std::string& project) const {
  auto it = quotas_.find(project);
  v1::Quota q = it != quotas_.end() ? it->second : options_.default_quota;
  q.set_project(project);
  return q;
}

Res Core::DemandOf(const v1::Job& job) const {
  Res total;
  for (const v1::Replica& r : job.replicas()) total += NeedOf(job, r);
  return total;
}

std::vector<ReplicaDemand> Core::DemandsOf(const v1::Job& job) const {
  std::vector<ReplicaDemand> demands;
  for (const v1::Replica& r : job.replicas()) demands.push_back({r.name(), NeedOf(job, r)});
  return demands;
}

std::map<std::string, ProjectUsage> Core::ProjectUsages() const {
  std::map<std::string, ProjectUsage> usages;
  for (const auto& [id, job_ptr] : active_) {
    const v1::Job& job = *job_ptr;
    ProjectUsage& u = usages[job.project()];
    for (const v1::Replica& r : job.replicas()) {
      if (HoldsResources(r.state())) u.used += NeedOf(job, r);
    }
    if (job.state() == v1::JOB_STATE_PENDING || job.state() == v1::JOB_STATE_RUNNING ||
        job.state() == v1::JOB_STATE_CANCELLING) {
      u.running_jobs++;
    }
  }
  return usages;
}

std::vector<NodeFree> Core::FreeNodes() const {
  std::map<std::string, NodeUsage> usage = Usage();
  std::vector<NodeFree> free;
  for (const auto& [name, node] : nodes_) {
    if (!Schedulable(node)) continue;
    Res f = node.allocatable;
    f -= usage[name].used;
    free.push_back({name, f});
  }
  return free;
}

Res Core::Borrowable(const std::string& project, const v1::Quota& quota,
                     const std::map<std::string, ProjectUsage>& usages) const {
  Res none;
  if (quota.cohort().empty()) return none;
  const Res limit = Res::FromProto(quota.borrowing_limit());
  if (limit.cpu <= 0 && limit.memory_mb <= 0 && limit.gpus <= 0) return none;
  // What the other members leave unused, less what others already borrow, less what a member
  // needs back for a waiting job of its own (the owner reclaims by taking it back first).
  Res lendable;
  Res lent;
  for (const auto& [name, q] : quotas_) {
    if (name == project || q.cohort() != quota.cohort()) continue;
    auto u = usages.find(name);
    const Res used = u == usages.end() ? Res{} : u->second.used;
    Res unused = Unused(q, used);
    auto waiting = project_queues_.find(name);
    if (waiting != project_queues_.end() && !waiting->second.empty()) {
      unused -= DemandOf(jobs_.at(std::get<3>(*waiting->second.begin())));
    }
    lendable.cpu += std::max(0.0, unused.cpu);
    lendable.memory_mb += std::max<int64_t>(0, unused.memory_mb);
    lendable.gpus += std::max<int64_t>(0, unused.gpus);
    lent += Borrowed(q, used);
  }
  auto own = usages.find(project);
  const Res already = Borrowed(quota, own == usages.end() ? Res{} : own->second.used);
  Res b;
  b.cpu = std::max(0.0, std::min(limit.cpu - already.cpu, lendable.cpu - lent.cpu));
  b.memory_mb = std::max<int64_t>(
      0, std::min(limit.memory_mb - already.memory_mb, lendable.memory_mb - lent.memory_mb));
  b.gpus = std::max<int64_t>(0, std::min(limit.gpus - already.gpus, lendable.gpus - lent.gpus));
  return b;
}

// --- Why a job waits -------------------------------------------------------------------------

std::vector<v1::Blocker> Core::BlockersOf(const v1::Job& job,
                                          const std::map<std::string, ProjectUsage>& usages,
                                          const std::vector<NodeFree>& free, int64_t now) const {
  std::vector<v1::Blocker> out;
  auto add = [&out](const std::string& kind, const std::string& message) {
    v1::Blocker b;
    b.set_kind(kind);
    b.set_message(message);
    out.push_back(std::move(b));
  };
  const int64_t not_before = TimestampToMs(job.next_attempt_time());
  if (not_before > now) {
    add("BACKOFF", absl::StrCat("BACKOFF: attempt ", job.attempts_size() + 1,
                                " waits for its retry backoff until ", FormatRfc3339(not_before)));
  }
  for (const v1::Replica& r : job.replicas()) {
    if (HoldsResources(r.state())) {
      add("STOPPING", absl::StrCat("STOPPING: attempt ", job.attempts_size(),
                                   "'s replicas are still stopping"));
      break;
    }
  }
  const v1::Quota quota = QuotaOf(job.project());
  auto u = usages.find(job.project());
  QuotaEval qe = EvaluateQuota(job.project(), quota, u == usages.end() ? ProjectUsage{} : u->second,
                               DemandOf(job), Borrowable(job.project(), quota, usages));
  for (v1::Blocker& b : qe.blockers) out.push_back(std::move(b));
  if (free.empty()) {
    add("NO_NODES", "NO_NODES: no node is connected and READY");
  } else {
    absl::StatusOr<std::vector<std::string>> placed = PlaceGang(DemandsOf(job), free);
    if (!placed.ok()) {
      add("CAPACITY", absl::StrCat("CAPACITY: ", placed.status().message()));
    }
  }
  return out;
}

v1::Job Core::WithQueueStatus(const v1::Job& job, int64_t now) const {
  return WithQueueStatus(std::vector<const v1::Job*>{&job}, now)[0];
}

std::vector<v1::Job> Core::WithQueueStatus(const std::vector<const v1::Job*>& jobs,
                                           int64_t now) const {
  std::vector<v1::Job> out;
  out.reserve(jobs.size());
  bool any_queued = false;
  for (const v1::Job* job : jobs) any_queued |= job->state() == v1::JOB_STATE_QUEUED;
  if (!any_queued) {
    for (const v1::Job* job : jobs) out.push_back(*job);
    return out;
  }
  // Computed once for the whole batch: usage, free space, and every queued job's place.
  const std::map<std::string, ProjectUsage> usages = ProjectUsages();
  const std::vector<NodeFree> free = FreeNodes();
  std::map<std::string, std::vector<std::string>> order;  // project -> ids in admission order
  for (const auto& [project, q] : project_queues_) {
    for (const QueueKey& key : q) order[project].push_back(std::get<3>(key));
  }
  for (const v1::Job* job : jobs) {
    out.push_back(*job);
    if (job->state() != v1::JOB_STATE_QUEUED) continue;
    v1::QueueStatus* qs = out.back().mutable_queue_status();
    for (v1::Blocker& b : BlockersOf(*job, usages, free, now)) *qs->add_blockers() = std::move(b);
    const std::vector<std::string>& ids = order[job->project()];
    const int32_t ahead =
        static_cast<int32_t>(std::find(ids.begin(), ids.end(), job->id()) - ids.begin());
    for (int32_t i = 0; i < ahead && i < 10; ++i) qs->add_jobs_ahead(ids[i]);
    qs->set_position(ahead + 1);
    qs->set_jobs_ahead_count(ahead);
    if (ahead > 0) {
      v1::Blocker* b = qs->add_blockers();
      b->set_kind("PRIORITY");
      b->set_jobs(ahead);
      b->set_message(absl::StrCat("PRIORITY: ", ahead, ahead == 1 ? " job" : " jobs", " ahead in ",
                                  job->project()));
    }
  }
  return out;
}

std::vector<v1::Job> Core::ListQueue(const std::string& project, int32_t limit, int64_t now) const {
  std::vector<const v1::Job*> jobs;
  for (const QueueKey& key : queue_) {
    if (static_cast<int32_t>(jobs.size()) >= limit) break;
    const v1::Job& job = jobs_.at(std::get<3>(key));
    if (project.empty() || job.project() == project) jobs.push_back(&job);
  }
  return WithQueueStatus(jobs, now);
}

// --- Projects and quotas ---------------------------------------------------------------------

v1::Project Core::MakeProject(const std::string& name,
                              const std::map<std::string, ProjectUsage>& usages) const {
  v1::Project p;
  p.set_name(name);
  *p.mutable_quota() = QuotaOf(name);
  p.set_default_quota(quotas_.count(name) == 0);
  auto u = usages.find(name);
  const ProjectUsage usage = u == usages.end() ? ProjectUsage{} : u->second;
  *p.mutable_in_use() = ToProto(usage.used);
  p.set_running_jobs(usage.running_jobs);
  auto q = project_queues_.find(name);
  p.set_queued_jobs(q == project_queues_.end() ? 0 : static_cast<int32_t>(q->second.size()));
  *p.mutable_borrowed() = ToProto(Borrowed(p.quota(), usage.used));
  return p;
}

absl::StatusOr<v1::Project> Core::SetQuota(const v1::Quota& quota, int64_t now, Effects* fx) {
  absl::Status valid = ValidateQuota(quota);
  if (!valid.ok()) return valid;
  quotas_[quota.project()] = quota;
  fx->quotas.insert(quota.project());
  AddEvent(
      fx, now, nullptr, "", "", "QuotaChanged",
      absl::StrCat("quota of project ", quota.project(), " set to ", quota.ShortDebugString()));
  schedule_needed_ = true;  // raising a quota admits waiting jobs at once
  return MakeProject(quota.project(), ProjectUsages());
}

const v1::Quota* Core::FindQuota(const std::string& project) const {
  auto it = quotas_.find(project);
  return it == quotas_.end() ? nullptr : &it->second;
}

absl::StatusOr<v1::Project> Core::GetProject(const std::string& name) const {
  if (!IsDnsLabel(name, 63)) {
    return absl::InvalidArgumentError(
        absl::StrCat("project must be 1..63 characters of a-z, 0-9 and '-'; got \"", name, "\""));
  }
  return MakeProject(name, ProjectUsages());
}

std::vector<v1::Project> Core::ListProjects() const {
  std::set<std::string> names;
  for (const auto& [name, q] : quotas_) names.insert(name);
  for (const auto& [name, q] : project_queues_) names.insert(name);
  for (const auto& [id, job] : active_) names.insert(job->project());
  const std::map<std::string, ProjectUsage> usages = ProjectUsages();
  std::vector<v1::Project> out;
  for (const std::string& name : names) out.push_back(MakeProject(name, usages));
  return out;
}

}  // namespace trainctl::sched
