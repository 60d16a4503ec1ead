// The admission queue's reservation (reservation.h): when a blocked gang gets it, when it is made
// again, and what the running jobs give back and when.
#include "scheduler/admission_queue.h"

namespace trainctl::sched {

void AdmissionQueue::DropReservation() {
  if (!reservation_) return;
  reservation_.reset();
  ++version_;
}

std::vector<RunningRoom> AdmissionQueue::RunningRooms(const JobTable& jobs, absl::Time now) {
  std::vector<RunningRoom> rooms;
  rooms.reserve(jobs.active().size());
  for (const auto& [project, active] : jobs.active_by_project()) {
    for (const auto& [id, job] : active) {
      rooms.push_back(RoomOf(*job, now));
      if (rooms.back().allocations.empty()) rooms.pop_back();
    }
  }
  return rooms;
}

RunningRoom AdmissionQueue::RoomOf(const Job& job, absl::Time now) {
  RunningRoom room;
  // A live job ends by its timeout at the latest; one that stops (cancelled, a queued retry's
  // last replicas) is taken to end now.
  const bool live = job.state == v1::JOB_STATE_PENDING || job.state == v1::JOB_STATE_RUNNING;
  room.end = live ? LatestEnd(TimeoutClockOf(job), now) : std::optional<absl::Time>(now);
  for (const Replica& r : job.replicas) {
    if (HoldsResources(r.state)) room.allocations.push_back({r.node, ReplicaDemandOf(r)});
  }
  return room;
}

bool AdmissionQueue::Reserve(const Job& job, const std::vector<ReplicaDemand>& demands,
                             const JobTable& jobs, const FreeIndex& free,
                             const std::vector<NodeWindow>& windows,
                             const std::set<std::string>& reserved, uint64_t shape_version,
                             absl::Time now, Timers* timers) {
  if (!reservation_after_) return true;
  const absl::Time since = job.queue_time.value_or(job.create_time);
  if (now - since < *reservation_after_) {
    timers->WakeAt(since + *reservation_after_);
    return true;
  }
  if (reservation_ && reservation_->job_id != job.id) return false;  // one at a time
  // Kept until the nodes change or its expected start passes without room (a job overran its
  // grace period, a node went away): then made again from what runs now.
  if (reservation_ && reservation_->shape_version == shape_version &&
      (!reservation_->expected_start || now < *reservation_->expected_start)) {
    return true;
  }
  std::optional<Reservation> made =
      PlanReservation(job.id, job.spec, demands, free.nodes(), windows, RunningRooms(jobs, now),
                      &reserved, now, &job.excluded_nodes);
  if (made) {
    made->shape_version = shape_version;
    if (made->expected_start && *made->expected_start > now) {
      timers->WakeAt(*made->expected_start);
    }
  }
  if (made.has_value() != reservation_.has_value() ||
      (made && (made->nodes != reservation_->nodes ||
                made->expected_start != reservation_->expected_start))) {
    ++version_;
  }
  reservation_ = std::move(made);
  return true;
}

}  // namespace trainctl::sched
