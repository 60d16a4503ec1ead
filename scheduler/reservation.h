// Reservations and backfill: room kept for a gang that capacity has blocked for a while, so that a
// stream of small jobs cannot take every node as it frees up (as Slurm's sched/backfill does).
//
// What it decides, over plain values (the admission queue supplies them):
//   - where a blocked job would start soonest (PlanReservation): the running jobs give their room
//     back in order of their latest end (start + scheduling.timeout, the only duration trainctl
//     enforces; a job without a timeout ends at an unknown time, after every job with one), and
//     the first point at which the gang fits names the nodes and the expected start. Nodes whose
//     maintenance window begins before the job would end there are skipped (placement_pipeline.h);
//   - who may start on reserved nodes meanwhile (MayBackfill): only a job whose own timeout ends
//     by the expected start. A job without a timeout, or any job while the expected start is
//     unknown, waits for room elsewhere. scheduling.expectedDuration is a hint, not a bound, and
//     is not used here.
// One reservation at a time: the first job in the queue's order that qualifies holds it until it
// starts, leaves the queue, or is blocked by its quota rather than by capacity.
//
//   std::optional<Reservation> r = PlanReservation(request, free_nodes, running, shape, now);
//   if (r && !MayBackfill(*r, LatestEnd(TimeoutClockOf(other), now))) ... keep other off r->nodes
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/placement_pipeline.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// A job's scheduling.timeout as a clock: it starts with the job's first start, and stands still
// while the job waits after a preemption (as the lifecycle counts it).
struct TimeoutClock {
  // scheduling.timeout; nullopt: none.
  std::optional<absl::Duration> timeout;
  // When the clock started, moved later by the time spent waiting after preemptions
  // (start_time + preempted_wait); nullopt: the job never started.
  std::optional<absl::Time> since;
  // When it stopped: the job waits in the queue after a preemption since then; nullopt: it runs.
  std::optional<absl::Time> paused_at;
};

TimeoutClock TimeoutClockOf(const Job& job);
// The same from the API's message (a published snapshot).
TimeoutClock TimeoutClockOf(const v1::Job& job);

// The latest a job that starts (or runs) at `now` ends: when its timeout is reached; nullopt
// without one.
std::optional<absl::Time> LatestEnd(const TimeoutClock& clock, absl::Time now);

struct Reservation {
  std::string job_id;
  // Distinct, by name.
  std::vector<std::string> nodes;
  // When the jobs running on those nodes reach their timeouts; nullopt: some have none.
  std::optional<absl::Time> expected_start;
  // When it was made, and the cluster's shape then (NodeRegistry::shape_version): a change of
  // the nodes makes it again.
  absl::Time made = absl::InfinitePast();
  uint64_t shape_version = 0;

  bool Holds(const std::string& node) const;
};

// A running job's room, and the latest it ends (nullopt: unknown).
struct RunningRoom {
  std::optional<absl::Time> end;
  std::vector<Allocation> allocations;
};

// Where the gang of `job_id` (`request`: its spec and demands; expected_end and reserved are set
// here) would start soonest on `free` (the schedulable nodes, as free now) when `running` give
// their room back in order of their ends, and when; nullopt when it would not fit even once all
// of them ended. `reserved` (nullptr: none) are nodes it may not use (preemption's), and
// `excluded` (nullptr: none) those the job no longer uses (Job::excluded_nodes).
std::optional<Reservation> PlanReservation(const std::string& job_id, const v1::JobSpec& spec,
                                           const std::vector<ReplicaDemand>& demands,
                                           std::vector<NodeFree> free,
                                           const std::vector<NodeWindow>& windows,
                                           std::vector<RunningRoom> running,
                                           const std::set<std::string>* reserved, absl::Time now,
                                           const std::vector<std::string>* excluded = nullptr);

// Whether a job whose latest end is `latest_end` may start on `reservation`'s nodes: only when
// it ends by the expected start, both known.
bool MayBackfill(const Reservation& reservation, std::optional<absl::Time> latest_end);

// What the reserved job's queue reason adds: "room reserved on node-a, node-b, expected to start
// at ..." (or "start unknown: ...").
std::string ReservedText(const Reservation& reservation);

// The queue reason of a job kept off reserved nodes: "RESERVATION: the room it fits in is kept
// for j-x, expected to start at ... (a job starts there only if its scheduling.timeout ends by
// then)".
std::string ReservationReason(const Reservation& reservation);

}  // namespace trainctl::sched
