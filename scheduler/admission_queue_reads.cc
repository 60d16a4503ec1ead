// AdmissionQueue's reads (admission_queue.h): the published queue state the API and blockers read,
// a project's queued jobs in order, the cluster's capacity, and each project's weight, share and
// view. They change nothing the admission pass decides on.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/model_proto.h"
#include "scheduler/admission_queue.h"
#include "scheduler/dependencies.h"
#include "scheduler/maintenance.h"
#include "scheduler/node_registry.h"
#include "scheduler/topology.h"

namespace trainctl::sched {

std::shared_ptr<const QueueState> AdmissionQueue::State(const JobTable& jobs,
                                                        const NodeRegistry& nodes) const {
  auto state = std::make_shared<QueueState>();
  state->default_quota = default_quota_;
  state->quotas = quotas_;
  state->usage = usage_;
  state->preempting = preempting_;
  state->reservation = reservation_;
  if (order_ == nullptr || !order_stale_.empty()) {
    // Work that grows with the projects, and with the queues of those that changed only.
    auto order = std::make_shared<QueueOrder>();
    for (const auto& [project, q] : project_queues_) {
      ProjectOrder& ids = (*order)[project];
      if (order_ != nullptr && order_stale_.count(project) == 0) {
        auto kept = order_->find(project);
        if (kept != order_->end()) {
          ids = kept->second;
          continue;
        }
      }
      auto fresh = std::make_shared<std::vector<std::string>>();
      fresh->reserve(q.size());
      for (const QueueKey& key : q) fresh->push_back(std::get<3>(key));
      ids = std::move(fresh);
    }
    order_ = std::move(order);
    order_stale_.clear();
  }
  state->order = order_;
  for (const auto& [project, ids] : *order_) {
    state->head_demand[project] = DemandOf(*jobs.Find(ids->front()));
  }
  // The nodes explain why a queued job waits: a picture with no job queued needs none of them,
  // and building it then costs nothing that grows with the cluster.
  if (!queue_.empty()) {
    state->windows = WindowsOf(nodes);
    state->free = nodes.FreeNodes();
  }
  return state;
}

std::vector<std::string> AdmissionQueue::Queued(const std::string& project, int32_t limit) const {
  std::vector<std::string> ids;
  if (project.empty()) {
    for (const QueueKey& key : queue_) {
      if (static_cast<int32_t>(ids.size()) >= limit) break;
      ids.push_back(std::get<3>(key));
    }
    return ids;
  }
  auto q = project_queues_.find(project);
  if (q == project_queues_.end()) return ids;
  for (const QueueKey& key : q->second) {
    if (static_cast<int32_t>(ids.size()) >= limit) break;
    ids.push_back(std::get<3>(key));
  }
  return ids;
}

const Res& AdmissionQueue::ClusterCapacity(const NodeRegistry& nodes) {
  if (capacity_version_ != nodes.shape_version() || capacity_version_ == 0) {
    capacity_ = Res();
    for (const NodeFree& n : nodes.IdleNodes()) capacity_ += n.free;
    capacity_version_ = nodes.shape_version();
  }
  return capacity_;
}

double AdmissionQueue::WeightOf(const std::string& project) const {
  return QuotaOrDefault(project).WeightOr1();
}

double AdmissionQueue::ShareOf(const std::string& project) const {
  return fair_share_.Share(project, WeightOf(project), capacity_);
}

v1::Project AdmissionQueue::ProjectView(const std::string& project) const {
  auto q = project_queues_.find(project);
  v1::Project view =
      MakeProject(project, EffectiveQuota(project), quotas_.count(project) == 0, UsageOf(project),
                  q == project_queues_.end() ? 0 : static_cast<int32_t>(q->second.size()));
  if (std::optional<uint32_t> uid = uids_.Find(project)) view.set_replica_uid(*uid);
  // Fair share as of the last pass (its accrual, and the cluster it counted).
  if (const UsageLedger* ledger = fair_share_.Find(project)) {
    v1::FairShareUsage* usage = view.mutable_usage();
    usage->set_gpu_seconds(ledger->gpu_seconds);
    usage->set_cpu_seconds(ledger->cpu_seconds);
    usage->set_memory_mb_seconds(ledger->memory_mb_seconds);
    usage->set_share(ShareOf(project));
  }
  return view;
}

std::set<std::string> AdmissionQueue::Projects() const {
  std::set<std::string> names;
  for (const auto& [name, q] : quotas_) names.insert(name);
  for (const auto& [name, q] : project_queues_) names.insert(name);
  for (const auto& [name, u] : usage_) names.insert(name);
  // A project that used the cluster is listed while its fair-share usage lasts.
  for (const auto& [name, ledger] : fair_share_.ledgers()) names.insert(name);
  return names;
}

}  // namespace trainctl::sched
