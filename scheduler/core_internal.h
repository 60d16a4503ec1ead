// Small helpers shared by the files of the scheduler core (core*.cc). Not part of its interface.
#pragma once

#include <cctype>
#include <string>

#include "scheduler/model.h"

namespace trainctl::sched::internal {

// A replica in one of these states holds its node's resources.
inline bool HoldsResources(v1::ReplicaState s) {
  return s == v1::REPLICA_STATE_STARTING || s == v1::REPLICA_STATE_RUNNING ||
         s == v1::REPLICA_STATE_STOPPING || s == v1::REPLICA_STATE_RESTARTING;
}

// A replica in one of these states has (or may have) a live process.
inline bool IsLive(v1::ReplicaState s) {
  return s == v1::REPLICA_STATE_STARTING || s == v1::REPLICA_STATE_RUNNING;
}

inline const v1::WorkerPool* PoolOf(const v1::Job& job, const v1::Replica& r) {
  for (const v1::WorkerPool& p : job.spec().worker_pools()) {
    if (p.name() == r.pool()) return &p;
  }
  return nullptr;
}

inline Res NeedOf(const v1::Job& job, const v1::Replica& r) {
  const v1::WorkerPool* p = PoolOf(job, r);
  return p == nullptr ? Res{} : Res::FromProto(p->resources());
}

// "JobRunning" for JOB_STATE_RUNNING: the event type of entering a state.
inline std::string EventTypeOf(v1::JobState state) {
  std::string name = ShortName(state);
  for (size_t i = 1; i < name.size(); ++i) name[i] = static_cast<char>(tolower(name[i]));
  return "Job" + name;
}

inline v1::Resources ToProto(const Res& r) {
  v1::Resources out;
  out.set_cpu(r.cpu);
  out.set_memory_mb(r.memory_mb);
  out.set_gpus(static_cast<int32_t>(r.gpus));
  return out;
}

// The index of `r` in job.replicas(). REQUIRES: r is one of them.
inline int IndexOf(const v1::Job& job, const v1::Replica& r) {
  for (int i = 0; i < job.replicas_size(); ++i) {
    if (&job.replicas(i) == &r) return i;
  }
  return -1;
}

// Exit status 0, no signal, no launch failure: the run did what it should.
inline bool IsCleanExit(const v1::ReplicaExited& x) {
  return x.has_exit_code() && x.exit_code() == 0 && !x.has_signal() && !x.launch_failed();
}

inline v1::Attempt* CurrentAttemptOf(v1::Job* job) {
  return job->attempts().empty() ? nullptr : job->mutable_attempts(job->attempts_size() - 1);
}

}  // namespace trainctl::sched::internal
