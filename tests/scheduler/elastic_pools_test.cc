// ElasticPools on its own: a recording fake stands in for the job lifecycle (LifecycleOps), with
// the real ReplicaMoves and GangEpisodes over it, so each test sees what the part decided — a
// moving replica of an elastic pool waits for room only while its pool keeps its minimum, a wait
// that finds room moves the replica, one that ends shrinks the pool (REMOVED, ranks dense, a
// Resize), removed replicas come back where there is room, and when ResizeJob may grow a job.
#include "scheduler/elastic_pools.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/elastic.h"
#include "scheduler/job_validation.h"
#include "tests/scheduler/fake_lifecycle_ops.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

struct Pools {
  JobTable jobs{7};
  NodeRegistry nodes{NodePolicy{}};
  ReplicaBinding binding{&nodes.book()};
  Timers timers;
  testing::FakeLifecycleOps ops;
  GangEpisodes gang{&ops, &nodes, &binding, &timers, absl::Seconds(1)};
  ReplicaMoves moves{&ops, &jobs, &nodes, &gang};
  ElasticPools elastic{&ops, &moves, &gang, &binding, &timers};
  Job* job = nullptr;
  absl::Time now = kT0;

  // A RUNNING GANG job on four 4-cpu nodes: chief-0 on node-a, worker-0..2 on node-b..d, 4 cpus
  // each, the worker pool elastic with minReplicas `min` and an elasticWait of 60s. Each replica
  // holds its node (so no node has room for another), except one on a node that is gone.
  explicit Pools(int min = 2) {
    Effects fx;
    for (const char* n : {"node-a", "node-b", "node-c", "node-d"}) {
      nodes.Register(testing::Reg(n), now, &fx);
    }
    v1::JobSpec spec = testing::Spec(3, /*cpu=*/4);
    spec.mutable_worker_pools(1)->mutable_elastic()->set_min_replicas(min);
    spec.mutable_scheduling()->set_restart_scope(v1::RESTART_SCOPE_GANG);
    ApplyDefaults(&spec);
    Job j;
    j.id = "job-1";
    j.project = "default";
    j.policy = RetryPolicy::ForJob(spec);
    j.policy.elastic_wait_ms = 60'000;
    j.spec = spec;
    j.state = v1::JOB_STATE_RUNNING;
    j.start_time = now;
    Attempt a;
    a.number = 1;
    a.nodes = {"node-a", "node-b", "node-c", "node-d"};
    j.attempts.push_back(a);
    const char* names[] = {"chief-0", "worker-0", "worker-1", "worker-2"};
    const char* on[] = {"node-a", "node-b", "node-c", "node-d"};
    for (int i = 0; i < 4; ++i) {
      Replica r;
      r.name = names[i];
      r.pool = i == 0 ? "chief" : "worker";
      r.index = i == 0 ? 0 : i - 1;
      r.rank = i;
      r.need = Res::FromProto(spec.worker_pools(0).resources());
      r.node = on[i];
      r.state = v1::REPLICA_STATE_RUNNING;
      j.replicas.push_back(std::move(r));
    }
    job = jobs.Insert(std::move(j));
    jobs.MarkActive(*job);
    for (Replica& r : job->replicas) binding.Bind(*job, &r);
  }
  Replica* R(const std::string& name) { return job->FindReplica(name); }

  // node-d was lost while the gang restarts: worker-2 failed there and must move; the others
  // wait RESTARTING on their nodes.
  void LoseNodeD() {
    Effects fx;
    nodes.Disconnect("node-d", now, &fx);
    binding.Unbind(*R("worker-2"));
    job->gang_restarting = true;
    for (Replica& r : job->replicas) {
      r.state = v1::REPLICA_STATE_RESTARTING;
      r.next_start_time = now;
    }
    Replica* w = R("worker-2");
    w->state = v1::REPLICA_STATE_FAILED;
    w->move_cause = MoveCause::kLost;
    w->move_reason = "node node-d was lost";
  }
  // worker-2 was removed: the pool runs 2 of its 3 replicas, and the job RUNNING.
  void Shrunk() {
    Effects fx;
    nodes.Disconnect("node-d", now, &fx);
    binding.Unbind(*R("worker-2"));
    R("worker-2")->state = v1::REPLICA_STATE_REMOVED;
    RenumberRanks(job);
  }
  // A new empty node with room for one replica.
  void AddNodeE() {
    Effects fx;
    nodes.Register(testing::Reg("node-e"), now, &fx);
  }
};

TEST_CASE("ElasticPools: a moving replica waits for room, then its pool shrinks without it") {
  Pools p;
  p.LoseNodeD();
  Effects fx;
  Replica* w = p.R("worker-2");
  REQUIRE(p.elastic.WaitForRoom(p.job, w, "no room", /*new_run=*/true, p.now, &fx));
  CHECK(w->state == v1::REPLICA_STATE_PENDING);
  REQUIRE(w->elastic_wait_until.has_value());
  CHECK(*w->elastic_wait_until == p.now + absl::Seconds(60));
  CHECK(w->restart_count == 1);
  CHECK(*p.timers.next() == p.now + absl::Seconds(60));
  CHECK(testing::HasEvent(fx, "ReplicaWaitingForRoom", "minReplicas 2"));

  // Halfway: still no room, still waiting.
  p.elastic.Step(p.job, p.now + absl::Seconds(30), &fx);
  CHECK(w->state == v1::REPLICA_STATE_PENDING);
  CHECK(p.ops.nodes_set.empty());

  // The wait is over: the pool shrinks, the ranks stay dense, and the gang starts again smaller.
  const absl::Time end = p.now + absl::Seconds(60);
  p.elastic.Step(p.job, end, &fx);
  CHECK(w->state == v1::REPLICA_STATE_REMOVED);
  CHECK(w->rank == -1);
  CHECK_FALSE(w->elastic_wait_until.has_value());
  CHECK_FALSE(w->moving());
  CHECK(WorldSize(*p.job) == 3);
  CHECK(p.R("worker-1")->rank == 2);
  REQUIRE(p.job->current()->resizes.size() == 1);
  const Resize& z = p.job->current()->resizes[0];
  CHECK(z.pool == "worker");
  CHECK(z.from_replicas == 3);
  CHECK(z.to_replicas == 2);
  CHECK(z.replicas == std::vector<std::string>{"worker-2"});
  CHECK(z.world_size == 3);
  CHECK(testing::HasEvent(fx, "JobResized", "pool worker shrank from 3 to 2 replicas"));
  CHECK(p.ops.launched == std::vector<std::string>{"chief-0", "worker-0", "worker-1"});
  CHECK(p.ops.grow_backs == 1);
}

TEST_CASE("ElasticPools: a pool at its minimum, or a replica outside a gang restart, cannot wait") {
  Pools at_min(/*min=*/3);
  at_min.LoseNodeD();
  Effects fx;
  Replica* w = at_min.R("worker-2");
  CHECK_FALSE(at_min.elastic.WaitForRoom(at_min.job, w, "no room", true, at_min.now, &fx));
  CHECK(w->state == v1::REPLICA_STATE_FAILED);
  CHECK(w->restart_count == 0);
  CHECK_FALSE(w->elastic_wait_until.has_value());
  CHECK(fx.events.empty());

  Pools not_restarting;
  not_restarting.LoseNodeD();
  not_restarting.job->gang_restarting = false;
  CHECK_FALSE(not_restarting.elastic.WaitForRoom(not_restarting.job, not_restarting.R("worker-2"),
                                                 "no room", true, not_restarting.now, &fx));

  // A second replica may wait only while the pool keeps its minimum without both.
  Pools two;
  two.LoseNodeD();
  REQUIRE(two.elastic.WaitForRoom(two.job, two.R("worker-2"), "no room", true, two.now, &fx));
  Replica* w1 = two.R("worker-1");
  w1->state = v1::REPLICA_STATE_FAILED;
  w1->move_cause = MoveCause::kLost;
  CHECK_FALSE(two.elastic.WaitForRoom(two.job, w1, "no room", true, two.now, &fx));
}

TEST_CASE("ElasticPools: a waiting replica that finds room moves there instead") {
  Pools p;
  p.LoseNodeD();
  Effects fx;
  Replica* w = p.R("worker-2");
  REQUIRE(p.elastic.WaitForRoom(p.job, w, "no room", /*new_run=*/true, p.now, &fx));
  p.AddNodeE();
  p.elastic.Step(p.job, p.now + absl::Seconds(10), &fx);
  CHECK(p.ops.nodes_set ==
        std::vector<std::pair<std::string, std::string>>{{"worker-2", "node-e"}});
  CHECK(w->node == "node-e");
  CHECK_FALSE(w->elastic_wait_until.has_value());
  CHECK(w->restart_count == 1);  // the run it waited with
  CHECK(p.job->current()->resizes.empty());
  CHECK(WorldSize(*p.job) == 4);
  CHECK(testing::HasEvent(fx, "ReplicaMoved", "moved from node-d to node-e"));
}

TEST_CASE("ElasticPools: removed replicas grow back where there is room, and only there") {
  Pools p;
  p.Shrunk();
  Effects fx;
  p.elastic.GrowBack(p.job, p.now, &fx);  // no room
  CHECK(p.R("worker-2")->state == v1::REPLICA_STATE_REMOVED);
  CHECK(p.ops.nodes_set.empty());
  CHECK(p.job->current()->resizes.empty());

  p.AddNodeE();
  p.elastic.GrowBack(p.job, p.now, &fx);
  Replica* w = p.R("worker-2");
  CHECK(w->node == "node-e");
  CHECK(w->state == v1::REPLICA_STATE_RESTARTING);
  CHECK(w->next_start_time == p.now);
  CHECK(w->rank == 3);
  CHECK(WorldSize(*p.job) == 4);
  CHECK(p.job->current()->nodes.back() == "node-e");
  REQUIRE(p.job->current()->resizes.size() == 1);
  CHECK(p.job->current()->resizes[0].from_replicas == 2);
  CHECK(p.job->current()->resizes[0].to_replicas == 3);
  CHECK(testing::HasEvent(fx, "JobResized", "pool worker grew from 2 to 3 replicas"));
}

TEST_CASE("ElasticPools: RequestGrow says why it cannot, else restarts the gang to grow it") {
  Pools p;
  Effects fx;
  // Every replica runs.
  CHECK_THAT(std::string(p.elastic.RequestGrow(p.job, "alice", p.now, &fx).message()),
             Catch::Contains("already runs all 4 replicas"));
  p.Shrunk();
  // No node has room for worker-2.
  const absl::Status no_room = p.elastic.RequestGrow(p.job, "alice", p.now, &fx);
  CHECK(no_room.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(no_room.message()), Catch::Contains("no node has room"));
  // Not RUNNING.
  p.job->state = v1::JOB_STATE_PENDING;
  CHECK_THAT(std::string(p.elastic.RequestGrow(p.job, "alice", p.now, &fx).message()),
             Catch::Contains("only a RUNNING job can be resized"));
  p.job->state = v1::JOB_STATE_RUNNING;
  CHECK(p.ops.stops.empty());

  p.AddNodeE();
  REQUIRE(p.elastic.RequestGrow(p.job, "alice", p.now, &fx).ok());
  CHECK(p.job->gang_restarting);
  REQUIRE(p.job->current()->gang_restarts.size() == 1);
  CHECK(p.job->current()->gang_restarts[0].matched_rule == "resize");
  CHECK(p.ops.stopped == std::vector<std::string>{"chief-0", "worker-0", "worker-1"});
  CHECK(testing::HasEvent(fx, "GangRestarting", "a resize requested by alice"));
  // Restarting already: refused.
  CHECK_THAT(std::string(p.elastic.RequestGrow(p.job, "alice", p.now, &fx).message()),
             Catch::Contains("restarting already"));
}

TEST_CASE("ElasticPools: a new attempt runs every replica of the spec again") {
  Pools p;
  p.Shrunk();
  p.R("worker-1")->elastic_wait_until = p.now;
  p.elastic.RestoreWorld(p.job);
  CHECK(p.R("worker-2")->state == v1::REPLICA_STATE_PENDING);
  CHECK(p.R("worker-2")->rank == 3);
  CHECK_FALSE(p.R("worker-1")->elastic_wait_until.has_value());
  CHECK(WorldSize(*p.job) == 4);
}

}  // namespace
}  // namespace trainctl::sched
