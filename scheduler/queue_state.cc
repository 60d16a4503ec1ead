#include "scheduler/queue_state.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/dependencies.h"
#include "scheduler/placement_pipeline.h"
#include "scheduler/topology.h"

namespace trainctl::sched {

QueuedJob QueuedJobOf(const Job& job) {
  QueuedJob q;
  q.id = job.id;
  q.project = job.project;
  q.attempts = static_cast<int32_t>(job.attempts.size());
  q.next_attempt_time = job.next_attempt_time;
  q.expected_duration = ExpectedDuration(job.spec);
  for (const Replica& r : job.replicas) {
    q.stopping |= HoldsResources(r.state);
    q.demands.push_back(ReplicaDemandOf(r));
  }
  q.placement_spec = PlacementSpecOf(job.spec);
  q.timeout = TimeoutClockOf(job);
  q.excluded_nodes = job.excluded_nodes;
  const QuietWait wait = WaitsWithoutBlocking(job);
  q.quiet_kind = wait.kind;
  q.quiet = wait.text;
  return q;
}

QueuedJob QueuedJobOf(const v1::Job& job) {
  QueuedJob q;
  q.id = job.id();
  q.project = job.project();
  q.attempts = job.attempts_size();
  if (job.has_next_attempt_time()) q.next_attempt_time = FromProtoTime(job.next_attempt_time());
  q.expected_duration = ExpectedDuration(job.spec());
  std::map<std::string, Res> needs;
  for (const v1::WorkerPool& p : job.spec().worker_pools()) {
    needs[p.name()] = Res::FromProto(p.resources());
  }
  for (const v1::Replica& r : job.replicas()) {
    q.stopping |= HoldsResources(r.state());
    q.demands.push_back({r.name(), needs[r.pool()], PortsNeeded(r.rank())});
  }
  q.placement_spec = PlacementSpecOf(job.spec());
  q.timeout = TimeoutClockOf(job);
  q.excluded_nodes.assign(job.excluded_nodes().begin(), job.excluded_nodes().end());
  const QuietWait wait = WaitsWithoutBlocking(job);
  q.quiet_kind = wait.kind;
  q.quiet = wait.text;
  return q;
}

Quota QueueState::QuotaOf(const std::string& project) const {
  auto it = quotas.find(project);
  Quota q = it != quotas.end() ? it->second : default_quota;
  q.project = project;
  return q;
}

ProjectUsage QueueState::UsageOf(const std::string& project) const {
  auto it = usage.find(project);
  return it == usage.end() ? ProjectUsage{} : it->second;
}

std::shared_ptr<const QueueOrder> MakeQueueOrder(
    std::map<std::string, std::vector<std::string>> lists) {
  auto order = std::make_shared<QueueOrder>();
  for (auto& [project, ids] : lists) {
    (*order)[project] = std::make_shared<const std::vector<std::string>>(std::move(ids));
  }
  return order;
}

const std::vector<std::string>& QueueState::OrderOf(const std::string& project) const {
  static const std::vector<std::string> kNone;
  auto it = order->find(project);
  return it == order->end() ? kNone : *it->second;
}

Res Borrowable(const std::string& project, const Quota& quota,
               const std::map<std::string, Quota>& quotas,
               const std::map<std::string, ProjectUsage>& usage,
               const std::function<std::optional<Res>(const std::string&)>& head_demand) {
  Res none;
  if (quota.cohort.empty()) return none;
  const Res& limit = quota.borrowing_limit;
  if (limit.cpu <= 0 && limit.memory_mb <= 0 && limit.gpus <= 0) return none;
  Res lendable;
  Res lent;
  for (const auto& [name, q] : quotas) {
    if (name == project || q.cohort != quota.cohort) continue;
    auto u = usage.find(name);
    const Res used = u == usage.end() ? Res{} : u->second.used;
    Res unused = Unused(q, used);
    if (std::optional<Res> waiting = head_demand(name)) unused -= *waiting;
    lendable.cpu += std::max(0.0, unused.cpu);
    lendable.memory_mb += std::max<int64_t>(0, unused.memory_mb);
    lendable.gpus += std::max<int64_t>(0, unused.gpus);
    lent += Borrowed(q, used);
  }
  // `lent` counts only the other projects' borrowing: what this project borrows already is part
  // of what it may borrow in all, not a second charge against it.
  Res b;
  b.cpu = std::max(0.0, std::min(limit.cpu, lendable.cpu - lent.cpu));
  b.memory_mb =
      std::max<int64_t>(0, std::min(limit.memory_mb, lendable.memory_mb - lent.memory_mb));
  b.gpus = std::max<int64_t>(0, std::min(limit.gpus, lendable.gpus - lent.gpus));
  return b;
}

namespace {

Res BorrowableIn(const QueueState& state, const std::string& project, const Quota& quota) {
  return Borrowable(project, quota, state.quotas, state.usage,
                    [&state](const std::string& name) -> std::optional<Res> {
                      auto it = state.head_demand.find(name);
                      if (it == state.head_demand.end()) return std::nullopt;
                      return it->second;
                    });
}

}  // namespace

std::vector<v1::Blocker> BlockersOf(const QueueState& state, const QueuedJob& job, absl::Time now) {
  std::vector<v1::Blocker> out;
  auto add = [&out](BlockerKind kind, const std::string& message) {
    out.push_back(MakeBlocker(kind, message));
  };
  if (!job.quiet.empty()) add(job.quiet_kind, job.quiet);  // held, or waiting on a dependency
  if (job.next_attempt_time && *job.next_attempt_time > now) {
    add(BlockerKind::kBackoff,
        ReasonText(BlockerKind::kBackoff,
                   absl::StrCat("attempt ", job.attempts + 1, " waits for its retry backoff until ",
                                FormatRfc3339(ToMs(*job.next_attempt_time)))));
  }
  if (job.stopping) {
    add(BlockerKind::kStopping,
        ReasonText(BlockerKind::kStopping,
                   absl::StrCat("attempt ", job.attempts, "'s replicas are still stopping")));
  }
  const Quota quota = state.QuotaOf(job.project);
  Res demand;
  for (const ReplicaDemand& d : job.demands) demand += d.need;
  QuotaEval qe = EvaluateQuota(job.project, quota, state.UsageOf(job.project), demand,
                               BorrowableIn(state, job.project, quota));
  for (v1::Blocker& b : qe.blockers) out.push_back(std::move(b));
  if (state.free.empty()) {
    add(BlockerKind::kNoNodes, ReasonText(BlockerKind::kNoNodes, kNoNodesMissing));
  } else {
    // Windows are judged by now + the expected duration, the shortfall on every node first
    // (placement_pipeline.h).
    FreeIndex free(state.free);
    PlacementPipeline pipeline(&free, &state.windows);
    GangRequest request{job.placement_spec.get(), &job.demands, now + job.expected_duration,
                        MaintenanceCheck::kShortfallFirst};
    request.excluded = &job.excluded_nodes;
    JobPlacement placed = pipeline.CheckGang(request);
    if (!placed.ok()) {
      add(BlockerOf(placed.kind), placed.Reason());
    } else if (const std::optional<Reservation>& r = state.reservation;
               r && r->job_id != job.id && !MayBackfill(*r, LatestEnd(job.timeout, now))) {
      // It fits, but only on the reservation's nodes?
      const std::set<std::string> kept(r->nodes.begin(), r->nodes.end());
      GangRequest off = request;
      off.reserved = &kept;
      if (!pipeline.CheckGang(off).ok()) {
        add(BlockerKind::kReservation, ReservationReason(*r));
      }
    }
  }
  return out;
}

v1::QueueStatus QueueStatusOf(const QueueState& state, const QueuedJob& job, absl::Time now) {
  v1::QueueStatus qs;
  if (auto it = state.preempting.find(job.id); it != state.preempting.end()) {
    for (const std::string& victim : it->second) qs.add_preempting(victim);
    *qs.add_blockers() =
        MakeBlocker(BlockerKind::kPreempting,
                    ReasonText(BlockerKind::kPreempting,
                               absl::StrCat("waiting for ", absl::StrJoin(it->second, ", "),
                                            " to checkpoint and stop to make room for it")));
  }
  for (v1::Blocker& b : BlockersOf(state, job, now)) *qs.add_blockers() = std::move(b);
  if (state.reservation && state.reservation->job_id == job.id) {
    for (const std::string& node : state.reservation->nodes) qs.add_reserved_nodes(node);
    if (state.reservation->expected_start) {
      *qs.mutable_expected_start_time() = ToProtoTime(*state.reservation->expected_start);
    }
  }
  const std::vector<std::string>& ids = state.OrderOf(job.project);
  const int32_t ahead =
      static_cast<int32_t>(std::find(ids.begin(), ids.end(), job.id) - ids.begin());
  for (int32_t i = 0; i < ahead && i < 10; ++i) qs.add_jobs_ahead(ids[i]);
  qs.set_position(ahead + 1);
  qs.set_jobs_ahead_count(ahead);
  if (ahead > 0) {
    v1::Blocker* b = qs.add_blockers();
    *b = MakeBlocker(
        BlockerKind::kPriority,
        ReasonText(BlockerKind::kPriority,
                   absl::StrCat(ahead, ahead == 1 ? " job" : " jobs", " ahead in ", job.project)));
    b->set_jobs(ahead);
  }
  return qs;
}

v1::Project MakeProject(const std::string& name, const Quota& quota, bool default_quota,
                        const ProjectUsage& usage, int32_t queued_jobs) {
  v1::Project p;
  p.set_name(name);
  *p.mutable_quota() = QuotaToProto(quota);
  p.set_default_quota(default_quota);
  *p.mutable_in_use() = ToProto(usage.used);
  p.set_running_jobs(usage.running_jobs);
  p.set_queued_jobs(queued_jobs);
  *p.mutable_borrowed() = ToProto(Borrowed(quota, usage.used));
  return p;
}

v1::Project ProjectOf(const QueueState& state, const std::string& name) {
  return MakeProject(name, state.QuotaOf(name), state.quotas.count(name) == 0, state.UsageOf(name),
                     static_cast<int32_t>(state.OrderOf(name).size()));
}

}  // namespace trainctl::sched
