// Reservations and backfill: where a blocked gang would start soonest and when (known and unknown
// ends, maintenance windows), who may start on its nodes meanwhile (a timeout that ends by its
// start), and the admission pass keeping the room through the core.
#include "scheduler/reservation.h"

#include <catch2/catch.hpp>

#include "model/model_proto.h"
#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

NodeFree Free(const std::string& name, double cpu) { return {name, {cpu, 4096, 0}, 8}; }

RunningRoom Room(const std::string& node, double cpu, std::optional<absl::Time> end) {
  RunningRoom room;
  room.end = end;
  room.allocations.push_back({node, ReplicaDemand{"chief-0", {cpu, 0, 0}, 2}});
  return room;
}

std::vector<ReplicaDemand> Gang(int replicas, double cpu) {
  std::vector<ReplicaDemand> demands;
  for (int i = 0; i < replicas; ++i) demands.push_back({"r-" + std::to_string(i), {cpu, 0, 0}, 2});
  return demands;
}

TEST_CASE("reservation: the nodes where the gang starts soonest, as running jobs end") {
  const v1::JobSpec spec;
  const std::vector<NodeFree> free = {Free("node-a", 0), Free("node-b", 0), Free("node-c", 1)};
  const std::vector<RunningRoom> running = {Room("node-a", 4, kT0 + absl::Minutes(10)),
                                            Room("node-b", 4, kT0 + absl::Minutes(5)),
                                            Room("node-c", 3, kT0 + absl::Minutes(30))};
  // One replica of 4: node-b frees first.
  std::optional<Reservation> one =
      PlanReservation("j-1", spec, Gang(1, 4), free, {}, running, nullptr, kT0);
  REQUIRE(one.has_value());
  CHECK(one->job_id == "j-1");
  CHECK(one->nodes == std::vector<std::string>{"node-b"});
  CHECK(one->expected_start == kT0 + absl::Minutes(5));
  // Two: node-a and node-b, once the later of them ends.
  std::optional<Reservation> two =
      PlanReservation("j-2", spec, Gang(2, 4), free, {}, running, nullptr, kT0);
  REQUIRE(two.has_value());
  CHECK(two->nodes == std::vector<std::string>{"node-a", "node-b"});
  CHECK(two->expected_start == kT0 + absl::Minutes(10));
  // Never on nodes it may not use (preemption's).
  const std::set<std::string> reserved = {"node-b"};
  std::optional<Reservation> off =
      PlanReservation("j-3", spec, Gang(1, 4), free, {}, running, &reserved, kT0);
  REQUIRE(off.has_value());
  CHECK(off->nodes == std::vector<std::string>{"node-a"});
  // More than the whole cluster: none.
  CHECK_FALSE(PlanReservation("j-4", spec, Gang(4, 4), free, {}, running, nullptr, kT0));
  // A job whose end has passed (stopping) gives its room back now.
  std::optional<Reservation> past = PlanReservation(
      "j-5", spec, Gang(1, 4), free, {}, {Room("node-a", 4, kT0 - absl::Minutes(1))}, nullptr, kT0);
  REQUIRE(past.has_value());
  CHECK(past->expected_start == kT0);
}

TEST_CASE("reservation: a job without a timeout makes the start unknown, and comes last") {
  const v1::JobSpec spec;
  const std::vector<NodeFree> free = {Free("node-a", 0), Free("node-b", 0)};
  const std::vector<RunningRoom> running = {Room("node-a", 4, std::nullopt),
                                            Room("node-b", 4, kT0 + absl::Minutes(20))};
  std::optional<Reservation> one =
      PlanReservation("j-1", spec, Gang(1, 4), free, {}, running, nullptr, kT0);
  REQUIRE(one.has_value());
  CHECK(one->nodes == std::vector<std::string>{"node-b"});
  CHECK(one->expected_start == kT0 + absl::Minutes(20));
  std::optional<Reservation> two =
      PlanReservation("j-2", spec, Gang(2, 4), free, {}, running, nullptr, kT0);
  REQUIRE(two.has_value());
  CHECK(two->nodes == std::vector<std::string>{"node-a", "node-b"});
  CHECK_FALSE(two->expected_start.has_value());
  CHECK(ReservedText(*two) ==
        "room reserved on node-a, node-b, start unknown (a job it waits for has no "
        "scheduling.timeout)");
}

TEST_CASE(
    "reservation: nodes whose maintenance window begins before the gang would end are "
    "skipped") {
  v1::JobSpec spec;
  spec.mutable_scheduling()->mutable_timeout()->set_seconds(3600);  // runs up to 1h
  const std::vector<NodeFree> free = {Free("node-a", 0), Free("node-b", 0)};
  const std::vector<RunningRoom> running = {Room("node-a", 4, kT0 + absl::Minutes(30)),
                                            Room("node-b", 4, kT0 + absl::Minutes(5))};
  // node-b frees first, but its window starts 40m from now, before the gang would end there.
  const std::vector<NodeWindow> windows = {
      {"node-b", kT0 + absl::Minutes(40), kT0 + absl::Hours(2), "BIOS update"}};
  std::optional<Reservation> r =
      PlanReservation("j-1", spec, Gang(1, 4), free, windows, running, nullptr, kT0);
  REQUIRE(r.has_value());
  CHECK(r->nodes == std::vector<std::string>{"node-a"});
  CHECK(r->expected_start == kT0 + absl::Minutes(30));
  // A window after the gang's end does not matter.
  const std::vector<NodeWindow> later = {
      {"node-b", kT0 + absl::Hours(3), kT0 + absl::Hours(4), "BIOS update"}};
  r = PlanReservation("j-1", spec, Gang(1, 4), free, later, running, nullptr, kT0);
  REQUIRE(r.has_value());
  CHECK(r->nodes == std::vector<std::string>{"node-b"});
}

TEST_CASE("reservation: backfill only for a job whose timeout ends by the expected start") {
  Reservation r;
  r.job_id = "j-gang";
  r.nodes = {"node-a"};
  r.expected_start = kT0 + absl::Minutes(30);
  CHECK(MayBackfill(r, kT0 + absl::Minutes(30)));
  CHECK(MayBackfill(r, kT0 + absl::Minutes(5)));
  CHECK_FALSE(MayBackfill(r, kT0 + absl::Minutes(31)));
  CHECK_FALSE(MayBackfill(r, std::nullopt));  // no timeout: waits
  r.expected_start.reset();
  CHECK_FALSE(MayBackfill(r, kT0 + absl::Minutes(1)));  // unknown start: nobody

  // The timeout's clock: from the job's first start, standing still while it waits after a
  // preemption.
  TimeoutClock fresh{absl::Minutes(10), std::nullopt, std::nullopt};
  CHECK(LatestEnd(fresh, kT0) == kT0 + absl::Minutes(10));
  TimeoutClock running{absl::Minutes(10), kT0 - absl::Minutes(4), std::nullopt};
  CHECK(LatestEnd(running, kT0) == kT0 + absl::Minutes(6));
  TimeoutClock paused{absl::Minutes(10), kT0 - absl::Minutes(20), kT0 - absl::Minutes(17)};
  CHECK(LatestEnd(paused, kT0) == kT0 + absl::Minutes(7));
  CHECK_FALSE(LatestEnd(TimeoutClock{}, kT0).has_value());
}

// Two nodes of 4 cpu; project "stream" runs a 4-cpu job on each, "big" queues a gang of two
// 4-cpu replicas.
struct Cluster {
  Core core{TestOptions(11)};
  absl::Time now = kT0;
  ~Cluster() { CheckUsageOnExit(core); }

  Cluster() {
    Effects fx;
    core.AgentRegistered(Reg("node-a"), now, &fx);
    core.AgentRegistered(Reg("node-b"), now, &fx);
  }

  static v1::JobSpec Small(const std::string& project, int64_t timeout_s) {
    v1::JobSpec spec = Spec(0, 4);
    spec.set_project(project);
    if (timeout_s > 0) spec.mutable_scheduling()->mutable_timeout()->set_seconds(timeout_s);
    return spec;
  }

  std::string Submit(const v1::JobSpec& spec) {
    Effects fx;
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, now, &fx);
    REQUIRE(job.ok());
    const std::string id = (*job)->id;
    Schedule(&fx);
    return id;
  }

  // A loop turn: timers, then a pass; every launch confirmed.
  void Schedule(Effects* fx) {
    core.Tick(now, fx);
    core.Schedule(now, fx);
    for (const v1::LaunchReplica& l : Launches(*fx)) {
      Effects started;
      const Job* job = core.FindJob(l.job_id());
      for (const Replica& r : job->replicas) {
        if (job->RunIdOf(r) == l.run_id()) {
          core.ReplicaStarted(r.node, Started(l.run_id()), now, &started);
        }
      }
    }
  }

  const Job& Get(const std::string& id) { return *core.FindJob(id); }

  void Succeed(const std::string& id) {
    Effects fx;
    const Job& job = Get(id);
    const Replica& r = job.replicas[0];
    core.ReplicaExited(r.node, ExitedCode(job.RunIdOf(r), 0), now, &fx);
    Schedule(&fx);
  }
};

TEST_CASE(
    "reservation: a gang blocked on capacity gets its room after --reservation-after, a "
    "short timeout backfills, no timeout waits") {
  Cluster c;
  const std::string a = c.Submit(Cluster::Small("stream", 1800));  // ends by T0+30m
  const std::string b = c.Submit(Cluster::Small("stream", 3600));  // ends by T0+1h
  REQUIRE(c.Get(a).state == v1::JOB_STATE_RUNNING);
  REQUIRE(c.Get(b).state == v1::JOB_STATE_RUNNING);
  v1::JobSpec gang_spec = Spec(1, 4);
  gang_spec.set_project("big");
  const std::string gang = c.Submit(gang_spec);
  CHECK(c.Get(gang).state == v1::JOB_STATE_QUEUED);
  CHECK(c.core.ListNodes()[0].has_reservation() == false);

  // Before --reservation-after (10m) nothing is kept: a job that ends its stream job early is
  // followed by the next one.
  c.now += absl::Minutes(11);
  Effects fx;
  c.Schedule(&fx);
  v1::Job view = c.core.View(c.Get(gang), c.now);
  INFO(c.Get(gang).queue_reason);
  REQUIRE(view.queue_status().reserved_nodes_size() == 2);
  CHECK(view.queue_status().reserved_nodes(0) == "node-a");
  CHECK(view.queue_status().reserved_nodes(1) == "node-b");
  CHECK(FromProtoTime(view.queue_status().expected_start_time()) == kT0 + absl::Hours(1));
  for (const v1::Node& n : c.core.ListNodes()) {
    CHECK(n.reservation().job_id() == gang);
    CHECK(FromProtoTime(n.reservation().expected_start_time()) == kT0 + absl::Hours(1));
  }

  // node-a frees early. A job without a timeout would hold it past the gang's start: it waits.
  c.Succeed(a);
  const std::string no_timeout = c.Submit(Cluster::Small("stream", 0));
  CHECK(c.Get(no_timeout).state == v1::JOB_STATE_QUEUED);
  CHECK(c.Get(no_timeout)
            .queue_reason.rfind("RESERVATION: the room it fits in (node-a, node-b) "
                                "is kept for " +
                                    gang,
                                0) == 0);
  v1::Job waiting = c.core.View(c.Get(no_timeout), c.now);
  bool reservation_blocker = false;
  for (const v1::Blocker& blocker : waiting.queue_status().blockers()) {
    reservation_blocker |= blocker.kind() == "RESERVATION";
  }
  CHECK(reservation_blocker);
  // Its project's next job, with a timeout that ends after the gang's start, waits too (STRICT
  // order keeps it behind the first anyway); another project's short job backfills.
  const std::string too_long = c.Submit(Cluster::Small("other", 3 * 3600));
  CHECK(c.Get(too_long).state == v1::JOB_STATE_QUEUED);
  const std::string short_job = c.Submit(Cluster::Small("third", 600));  // ends by T0+21m
  CHECK(c.Get(short_job).state == v1::JOB_STATE_RUNNING);
  CHECK(c.Get(short_job).replicas[0].node == "node-a");

  // The room comes back: the gang starts before anyone else.
  c.Succeed(short_job);
  c.now += absl::Minutes(1);
  c.Succeed(b);
  CHECK(c.Get(gang).state == v1::JOB_STATE_RUNNING);
  CHECK(c.Get(no_timeout).state == v1::JOB_STATE_QUEUED);
  CHECK_FALSE(c.core.ListNodes()[0].has_reservation());
  CHECK(c.core.View(c.Get(no_timeout), c.now).queue_status().reserved_nodes_size() == 0);
}

TEST_CASE("reservation: off with --reservation-after off, and not for a job its quota holds") {
  CoreOptions options = TestOptions(12);
  options.reservation_after.reset();
  Core core(options);
  Effects fx;
  core.AgentRegistered(Reg("node-a"), kT0, &fx);
  v1::JobSpec first = Spec(0, 4);
  first.set_project("p");
  REQUIRE(core.SubmitJob(first, kT0, &fx).ok());
  core.Schedule(kT0, &fx);
  v1::JobSpec second = Spec(0, 4);
  second.set_project("q");
  absl::StatusOr<const Job*> waiting = core.SubmitJob(second, kT0, &fx);
  REQUIRE(waiting.ok());
  const std::string id = (*waiting)->id;
  core.Tick(kT0 + absl::Hours(1), &fx);
  core.Schedule(kT0 + absl::Hours(1), &fx);
  CHECK(core.View(*core.FindJob(id), kT0 + absl::Hours(1)).queue_status().reserved_nodes_size() ==
        0);
  CHECK_FALSE(core.ListNodes()[0].has_reservation());
}

}  // namespace
}  // namespace trainctl::sched
