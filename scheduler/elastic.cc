#include "scheduler/elastic.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::sched {

bool IsElastic(const v1::JobSpec& spec) {
  for (const v1::WorkerPool& p : spec.worker_pools()) {
    if (p.has_elastic()) return true;
  }
  return false;
}

absl::Status ValidateElastic(const std::string& path, int index, const v1::WorkerPool& pool) {
  if (!pool.has_elastic()) return absl::OkStatus();
  if (index == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".elastic is not allowed: pool 0 holds the primary replica, which never leaves"));
  }
  const int32_t min = pool.elastic().min_replicas();
  if (min < 1 || min > pool.replica_count()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".elastic.minReplicas must be 1..",
                                                   pool.replica_count(),
                                                   " (the pool's replicaCount), got ", min));
  }
  return absl::OkStatus();
}

absl::Status ValidateElasticJob(const v1::JobSpec& spec) {
  const v1::Scheduling& s = spec.scheduling();
  if (!IsElastic(spec)) {
    if (s.has_elastic_wait()) {
      return absl::InvalidArgumentError(
          "scheduling.elasticWait applies only to jobs with an elastic pool "
          "(workerPools[].elastic)");
    }
    return absl::OkStatus();
  }
  if (s.restart_scope() == v1::RESTART_SCOPE_REPLICA) {
    return absl::InvalidArgumentError(
        "scheduling.restartScope must be GANG for a job with an elastic pool: a change of the "
        "world size restarts every replica");
  }
  return ValidateProtoDuration("scheduling.elasticWait", s.elastic_wait(), 86400);
}

int32_t MinReplicasOf(const v1::JobSpec& spec, const std::string& pool) {
  for (const v1::WorkerPool& p : spec.worker_pools()) {
    if (p.name() != pool) continue;
    return p.has_elastic() ? p.elastic().min_replicas() : p.replica_count();
  }
  return 0;
}

int32_t WorldSize(const Job& job) {
  int32_t n = 0;
  for (const Replica& r : job.replicas) n += r.state != v1::REPLICA_STATE_REMOVED;
  return n;
}

std::map<std::string, int32_t> PoolSizes(const Job& job) {
  std::map<std::string, int32_t> sizes;
  for (const Replica& r : job.replicas) {
    if (r.state != v1::REPLICA_STATE_REMOVED) sizes[r.pool]++;
  }
  return sizes;
}

void RenumberRanks(Job* job) {
  int32_t rank = 0;
  for (Replica& r : job->replicas) r.rank = r.state == v1::REPLICA_STATE_REMOVED ? -1 : rank++;
}

}  // namespace trainctl::sched
