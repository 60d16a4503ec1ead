// scheduling.stragglerAction REPLACE through Core (scheduler/straggler_replace.h): on four nodes
// with one rank per node, a rank at a quarter of its gang's rate gets its node excluded, the gang
// restarts with that rank on the free node, charged to nothing, and the node is told about but
// stays READY; REPORT only reports; with no room nothing changes until a node has room; a later
// attempt is never placed on an excluded node, and the exclusion survives the job's proto.
#include <catch2/catch.hpp>

#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/core.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

// Every rank reports steps for `seconds` (rates by replica name, steps per second), one report a
// second, the core ticking after each. Ranks that are not RUNNING skip their reports.
void TrainRunning(Fixture& f, const std::string& id, const std::map<std::string, int>& rates,
                  int seconds, std::map<std::string, int64_t>* steps, Effects* fx) {
  for (int i = 0; i < seconds; ++i) {
    f.now += 1'000;
    for (const auto& [name, rate] : rates) {
      if (f.core.FindJob(id)->FindReplica(name)->state != v1::REPLICA_STATE_RUNNING) continue;
      (*steps)[name] += rate;
      REQUIRE(f.core.ReportProgress(id, name, (*steps)[name], false, FromMs(f.now), fx).ok());
    }
    f.core.Tick(FromMs(f.now), fx);
  }
}

// A 3-rank gang of 3 cpu per rank: one rank per 4-cpu node.
v1::JobSpec ReplaceGang(v1::StragglerAction action) {
  v1::JobSpec spec = Spec(2, /*cpu=*/3);
  spec.mutable_scheduling()->set_straggler_action(action);
  return spec;
}

void AddReplaceNodes(Fixture& f, const std::vector<std::string>& names) {
  Effects fx;
  for (const std::string& n : names) f.core.AgentRegistered(Reg(n), FromMs(f.now), &fx);
}

const std::map<std::string, int> kQuarterRate = {{"chief-0", 8}, {"worker-0", 8}, {"worker-1", 2}};

TEST_CASE("straggler replace: the slow rank's node is excluded and the gang restarts elsewhere") {
  Fixture f;
  AddReplaceNodes(f, {"node-c", "node-d"});
  std::string id;
  std::vector<v1::LaunchReplica> launches =
      f.SubmitAndPlace(ReplaceGang(v1::STRAGGLER_ACTION_REPLACE), &id);
  f.StartAll(launches);
  const v1::Job before = f.Job(id);
  const std::string slow = before.replicas(2).node();
  std::map<std::string, int64_t> steps;
  Effects fx;
  TrainRunning(f, id, kQuarterRate, 320, &steps, &fx);
  REQUIRE(HasEvent(fx, "StragglerDetected", "worker-1 on " + slow));
  CHECK(HasEvent(fx, "NodeStraggler",
                 slow + " ran replica worker-1 of job " + id +
                     " at 0.25 of its gang's median step rate; job " + id + " no longer uses it"));
  CHECK(HasEvent(fx, "StragglerReplaced", "worker-1 on " + slow + " ran at 0.25"));
  CHECK(HasEvent(fx, "GangRestarting", "(a move: not charged)"));
  CHECK(f.core.FindJob(id)->excluded_nodes == std::vector<std::string>{slow});
  CHECK(f.Job(id).excluded_nodes(0) == slow);

  // The gang stops, and starts again with worker-1 on the node that was free.
  Effects stopped = ConfirmStops(f.core, id, fx, ++f.now);
  f.core.Tick(FromMs(++f.now), &stopped);
  CHECK(HasEvent(stopped, "ReplicaMoved", "moved from " + slow + " to "));
  CHECK(HasEvent(stopped, "GangStarting"));
  const v1::Job after = f.Job(id);
  CHECK(after.state() == v1::JOB_STATE_RUNNING);
  CHECK(after.attempts_size() == before.attempts_size());
  for (const v1::Replica& r : after.replicas()) CHECK(r.node() != slow);
  CHECK(Launches(stopped).size() == 3);
  // Charged to nothing: no budget, no replica restart.
  CHECK(after.budgets_used().DebugString() == before.budgets_used().DebugString());
  for (const Replica& r : f.core.FindJob(id)->replicas) CHECK(r.charged_restarts == 0);
  // The node is told about, not cordoned nor isolated.
  absl::StatusOr<v1::Node> node = f.core.GetNode(slow);
  REQUIRE(node.ok());
  CHECK(node->state() == v1::NODE_STATE_READY);
}

TEST_CASE("straggler replace: REPORT, the default, only reports") {
  Fixture f;
  AddReplaceNodes(f, {"node-c", "node-d"});
  std::string id;
  f.StartAll(f.SubmitAndPlace(ReplaceGang(v1::STRAGGLER_ACTION_UNSPECIFIED), &id));
  CHECK(f.Job(id).spec().scheduling().straggler_action() == v1::STRAGGLER_ACTION_REPORT);
  std::map<std::string, int64_t> steps;
  Effects fx;
  TrainRunning(f, id, kQuarterRate, 320, &steps, &fx);
  REQUIRE(HasEvent(fx, "StragglerDetected"));
  CHECK_FALSE(HasEvent(fx, "NodeStraggler"));
  CHECK_FALSE(HasEvent(fx, "GangRestarting"));
  CHECK(Stops(fx).empty());
  CHECK(f.core.FindJob(id)->excluded_nodes.empty());
}

TEST_CASE("straggler replace: with no room elsewhere nothing changes, until a node has room") {
  Fixture f;
  AddReplaceNodes(f, {"node-c"});  // three nodes, three ranks: none is free
  std::string id;
  f.StartAll(f.SubmitAndPlace(ReplaceGang(v1::STRAGGLER_ACTION_REPLACE), &id));
  const std::string slow = f.Job(id).replicas(2).node();
  std::map<std::string, int64_t> steps;
  Effects fx;
  TrainRunning(f, id, kQuarterRate, 320, &steps, &fx);
  REQUIRE(HasEvent(fx, "StragglerDetected"));
  CHECK(HasEvent(fx, "StragglerNotReplaced",
                 "worker-1 on " + slow +
                     " runs at 0.25 of its gang's median step rate, but no "
                     "other node has room for worker-1"));
  CHECK_FALSE(HasEvent(fx, "GangRestarting"));
  CHECK(f.core.FindJob(id)->excluded_nodes.empty());
  // Told once, while it waits for room.
  Effects waiting;
  TrainRunning(f, id, kQuarterRate, 30, &steps, &waiting);
  CHECK_FALSE(HasEvent(waiting, "StragglerNotReplaced"));
  // A node with room joins: the next check replaces it.
  AddReplaceNodes(f, {"node-d"});
  Effects replaced;
  TrainRunning(f, id, kQuarterRate, 30, &steps, &replaced);
  CHECK(HasEvent(replaced, "StragglerReplaced", "worker-1 on " + slow));
  CHECK(f.core.FindJob(id)->excluded_nodes == std::vector<std::string>{slow});
}

TEST_CASE("straggler replace: a new attempt is never placed on an excluded node") {
  Fixture f;
  AddReplaceNodes(f, {"node-c"});
  Effects fx;
  const std::string id = f.Submit(ReplaceGang(v1::STRAGGLER_ACTION_REPLACE), &fx).id();
  // As if an earlier attempt had excluded node-b.
  const_cast<Job*>(f.core.FindJob(id))->excluded_nodes = {"node-b"};
  f.core.Schedule(FromMs(f.now), &fx);
  // Three ranks of 3 cpu need three nodes, and only two are not excluded: it waits.
  CHECK(f.Job(id).state() == v1::JOB_STATE_QUEUED);
  CHECK(Launches(fx).empty());
  const v1::Job waiting = f.core.View(*f.core.FindJob(id), FromMs(f.now));
  REQUIRE(waiting.queue_status().blockers_size() >= 1);
  CHECK_THAT(waiting.queue_status().blockers(0).message(), Catch::StartsWith("CAPACITY"));
  Effects more;
  AddReplaceNodes(f, {"node-d"});
  f.core.Schedule(FromMs(++f.now), &more);
  REQUIRE(Launches(more).size() == 3);
  const v1::Job placed = f.Job(id);
  for (const v1::Replica& r : placed.replicas()) CHECK(r.node() != "node-b");

  // The exclusion is part of the job's row.
  absl::StatusOr<Job> back = JobFromProto(ToProto(*f.core.FindJob(id)));
  REQUIRE(back.ok());
  CHECK(back->excluded_nodes == std::vector<std::string>{"node-b"});
}

}  // namespace
}  // namespace trainctl::sched
