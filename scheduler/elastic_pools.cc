// ElasticPools (elastic_pools.h): a replica of an elastic pool that finds no room waits for it,
// then its pool shrinks without it; removed replicas come back at a gang start with room, or at
// once on ResizeJob.
#include "scheduler/elastic_pools.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"
#include "common/time_util.h"
#include "scheduler/elastic.h"

namespace trainctl::sched {

bool ElasticPools::WaitForRoom(Job* job, Replica* r, const std::string& room, bool new_run,
                               absl::Time now, Effects* fx) {
  if (!GangEpisodes::IsGang(*job) || !job->gang_restarting || !IsLive(job->state)) return false;
  const v1::WorkerPool* pool = PoolOf(*job, *r);
  if (pool == nullptr || !pool->has_elastic()) return false;
  // The pool must keep its minimum without this replica and every one waiting already.
  int32_t staying = 0;
  for (const Replica& o : job->replicas) {
    staying += &o != r && o.pool == r->pool && o.state != v1::REPLICA_STATE_REMOVED &&
               !o.elastic_wait_until.has_value();
  }
  const int32_t min = pool->elastic().min_replicas();
  if (staying < min) return false;
  // Its restart count names the run it starts next, wherever that is.
  if (new_run) r->restart_count++;
  life_->SetReplicaState(job, r, v1::REPLICA_STATE_PENDING);
  // It is leaving its node: what it remembers there (ports, devices) is not its own any more.
  binding_->Leave(r);
  r->pid = 0;
  r->next_start_time.reset();
  const int64_t wait_ms = job->policy.elastic_wait_ms;
  r->elastic_wait_until = now + absl::Milliseconds(wait_ms);
  r->message = absl::StrCat("waiting up to ", FormatDuration(wait_ms), " for a node with room (",
                            r->move_reason, ")");
  AddEvent(fx, now, job, r->name, r->node, "ReplicaWaitingForRoom",
           absl::StrCat("Replica ", r->name, " had to leave node ", r->node, " (", r->move_reason,
                        ") and no other node has room for it (", room, "); its pool ", r->pool,
                        " is elastic (minReplicas ", min, "): waiting until ",
                        When(*r->elastic_wait_until),
                        " for a node with room, then the gang starts again without it"));
  Touch(job, now, fx);
  timers_->WakeAt(*r->elastic_wait_until);
  return true;
}

void ElasticPools::Step(Job* job, absl::Time now, Effects* fx) {
  if (!job->gang_restarting || !IsLive(job->state)) return;
  std::vector<Replica*> leaving;
  for (Replica& r : job->replicas) {
    if (r.state != v1::REPLICA_STATE_PENDING || !r.elastic_wait_until) continue;
    if (const std::string to = moves_->MoveTarget(*job, r, r.node, r.node, now); !to.empty()) {
      moves_->MoveTo(job, &r, to, now, fx, /*new_run=*/false);
      if (!IsLive(job->state)) return;
    } else if (now >= *r.elastic_wait_until) {
      leaving.push_back(&r);
    } else {
      timers_->WakeAt(*r.elastic_wait_until);
    }
  }
  if (leaving.empty()) return;
  const std::map<std::string, int32_t> before = PoolSizes(*job);
  std::map<std::string, std::vector<std::string>> removed;
  std::vector<std::string> why;
  for (Replica* r : leaving) {
    removed[r->pool].push_back(r->name);
    why.push_back(absl::StrCat(r->name, " had to leave node ", r->node, " (", r->move_reason, ")"));
    life_->SetReplicaState(job, r, v1::REPLICA_STATE_REMOVED);
    r->elastic_wait_until.reset();
    r->move_cause = MoveCause::kNone;
    r->move_reason.clear();
    r->message = absl::StrCat("removed: its pool ", r->pool, " shrank without it; ", why.back(),
                              " and no node had room within elasticWait");
  }
  RenumberRanks(job);
  RecordResizes(job, before, removed,
                absl::StrCat(absl::StrJoin(why, "; "), ", and no node had room within ",
                             FormatDuration(job->policy.elastic_wait_ms)),
                now, fx);
  gang_->MaybeRelaunch(job, now, fx);
}

void ElasticPools::GrowBack(Job* job, absl::Time now, Effects* fx) {
  if (WorldSize(*job) == static_cast<int32_t>(job->replicas.size())) return;
  const std::map<std::string, int32_t> before = PoolSizes(*job);
  std::map<std::string, std::vector<std::string>> added;
  std::vector<std::string> where;
  // Within the primary's topology domain when the job packs.
  const std::string domain_of = job->replicas.front().node;
  for (Replica& r : job->replicas) {
    if (r.state != v1::REPLICA_STATE_REMOVED) continue;
    const std::string to = moves_->MoveTarget(*job, r, "", domain_of, now);
    if (to.empty()) continue;
    life_->SetNode(*job, &r, to);
    life_->SetReplicaState(job, &r, v1::REPLICA_STATE_RESTARTING);
    r.next_start_time = now;
    r.exit_code.reset();
    r.signal.reset();
    r.oom_killed = false;
    r.end_time.reset();
    r.message = absl::StrCat("added back on ", to, ": its pool ", r.pool, " grows");
    ReplicaMoves::NoteAttemptNode(job, to, fx);
    added[r.pool].push_back(r.name);
    where.push_back(absl::StrCat(r.name, " on ", to));
  }
  if (added.empty()) return;
  RenumberRanks(job);
  RecordResizes(job, before, added, absl::StrCat("room again for ", absl::StrJoin(where, ", ")),
                now, fx);
}

void ElasticPools::RestoreWorld(Job* job) {
  bool removed = false;
  for (Replica& r : job->replicas) {
    r.elastic_wait_until.reset();
    if (r.state != v1::REPLICA_STATE_REMOVED) continue;
    life_->SetReplicaState(job, &r, v1::REPLICA_STATE_PENDING);
    removed = true;
  }
  if (removed) RenumberRanks(job);
}

void ElasticPools::RecordResizes(Job* job, const std::map<std::string, int32_t>& before,
                                 const std::map<std::string, std::vector<std::string>>& changed,
                                 const std::string& why, absl::Time now, Effects* fx) {
  const std::map<std::string, int32_t> after = PoolSizes(*job);
  const int32_t world = WorldSize(*job);
  Attempt* a = job->current();
  for (const auto& [pool, names] : changed) {
    auto count = [](const std::map<std::string, int32_t>& sizes, const std::string& p) {
      auto it = sizes.find(p);
      return it == sizes.end() ? 0 : it->second;
    };
    Resize z{
        now,  job->gang_generation + 1, pool, count(before, pool), count(after, pool), names, why,
        world};
    AddEvent(fx, now, job, "", "", "JobResized",
             absl::StrCat("pool ", pool, (z.to_replicas < z.from_replicas ? " shrank" : " grew"),
                          " from ", z.from_replicas, " to ", z.to_replicas, " replicas (",
                          absl::StrJoin(names, ", "),
                          z.to_replicas < z.from_replicas ? " removed" : " added back", "; ", why,
                          "): the gang starts as generation ", z.generation, " with WORLD_SIZE ",
                          world, ", ranks renumbered, names kept; not charged to any budget"));
    if (a != nullptr) a->resizes.push_back(std::move(z));
  }
  if (a != nullptr) fx->attempts.insert({job->id, a->number});
  Touch(job, now, fx);
}

absl::Status ElasticPools::RequestGrow(Job* job, const std::string& actor, absl::Time now,
                                       Effects* fx) {
  if (!IsElastic(job->spec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job->id, " has no elastic pool (workerPools[].elastic): its size never changes"));
  }
  if (job->state != v1::JOB_STATE_RUNNING) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job->id, " is ", EnumShortName(job->state), ": only a RUNNING job can be resized"));
  }
  if (job->gang_restarting) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job->id,
        "'s gang is restarting already: it grows as it starts again if there is room"));
  }
  if (WorldSize(*job) == static_cast<int32_t>(job->replicas.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job->id, " already runs all ", job->replicas.size(), " replicas of its spec"));
  }
  // Some removed replica must have room, or the restart would change nothing.
  std::string first_no_room;
  bool room = false;
  for (const Replica& r : job->replicas) {
    if (r.state != v1::REPLICA_STATE_REMOVED) continue;
    std::string no_room;
    if (!moves_->MoveTarget(*job, r, "", job->replicas.front().node, now, &no_room).empty()) {
      room = true;
      break;
    }
    if (first_no_room.empty()) first_no_room = absl::StrCat(r.name, " ", no_room);
  }
  if (!room) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no node has room for a removed replica of job ", job->id, ": ", first_no_room));
  }
  const std::string who = actor.empty() ? std::string("a resize request")
                                        : absl::StrCat("a resize requested by ", actor);
  RootCause rc;
  rc.exit_time = now;
  rc.summary = who;
  job->root_cause = rc;
  job->gang_restarting = true;
  if (Attempt* a = job->current()) {
    a->gang_restarts.push_back({job->gang_generation + 1, now, rc, "resize", false});
    fx->attempts.insert({job->id, a->number});
  }
  const std::vector<Replica*> placed_elsewhere = gang_->Stop(
      job, nullptr, absl::StrCat("restarting the gang to grow it: ", who), now, now, fx);
  AddEvent(fx, now, job, "", "", "GangRestarting",
           absl::StrCat("restarting all ", WorldSize(*job), " replicas together as gang ",
                        "generation ", job->gang_generation + 1, " to grow the job (", who,
                        "; not charged): the others are stopped first, then every replica and "
                        "those added back start at once"));
  Touch(job, now, fx);
  for (Replica* o : placed_elsewhere) {
    if (!IsLive(job->state)) return absl::OkStatus();
    moves_->PlaceMoved(job, o, now, fx, /*new_run=*/false);
  }
  gang_->MaybeRelaunch(job, now, fx);
  return absl::OkStatus();
}

}  // namespace trainctl::sched
