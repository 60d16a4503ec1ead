// CheckInvariants: one pass over the core's jobs and nodes (see invariants.h).
#include "scheduler/invariants.h"

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/job_states.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {
namespace {

absl::Status Broken(const std::string& what) {
  return absl::InternalError(absl::StrCat("invariant broken: ", what));
}

absl::Status CheckJob(const Core& core, const Job& job, std::map<std::string, Res>* used) {
  const std::string name = v1::JobState_Name(job.state);
  if (IsTerminal(job.state) && !job.end_time.has_value()) {
    return Broken(absl::StrCat("job ", job.id, " is ", name, " without an end time"));
  }
  std::set<std::string> names;
  int32_t rank = 0;
  for (const Replica& r : job.replicas) {
    if (!names.insert(r.name).second) {
      return Broken(absl::StrCat("job ", job.id, " has two replicas named ", r.name));
    }
    // Ranks are dense over the replicas not REMOVED by an elastic shrink, in replica order.
    const int32_t want = r.state == v1::REPLICA_STATE_REMOVED ? -1 : rank++;
    if (r.rank != want) {
      return Broken(
          absl::StrCat("replica ", job.id, "/", r.name, " has rank ", r.rank, ", not ", want));
    }
    if (r.state == v1::REPLICA_STATE_PENDING && !r.gpu_devices.empty()) {
      return Broken(absl::StrCat("replica ", job.id, "/", r.name, " is PENDING and holds GPUs"));
    }
    if (!HoldsResources(r.state)) continue;
    const std::string replica =
        absl::StrCat(job.id, "/", r.name, " (", v1::ReplicaState_Name(r.state), ")");
    // A job ends (or goes back to QUEUED for its next attempt) as soon as its outcome is known;
    // the replicas still running are then STOPPING and hold their place until their exits.
    if ((job.state == v1::JOB_STATE_QUEUED || IsTerminal(job.state)) &&
        r.state != v1::REPLICA_STATE_STOPPING) {
      return Broken(absl::StrCat("job ", job.id, " is ", name, " while replica ", replica,
                                 " holds resources"));
    }
    if (core.FindNode(r.node) == nullptr) {
      return Broken(absl::StrCat("replica ", replica, " holds resources on node '", r.node,
                                 "', which the core does not know"));
    }
    if (static_cast<int64_t>(r.gpu_devices.size()) != r.need.gpus) {
      return Broken(absl::StrCat("replica ", replica, " needs ", r.need.gpus, " GPUs and holds ",
                                 r.gpu_devices.size(), " devices"));
    }
    (*used)[r.node] += r.need;
  }
  int32_t number = 0;
  for (const Attempt& a : job.attempts) {
    if (a.number != ++number) {
      return Broken(absl::StrCat("job ", job.id, " has attempt ", a.number, " in place ", number));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckInvariants(const Core& core) {
  std::map<std::string, Res> used;
  size_t queued = 0;
  for (const auto& [id, job] : core.jobs()) {
    if (absl::Status s = CheckJob(core, job, &used); !s.ok()) return s;
    // An array stays QUEUED in the core until it ends, and is in no queue (job_arrays.h).
    queued += job.state == v1::JOB_STATE_QUEUED && !job.array ? 1 : 0;
  }
  for (const auto& [node, res] : used) {
    if (res.cpu < -1e-6 || res.memory_mb < 0 || res.gpus < 0) {
      return Broken(absl::StrCat("node ", node, " holds a negative amount: cpu ", res.cpu,
                                 ", memory ", res.memory_mb, " MiB, ", res.gpus, " GPUs"));
    }
  }
  if (absl::Status usage = core.CheckUsage(); !usage.ok()) {
    return Broken(std::string(usage.message()));
  }
  // The admission picture's order (kept between pictures until the queue's membership changes)
  // lists exactly the QUEUED jobs, each under its project.
  const std::shared_ptr<const QueueState> state = core.QueueSnapshot();
  size_t listed = 0;
  for (const auto& [project, ids] : *state->order) {
    for (const std::string& id : *ids) {
      const Job* job = core.FindJob(id);
      if (job == nullptr || job->state != v1::JOB_STATE_QUEUED || job->project != project) {
        return Broken(absl::StrCat("the admission picture lists job ", id, " under project ",
                                   project, ", which is not a QUEUED job of it"));
      }
    }
    listed += ids->size();
  }
  if (listed != queued) {
    return Broken(absl::StrCat("the admission picture lists ", listed, " queued jobs; ", queued,
                               " are QUEUED"));
  }
  return absl::OkStatus();
}

}  // namespace trainctl::sched
