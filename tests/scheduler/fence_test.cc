// Fencing (node_health.h): the margin's rule, the RegisterAck that tells agents when to fence,
// and the scheduler's side of it with a fake clock: a LOST node's replicas move only one margin
// after the lost timeout, a node heard from again before then keeps them, and a fenced exit
// moves its replica without charging it.
#include <catch2/catch.hpp>

#include "model/model_proto.h"
#include "scheduler/core.h"
#include "scheduler/node_health.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

constexpr int64_t kLostMs = 15'000;
constexpr int64_t kMarginMs = 3'000;

// Three nodes, one job of one replica running on `victim`, and a fake clock.
struct Partition {
  Core core{Options()};
  int64_t now = 1'000'000;
  std::string id;
  std::string victim;
  std::string run;

  ~Partition() { CheckUsageOnExit(core); }

  static CoreOptions Options() {
    CoreOptions o = TestOptions(5);
    o.nodes.lost_timeout = absl::Milliseconds(kLostMs);
    return o;
  }

  Partition() {
    Effects fx;
    for (const char* n : {"node-a", "node-b", "node-c"})
      core.AgentRegistered(Reg(n), FromMs(now), &fx);
    absl::StatusOr<v1::Job> job = AsView(core.SubmitJob(Spec(0), FromMs(now), &fx));
    REQUIRE(job.ok());
    id = job->id();
    core.Schedule(FromMs(now), &fx);
    const std::vector<v1::LaunchReplica> launches = Launches(fx);
    REQUIRE(launches.size() == 1);
    run = launches[0].run_id();
    victim = core.FindJob(id)->replicas[0].node;
    Effects started;
    core.ReplicaStarted(victim, Started(run), FromMs(now), &started);
  }

  // `ms` pass; every node but the victim is heard from; one tick.
  Effects After(int64_t ms) {
    now += ms;
    Effects fx;
    for (const char* n : {"node-a", "node-b", "node-c"}) {
      if (n != victim) core.Heartbeat(n, FromMs(now), &fx);
    }
    core.Tick(FromMs(now), &fx);
    return fx;
  }

  const Replica& R() { return core.FindJob(id)->replicas[0]; }
  v1::NodeState State() { return core.GetNode(victim)->state(); }
};

TEST_CASE("the fence margin is a fifth of the lost timeout, at least 500ms, at most half") {
  struct Row {
    int64_t lost_ms, margin_ms, fence_after_ms;
  };
  for (const Row& row : {
           Row{15'000, 3'000, 12'000},     // the default: 12s fence, 3s SIGTERM grace
           Row{40'000, 8'000, 32'000},     // Kubernetes' 40s
           Row{300'000, 60'000, 240'000},  // Slurm's 300s
           Row{2'000, 500, 1'500},         // the floor
           Row{600, 300, 300},             // the cap: half
       }) {
    CAPTURE(row.lost_ms);
    CHECK(FenceMargin(absl::Milliseconds(row.lost_ms)) == absl::Milliseconds(row.margin_ms));
    CHECK(FenceAfter(absl::Milliseconds(row.lost_ms)) == absl::Milliseconds(row.fence_after_ms));
  }
}

TEST_CASE("the RegisterAck tells the agent the lost timeout, when to fence and the grace") {
  Core core(Partition::Options());
  Effects fx;
  const v1::RegisterAck ack = core.AgentRegistered(Reg("node-a"), FromMs(1'000), &fx);
  CHECK(ack.lost_timeout_ms() == kLostMs);
  CHECK(ack.fence_after_ms() == kLostMs - kMarginMs);
  CHECK(ack.fence_grace_ms() == kMarginMs);
}

TEST_CASE(
    "a LOST node's replica moves only after the lost timeout plus the margin, and the move "
    "says it waited for the fence") {
  Partition p;
  Effects lost = p.After(kLostMs);
  CHECK(p.State() == v1::NODE_STATE_LOST);
  CHECK(HasEvent(lost, "NodeLost", "its replicas move to other nodes in 3s"));
  CHECK(Launches(lost).empty());
  CHECK(p.R().node == p.victim);

  Effects not_yet = p.After(kMarginMs - 1);
  CHECK(Launches(not_yet).empty());
  CHECK(p.R().node == p.victim);

  Effects moved = p.After(1);
  CHECK(HasEvent(moved, "NodeFenced", "waited 3s more for its agent to fence its replicas"));
  CHECK(HasEvent(moved, "ReplicaMoved", "waited 3s more for its agent to fence"));
  REQUIRE(Launches(moved).size() == 1);
  CHECK(p.R().node != p.victim);
  CHECK(p.R().charged_restarts == 0);
  // Once only.
  CHECK(Launches(p.After(10'000)).empty());
}

TEST_CASE("a late tick moves no later than the lost timeout plus the margin") {
  Partition p;
  // The first tick after the partition comes long after both deadlines.
  Effects fx = p.After(kLostMs + kMarginMs + 5'000);
  CHECK(p.State() == v1::NODE_STATE_LOST);
  CHECK(Launches(fx).size() == 1);
}

TEST_CASE(
    "a node heard from between LOST and the move keeps its replica, and a fenced exit then "
    "moves it, not charged") {
  Partition p;
  p.After(kLostMs);
  REQUIRE(p.State() == v1::NODE_STATE_LOST);

  // The agent's heartbeats get through again before the move.
  p.now += 1'000;
  Effects back;
  p.core.Heartbeat(p.victim, FromMs(p.now), &back);
  CHECK(p.State() == v1::NODE_STATE_READY);
  CHECK(HasEvent(back, "NodeReturned", "before its replicas moved: they stay"));
  CHECK(Stops(back).empty());
  CHECK(p.R().node == p.victim);
  CHECK(p.R().state == v1::REPLICA_STATE_RUNNING);
  // The move it was waiting for is called off.
  Effects later = p.After(kMarginMs);
  CHECK(Launches(later).empty());
  CHECK(p.R().node == p.victim);

  // Its agent had fenced the replica: the exit says so, and the replica moves.
  v1::ReplicaExited fenced = ExitedSignal(p.run, 15);
  fenced.set_fenced(true);
  Effects exit;
  p.core.ReplicaExited(p.victim, fenced, FromMs(++p.now), &exit);
  REQUIRE(Launches(exit).size() == 1);
  CHECK(p.R().node != p.victim);
  CHECK(p.R().moves == 1);
  CHECK(p.R().charged_restarts == 0);
  CHECK(HasEvent(exit, "ReplicaExited", "was stopped by its agent's fence"));
  CHECK(View(p.core, p.id).state() == v1::JOB_STATE_RUNNING);
}

TEST_CASE("a node that registers again between LOST and the move keeps its replica") {
  Partition p;
  p.After(kLostMs);
  v1::KnownRun known;
  known.set_run_id(p.run);
  known.set_running(true);
  known.set_pid(100);
  Effects back;
  p.core.AgentRegistered(Reg(p.victim, 4, 4096, 0, {known}), FromMs(p.now + 500), &back);
  CHECK(p.State() == v1::NODE_STATE_READY);
  CHECK(Stops(back).empty());
  CHECK(Launches(p.After(kMarginMs)).empty());
  CHECK(p.R().node == p.victim);
  CHECK(p.R().state == v1::REPLICA_STATE_RUNNING);
}

TEST_CASE("a scheduler restarted between LOST and the move moves one margin after its first tick") {
  Partition p;
  p.After(kLostMs);
  REQUIRE(p.State() == v1::NODE_STATE_LOST);
  REQUIRE(p.R().node == p.victim);

  Core restored(Partition::Options());
  std::vector<Node> nodes;
  for (const char* n : {"node-a", "node-b", "node-c"}) nodes.push_back(*p.core.FindNode(n));
  absl::StatusOr<Job> job = JobFromProto(View(p.core, p.id));
  REQUIRE(job.ok());
  restored.Restore({*job}, nodes, {});
  Effects fx;
  for (const char* n : {"node-a", "node-b", "node-c"}) {
    if (n != p.victim) restored.AgentRegistered(Reg(n), FromMs(p.now), &fx);
  }
  const int64_t first = p.now + 60'000;
  restored.Tick(FromMs(first), &fx);
  CHECK(Launches(fx).empty());
  Effects moved;
  for (const char* n : {"node-a", "node-b", "node-c"}) {
    if (n != p.victim) restored.Heartbeat(n, FromMs(first + kMarginMs), &moved);
  }
  restored.Tick(FromMs(first + kMarginMs), &moved);
  CHECK(HasEvent(moved, "NodeFenced"));
  REQUIRE(Launches(moved).size() == 1);
  CHECK(restored.FindJob(p.id)->replicas[0].node != p.victim);
  CheckUsageOnExit(restored);
}

}  // namespace
}  // namespace trainctl::sched
