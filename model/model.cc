#include "model/model.h"

#include "common/run_id.h"

namespace trainctl::sched {

const Replica* Job::FindReplica(const std::string& name) const {
  for (const Replica& r : replicas) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

Replica* Job::FindReplica(const std::string& name) {
  for (Replica& r : replicas) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string Job::RunIdOf(const Replica& r) const {
  return MakeRunId(id, current_attempt(), r.name, r.restart_count);
}

Res DemandOf(const Job& job) {
  Res total;
  for (const Replica& r : job.replicas) total += r.need;
  return total;
}

const v1::WorkerPool* PoolOf(const Job& job, const Replica& r) {
  for (const v1::WorkerPool& p : job.spec.worker_pools()) {
    if (p.name() == r.pool) return &p;
  }
  return nullptr;
}

bool HoldsResources(v1::ReplicaState s) {
  return s == v1::REPLICA_STATE_STARTING || s == v1::REPLICA_STATE_RUNNING ||
         s == v1::REPLICA_STATE_STOPPING || s == v1::REPLICA_STATE_RESTARTING ||
         s == v1::REPLICA_STATE_SETTLING || s == v1::REPLICA_STATE_CHECKING;
}

bool IsLive(v1::ReplicaState s) {
  return s == v1::REPLICA_STATE_STARTING || s == v1::REPLICA_STATE_RUNNING;
}

bool IsAdmitted(v1::JobState s) {
  return s == v1::JOB_STATE_PENDING || s == v1::JOB_STATE_RUNNING || s == v1::JOB_STATE_CANCELLING;
}

bool IsLive(v1::JobState s) { return s == v1::JOB_STATE_PENDING || s == v1::JOB_STATE_RUNNING; }

v1::SchedulerMessage Command::Take() && {
  v1::SchedulerMessage out = std::move(message);
  if (pool != nullptr && out.has_launch()) {
    v1::LaunchReplica* launch = out.mutable_launch();
    launch->mutable_argv()->MergeFrom(pool->argv());
    // trainctl's variables win over the pool's on a clash: insert adds only what is missing.
    launch->mutable_env()->insert(pool->env().begin(), pool->env().end());
  }
  pool.reset();
  return out;
}

void AddEvent(Effects* fx, absl::Time now, const Job* job, const std::string& replica,
              const std::string& node, const std::string& type, const std::string& reason) {
  Event e;
  e.time_ms = ToMs(now);
  if (job != nullptr) {
    e.job_id = job->id;
    e.attempt = job->current_attempt();
  }
  e.replica = replica;
  e.node = node;
  e.type = type;
  e.reason = reason;
  fx->events.push_back(std::move(e));
}

std::string MakeRunId(const std::string& job_id, int32_t attempt, const std::string& replica,
                      int32_t restart) {
  return trainctl::MakeRunId(RunIdParts{job_id, attempt, replica, restart});
}

bool ParseRunId(const std::string& run_id, std::string* job_id, int32_t* attempt,
                std::string* replica, int32_t* restart) {
  std::optional<RunIdParts> parts = SplitRunId(run_id);
  if (!parts) return false;
  *job_id = parts->job_id;
  *attempt = parts->attempt;
  *replica = parts->replica_name;
  *restart = parts->restart;
  return true;
}

}  // namespace trainctl::sched
