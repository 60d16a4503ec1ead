// Elastic pools: the facts about a job's world that shrinking and growing it needs, as pure
// functions over the spec and the job (the lifecycle's part is ElasticPools, elastic_pools.h).
//
// A pool with `elastic: {minReplicas: N}` may run with fewer replicas than its replicaCount, never
// fewer than N. A replica left out is REMOVED: it holds nothing and has rank -1. The world is the
// replicas that are not REMOVED; their ranks are 0..WorldSize-1 in the job's replica order (pool
// order, then index), so a shrink or a grow renumbers the ranks after the change, and names never
// change. Pool 0 (the primary, rank 0) is never elastic.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "model/model.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// scheduling.elasticWait when unset, for a job with an elastic pool.
inline constexpr int64_t kDefaultElasticWaitMs = 60'000;

// Whether any pool of `spec` is elastic.
bool IsElastic(const v1::JobSpec& spec);

// The pool at `path` (workerPools[i]) of index `index`: OK, or INVALID_ARGUMENT naming the field
// ("workerPools[1].elastic.minReplicas must be 1..4 (the pool's replicaCount), got 0").
absl::Status ValidateElastic(const std::string& path, int index, const v1::WorkerPool& pool);
// The job-wide rules: an elastic job restarts as a gang (restartScope GANG), and
// scheduling.elasticWait is 0s..24h and set only for jobs with an elastic pool.
absl::Status ValidateElasticJob(const v1::JobSpec& spec);

// The fewest replicas the pool named `pool` may run with: its minReplicas when elastic, else its
// replicaCount (0 for an unknown pool).
int32_t MinReplicasOf(const v1::JobSpec& spec, const std::string& pool);

// The replicas of the job that are not REMOVED: WORLD_SIZE.
int32_t WorldSize(const Job& job);
// The same, per pool name.
std::map<std::string, int32_t> PoolSizes(const Job& job);

// Gives the replicas that are not REMOVED ranks 0.. in their order, and REMOVED ones -1.
void RenumberRanks(Job* job);

}  // namespace trainctl::sched
