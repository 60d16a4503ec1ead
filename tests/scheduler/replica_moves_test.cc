// ReplicaMoves on its own: a recording fake stands in for the job lifecycle (LifecycleOps), so
// each test sees exactly what the part decided — a graceful stop first with the grace asked for,
// the target the placement pipeline picks (never the node the replica leaves), the re-dispatch
// handed to the lifecycle when no node has room (unless an elastic pool lets it wait), what a
// node that is gone takes with it, and the gang restart a move of one gang replica causes.
#include "scheduler/replica_moves.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/job_validation.h"
#include "tests/scheduler/fake_lifecycle_ops.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

struct Moving {
  JobTable jobs{7};
  NodeRegistry nodes{NodePolicy{}};
  ReplicaBinding binding{&nodes.book()};
  Timers timers;
  testing::FakeLifecycleOps ops;
  GangEpisodes gang{&ops, &nodes, &binding, &timers, absl::Seconds(1)};
  ReplicaMoves moves{&ops, &jobs, &nodes, &gang};
  Job* job = nullptr;
  absl::Time now = kT0;

  // node-a has the most room (8 cpu), then node-b (4), then node-c (2): the fake holds nothing
  // on them. chief-0 and worker-0 (1 cpu each) run on node-a in attempt 1, with a stop grace
  // period of 12s.
  explicit Moving(v1::RestartScope scope = v1::RESTART_SCOPE_REPLICA) {
    Effects fx;
    nodes.Register(testing::Reg("node-a", 8), now, &fx);
    nodes.Register(testing::Reg("node-b", 4), now, &fx);
    nodes.Register(testing::Reg("node-c", 2), now, &fx);
    v1::JobSpec spec = testing::Spec(1);
    spec.mutable_scheduling()->set_restart_scope(scope);
    ApplyDefaults(&spec);
    Job j;
    j.id = "job-1";
    j.project = "default";
    j.policy = RetryPolicy::ForJob(spec);
    j.policy.stop_grace_ms = 12'000;
    j.spec = spec;
    j.state = v1::JOB_STATE_RUNNING;
    j.start_time = now;
    Attempt a;
    a.number = 1;
    a.nodes = {"node-a"};
    j.attempts.push_back(a);
    int rank = 0;
    for (const char* name : {"chief-0", "worker-0"}) {
      Replica r;
      r.name = name;
      r.pool = rank == 0 ? "chief" : "worker";
      r.rank = rank++;
      r.need = Res::FromProto(spec.worker_pools(0).resources());
      r.node = "node-a";
      r.state = v1::REPLICA_STATE_RUNNING;
      r.pid = 100 + rank;
      j.replicas.push_back(std::move(r));
    }
    job = jobs.Insert(std::move(j));
    jobs.MarkActive(*job);
  }
  Replica* R(const std::string& name) { return job->FindReplica(name); }
  // Every node but `keep` goes away.
  void DisconnectAllBut(const std::string& keep) {
    Effects fx;
    for (const char* n : {"node-a", "node-b", "node-c"}) {
      if (n != keep) nodes.Disconnect(n, now, &fx);
    }
  }
};

TEST_CASE("ReplicaMoves: a running replica is stopped gracefully first, with the grace asked for") {
  Moving m;
  Effects fx;
  m.moves.Move(m.job, m.R("chief-0"), MoveCause::kDrain, "node node-a is draining: upgrade",
               absl::Seconds(30), m.now, &fx);
  REQUIRE(m.ops.stops.size() == 1);
  CHECK(m.ops.stops[0].replica == "chief-0");
  CHECK(m.ops.stops[0].grace == absl::Seconds(30));
  CHECK(m.ops.stops[0].reason == "node node-a is draining: upgrade");
  CHECK(m.R("chief-0")->state == v1::REPLICA_STATE_STOPPING);
  CHECK(m.R("chief-0")->move_cause == MoveCause::kDrain);
  CHECK(m.R("chief-0")->node == "node-a");  // it moves once its process stopped
  CHECK(m.ops.nodes_set.empty());
  CHECK(m.ops.launched.empty());
  CHECK(testing::HasEvent(fx, "ReplicaStopping", "stopping it gracefully to move it"));

  // No grace asked for: the job's stopGracePeriod.
  m.moves.Move(m.job, m.R("worker-0"), MoveCause::kUnhealthy, "node node-a failed its check",
               std::nullopt, m.now, &fx);
  REQUIRE(m.ops.stops.size() == 2);
  CHECK(m.ops.stops[1].replica == "worker-0");
  CHECK(m.ops.stops[1].grace == absl::Seconds(12));
}

TEST_CASE("ReplicaMoves: the target is the best other node, never the one the replica leaves") {
  Moving m;
  const Replica& chief = *m.R("chief-0");
  // SPREAD: the node with the most room, node-a, is the one it leaves.
  CHECK(m.moves.MoveTarget(*m.job, chief, "node-a", "node-a", m.now) == "node-b");
  // From elsewhere, node-a is the best.
  CHECK(m.moves.MoveTarget(*m.job, chief, "node-b", "node-b", m.now) == "node-a");
  // Only the node it leaves has room: none, and why.
  m.DisconnectAllBut("node-a");
  std::string no_room;
  CHECK(m.moves.MoveTarget(*m.job, chief, "node-a", "node-a", m.now, &no_room).empty());
  CHECK_THAT(no_room, Catch::StartsWith("needs 1 cpu, 100 MiB, 0 gpus"));
  CHECK_THAT(no_room, Catch::Contains("node-b: not connected"));
}

TEST_CASE("ReplicaMoves: once stopped, the replica starts on its target as a new run") {
  Moving m;
  Effects fx;
  Replica* chief = m.R("chief-0");
  m.moves.Move(m.job, chief, MoveCause::kDrain, "node node-a is draining: upgrade", std::nullopt,
               m.now, &fx);
  m.moves.ContinueMove(m.job, chief, m.now, &fx);
  CHECK(m.ops.nodes_set == std::vector<std::pair<std::string, std::string>>{{"chief-0", "node-b"}});
  CHECK(chief->node == "node-b");
  CHECK(m.ops.launched == std::vector<std::string>{"chief-0"});
  CHECK(chief->restart_count == 1);
  CHECK(chief->moves == 1);
  CHECK_FALSE(chief->moving());
  CHECK(m.job->current()->nodes == std::vector<std::string>{"node-a", "node-b"});
  CHECK(m.ops.redispatched.empty());
  CHECK(testing::HasEvent(fx, "ReplicaStopped", "process stopped to move"));
  CHECK(testing::HasEvent(fx, "ReplicaMoved", "moved from node-a to node-b"));
  CHECK(testing::HasEvent(fx, "ReplicaMoved", "not charged to its restart budget"));
}

TEST_CASE("ReplicaMoves: with no other node with room, the job goes back for re-dispatch") {
  Moving m;
  Effects fx;
  Replica* chief = m.R("chief-0");
  m.DisconnectAllBut("node-a");
  m.moves.Move(m.job, chief, MoveCause::kDrain, "node node-a is draining: upgrade", std::nullopt,
               m.now, &fx);
  m.moves.ContinueMove(m.job, chief, m.now, &fx);
  // The elastic pools were asked first, then the retry engine's answer was handed on.
  REQUIRE(m.ops.waits.size() == 1);
  CHECK(m.ops.waits[0].first == "chief-0");
  REQUIRE(m.ops.redispatched.size() == 1);
  const RetryDecision& d = m.ops.redispatched[0];
  CHECK(d.action == Decision::kRedispatch);  // a drain's move never fails the job
  CHECK(d.error.replica == "chief-0");
  CHECK(d.error.node == "node-a");
  CHECK_THAT(d.error.message, Catch::Contains("no other healthy node has room"));
  REQUIRE(fx.tally.failures.size() == 1);
  CHECK(fx.tally.failures[0].action == Decision::kRedispatch);
  CHECK_FALSE(chief->moving());
  CHECK(chief->node == "node-a");  // never placed where it had to leave
  CHECK(m.ops.nodes_set.empty());
  CHECK(m.ops.launched.empty());
}

TEST_CASE("ReplicaMoves: an elastic pool that lets the replica wait keeps the job") {
  Moving m;
  Effects fx;
  m.ops.wait_for_room = true;
  m.DisconnectAllBut("node-a");
  Replica* worker = m.R("worker-0");
  m.moves.Move(m.job, worker, MoveCause::kUnhealthy, "node node-a failed its check", std::nullopt,
               m.now, &fx);
  m.moves.ContinueMove(m.job, worker, m.now, &fx);
  REQUIRE(m.ops.waits.size() == 1);
  CHECK_THAT(m.ops.waits[0].second, Catch::StartsWith("needs 1 cpu"));
  CHECK(m.ops.redispatched.empty());
  CHECK(fx.tally.failures.empty());
  CHECK(worker->moving());
}

TEST_CASE("ReplicaMoves: a node that is gone: its runs are stale and its replicas move at once") {
  Moving m;
  Effects fx;
  const std::string chief_run = m.job->RunIdOf(*m.R("chief-0"));
  const std::string worker_run = m.job->RunIdOf(*m.R("worker-0"));
  m.moves.MoveReplicasOff("node-a", MoveCause::kLost, "node node-a was lost", std::nullopt,
                          /*node_gone=*/true, m.now, &fx);
  CHECK(m.ops.stops.empty());  // nothing to stop: the processes are out of reach
  CHECK(m.nodes.Find("node-a")->stale_runs == std::set<std::string>{chief_run, worker_run});
  CHECK(m.ops.launched == std::vector<std::string>{"chief-0", "worker-0"});
  for (const Replica& r : m.job->replicas) {
    INFO(r.name);
    CHECK(r.node == "node-b");
    CHECK(r.restart_count == 1);
    CHECK(r.moves == 1);
  }
}

TEST_CASE("ReplicaMoves: a node that is not gone: its replicas are stopped to move") {
  Moving m;
  Effects fx;
  m.moves.MoveReplicasOff("node-a", MoveCause::kDrain, "node node-a is draining", absl::Seconds(5),
                          /*node_gone=*/false, m.now, &fx);
  REQUIRE(m.ops.stops.size() == 2);
  CHECK(m.ops.stops[0].grace == absl::Seconds(5));
  CHECK(m.ops.stops[1].grace == absl::Seconds(5));
  CHECK(m.nodes.Find("node-a")->stale_runs.empty());
  CHECK(m.ops.launched.empty());
  // A second call does not stop them again.
  m.moves.MoveReplicasOff("node-a", MoveCause::kDrain, "node node-a is draining", absl::Seconds(5),
                          /*node_gone=*/false, m.now, &fx);
  CHECK(m.ops.stops.size() == 2);
}

TEST_CASE("ReplicaMoves: a stop in flight on a node that is gone is over at once") {
  Moving m;
  Effects fx;
  // chief-0 was stopping to move; then its node is gone: its move goes on now.
  m.moves.Move(m.job, m.R("chief-0"), MoveCause::kDrain, "node node-a is draining", std::nullopt,
               m.now, &fx);
  m.moves.MoveReplicasOff("node-a", MoveCause::kLost, "node node-a was lost", std::nullopt,
                          /*node_gone=*/true, m.now, &fx);
  CHECK(m.ops.launched == std::vector<std::string>{"chief-0", "worker-0"});
  CHECK(m.R("chief-0")->node == "node-b");
  CHECK(m.ops.finish_cancels == 0);

  // A cancelled job's stops in flight: the replicas are STOPPED, and the lifecycle may end it.
  Moving c;
  c.job->state = v1::JOB_STATE_CANCELLING;
  for (Replica& r : c.job->replicas) r.state = v1::REPLICA_STATE_STOPPING;
  c.moves.MoveReplicasOff("node-a", MoveCause::kLost, "node node-a was lost", std::nullopt,
                          /*node_gone=*/true, c.now, &fx);
  CHECK(c.R("chief-0")->state == v1::REPLICA_STATE_STOPPED);
  CHECK(c.R("worker-0")->state == v1::REPLICA_STATE_STOPPED);
  CHECK(c.R("chief-0")->message == "gone with node node-a");
  CHECK(c.ops.finish_cancels == 2);
  CHECK(c.ops.launched.empty());
}

TEST_CASE("ReplicaMoves: moving one replica of a gang restarts the gang, charging nothing") {
  Moving m(v1::RESTART_SCOPE_GANG);
  REQUIRE(GangEpisodes::IsGang(*m.job));
  Effects fx;
  Replica* worker = m.R("worker-0");
  m.moves.Move(m.job, worker, MoveCause::kUnhealthy, "node node-a failed its check", std::nullopt,
               m.now, &fx);
  CHECK(m.job->gang_restarting);
  REQUIRE(m.job->current()->gang_restarts.size() == 1);
  CHECK_FALSE(m.job->current()->gang_restarts[0].charged);
  CHECK(testing::HasEvent(fx, "GangRestarting", "a move: not charged"));
  // The peer stops for the restart, the moving replica to move.
  CHECK(m.ops.stopped == std::vector<std::string>{"chief-0", "worker-0"});
  // Once stopped, the moved replica waits on its new node to start with the others.
  m.moves.ContinueMove(m.job, worker, m.now, &fx);
  CHECK(worker->node == "node-b");
  CHECK(worker->state == v1::REPLICA_STATE_RESTARTING);
  CHECK(m.ops.launched.empty());
}

}  // namespace
}  // namespace trainctl::sched
