#include "scheduler/reservation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/maintenance.h"
#include "scheduler/placement_kind.h"

namespace trainctl::sched {

TimeoutClock TimeoutClockOf(const Job& job) {
  TimeoutClock clock;
  if (job.policy.timeout_ms > 0) clock.timeout = absl::Milliseconds(job.policy.timeout_ms);
  if (job.start_time) clock.since = *job.start_time + job.preempted_wait;
  if (job.state == v1::JOB_STATE_QUEUED && !job.attempts.empty() &&
      job.attempts.back().decision == Decision::kPreempt) {
    clock.paused_at = job.queue_time;
  }
  return clock;
}

TimeoutClock TimeoutClockOf(const v1::Job& job) {
  TimeoutClock clock;
  const v1::Scheduling& s = job.spec().scheduling();
  if (s.has_timeout()) {
    const absl::Duration timeout =
        absl::Seconds(s.timeout().seconds()) + absl::Nanoseconds(s.timeout().nanos());
    if (timeout > absl::ZeroDuration()) clock.timeout = timeout;
  }
  if (job.has_start_time()) {
    clock.since = FromProtoTime(job.start_time()) + absl::Seconds(job.preempted_wait().seconds()) +
                  absl::Nanoseconds(job.preempted_wait().nanos());
  }
  if (job.state() == v1::JOB_STATE_QUEUED && job.attempts_size() > 0 &&
      job.attempts(job.attempts_size() - 1).decision() == DecisionName(Decision::kPreempt) &&
      job.has_queue_time()) {
    clock.paused_at = FromProtoTime(job.queue_time());
  }
  return clock;
}

std::optional<absl::Time> LatestEnd(const TimeoutClock& clock, absl::Time now) {
  if (!clock.timeout) return std::nullopt;
  if (!clock.since) return now + *clock.timeout;
  if (clock.paused_at) return now + *clock.timeout - (*clock.paused_at - *clock.since);
  return std::max(now, *clock.since + *clock.timeout);
}

bool Reservation::Holds(const std::string& node) const {
  return std::binary_search(nodes.begin(), nodes.end(), node);
}

std::optional<Reservation> PlanReservation(const std::string& job_id, const v1::JobSpec& spec,
                                           const std::vector<ReplicaDemand>& demands,
                                           std::vector<NodeFree> free,
                                           const std::vector<NodeWindow>& windows,
                                           std::vector<RunningRoom> running,
                                           const std::set<std::string>* reserved, absl::Time now,
                                           const std::vector<std::string>* excluded) {
  // Known ends first, earliest first; unknown ends last, all at once.
  std::stable_sort(running.begin(), running.end(), [](const RunningRoom& a, const RunningRoom& b) {
    if (a.end.has_value() != b.end.has_value()) return a.end.has_value();
    return a.end.has_value() && *a.end < *b.end;
  });
  Res demand;
  for (const ReplicaDemand& d : demands) demand += d.need;
  FreeIndex book(std::move(free));
  Res total;
  for (const NodeFree& n : book.nodes()) total += n.free;
  PlacementPipeline pipeline(&book, &windows);
  const absl::Duration duration = ExpectedDuration(spec);
  // The point considered: now, then each end in turn; nullopt once only unknown ends are left.
  std::optional<absl::Time> at = now;
  size_t i = 0;
  while (true) {
    if (total.Fits(demand)) {
      // Where the gang would start then, off the nodes whose window begins before it would end
      // (an unknown start avoids every window).
      const absl::Time end = at ? *at + duration : absl::InfiniteFuture();
      JobPlacement placed = pipeline.CheckGang(
          {&spec, &demands, end, MaintenanceCheck::kAvoidFirst, reserved, excluded});
      if (placed.ok()) {
        Reservation r;
        r.job_id = job_id;
        r.nodes = std::move(placed.nodes);
        std::sort(r.nodes.begin(), r.nodes.end());
        r.nodes.erase(std::unique(r.nodes.begin(), r.nodes.end()), r.nodes.end());
        r.expected_start = at;
        r.made = now;
        return r;
      }
    }
    if (i == running.size()) return std::nullopt;
    const std::optional<absl::Time> end = running[i].end;
    while (i < running.size() && running[i].end == end) {
      for (const Allocation& a : running[i].allocations) {
        const int index = book.IndexOf(a.node);
        if (index < 0) continue;  // not schedulable now: it frees nothing
        NodeFree node = book.nodes()[index];
        GiveBackTo(&node, a.demand);
        book.Reset(index, std::move(node));
        total += a.demand.need;
      }
      ++i;
    }
    at = end ? std::optional<absl::Time>(std::max(now, *end)) : std::nullopt;
  }
}

bool MayBackfill(const Reservation& reservation, std::optional<absl::Time> latest_end) {
  return reservation.expected_start && latest_end && *latest_end <= *reservation.expected_start;
}

namespace {

std::string ExpectedStartText(const Reservation& reservation) {
  return reservation.expected_start
             ? absl::StrCat("expected to start at ",
                            FormatRfc3339(ToMs(*reservation.expected_start)))
             : std::string("start unknown (a job it waits for has no scheduling.timeout)");
}

}  // namespace

std::string ReservedText(const Reservation& reservation) {
  return absl::StrCat("room reserved on ", absl::StrJoin(reservation.nodes, ", "), ", ",
                      ExpectedStartText(reservation));
}

std::string ReservationReason(const Reservation& reservation) {
  const std::string when = ExpectedStartText(reservation);
  return ReasonText(BlockerKind::kReservation,
                    absl::StrCat("the room it fits in (", absl::StrJoin(reservation.nodes, ", "),
                                 ") is kept for ", reservation.job_id, ", ", when,
                                 "; a job starts there only if its scheduling.timeout ends by "
                                 "then"));
}

}  // namespace trainctl::sched
