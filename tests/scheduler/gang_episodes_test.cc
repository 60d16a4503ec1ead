// GangEpisodes on its own: a recording fake stands in for the job lifecycle (LifecycleOps), so
// each test sees exactly what the part asked for — which failure is the root cause and which its
// consequences, the settle wait of a user error, which replicas a gang restart stops, and that
// the gang starts again only once every replica has stopped and the backoff has passed.
#include "scheduler/gang_episodes.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/job_validation.h"
#include "tests/scheduler/fake_lifecycle_ops.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

struct Episode {
  NodeRegistry nodes{NodePolicy{}};
  ReplicaBinding binding{&nodes.book()};
  Timers timers;
  testing::FakeLifecycleOps ops;
  GangEpisodes gang{&ops, &nodes, &binding, &timers, absl::Seconds(1)};
  Job job;
  absl::Time now = kT0;

  // chief-0 on node-a, worker-0 and worker-1 on node-b, all RUNNING in attempt 1; a GANG job
  // with a 3s settle window.
  Episode() {
    Effects fx;
    for (const char* n : {"node-a", "node-b"}) nodes.Register(testing::Reg(n), now, &fx);
    v1::JobSpec spec = testing::Spec(2);
    spec.mutable_scheduling()->set_restart_scope(v1::RESTART_SCOPE_GANG);
    ApplyDefaults(&spec);
    job.id = "job-1";
    job.policy = RetryPolicy::ForJob(spec);
    job.policy.gang = true;
    job.policy.settle_window_ms = 3000;
    job.spec = spec;
    job.state = v1::JOB_STATE_RUNNING;
    Attempt a;
    a.number = 1;
    job.attempts.push_back(a);
    int rank = 0;
    for (const char* name : {"chief-0", "worker-0", "worker-1"}) {
      Replica r;
      r.name = name;
      r.pool = rank == 0 ? "chief" : "worker";
      r.rank = rank++;
      r.node = rank == 1 ? "node-a" : "node-b";
      r.state = v1::REPLICA_STATE_RUNNING;
      job.replicas.push_back(std::move(r));
    }
  }
  Replica* R(const std::string& name) { return job.FindReplica(name); }
  // `name` ended with `code` at `at`, as RecordExit leaves it.
  Failure Exit(const std::string& name, int code, absl::Time at) {
    Replica* r = R(name);
    r->exit_code = code;
    r->end_time = at;
    Failure f;
    f.report = testing::ExitedCode(job.RunIdOf(*r), code);
    f.report.set_end_time_ms(ToMs(at));
    return f;
  }
};

TEST_CASE("GangEpisodes: a gang is a GANG job of more than one replica") {
  Episode g;
  CHECK(GangEpisodes::IsGang(g.job));
  g.job.replicas.resize(1);
  CHECK_FALSE(GangEpisodes::IsGang(g.job));
  g.job.replicas.resize(2);
  g.job.policy.gang = false;
  CHECK_FALSE(GangEpisodes::IsGang(g.job));
}

TEST_CASE("GangEpisodes: a user error settles first, and is decided once the window passes") {
  Episode g;
  Effects fx;
  g.gang.RunEnd(&g.job, g.R("worker-0"), g.Exit("worker-0", 1, g.now), g.now, &fx);
  CHECK(g.R("worker-0")->state == v1::REPLICA_STATE_SETTLING);
  CHECK(g.ops.applied.empty());
  CHECK(testing::HasEvent(fx, "ReplicaExited", "settle window"));
  REQUIRE(g.timers.next().has_value());
  CHECK(*g.timers.next() == g.now + absl::Seconds(3));

  g.gang.DecideSettled(&g.job, g.now + absl::Seconds(1), &fx);  // not yet
  CHECK(g.ops.applied.empty());
  g.gang.DecideSettled(&g.job, g.now + absl::Seconds(3), &fx);
  REQUIRE(g.ops.applied.size() == 1);
  CHECK(g.ops.applied[0].first == "worker-0");
}

TEST_CASE("GangEpisodes: an earlier peer failure reported later is the root cause") {
  Episode g;
  Effects fx;
  // worker-0 exits 1 (a user error: a broken collective); chief-0's crash 500ms before it comes
  // in afterwards, within the settle window.
  g.gang.RunEnd(&g.job, g.R("worker-0"), g.Exit("worker-0", 1, g.now), g.now, &fx);
  const absl::Time later = g.now + absl::Seconds(1);
  g.gang.RunEnd(&g.job, g.R("chief-0"), g.Exit("chief-0", 134, g.now - absl::Milliseconds(500)),
                later, &fx);
  REQUIRE(g.ops.applied.size() == 1);
  CHECK(g.ops.applied[0].first == "chief-0");
  CHECK(g.ops.applied[0].second == Decision::kRestartGang);
  REQUIRE(g.job.root_cause.has_value());
  CHECK(g.job.root_cause->replica == "chief-0");
  REQUIRE(g.job.root_cause->consequences.size() == 1);
  CHECK(g.job.root_cause->consequences[0].rfind("worker-0 ", 0) == 0);
  CHECK(testing::HasEvent(fx, "ReplicaExited", "a consequence of chief-0"));
}

TEST_CASE("GangEpisodes: a restart stops the others, then relaunches all once due") {
  Episode g;
  Effects fx;
  g.gang.RunEnd(&g.job, g.R("chief-0"), g.Exit("chief-0", 134, g.now), g.now, &fx);
  REQUIRE(g.ops.applied.size() == 1);
  RetryDecision d;
  d.action = Decision::kRestartGang;
  d.delay = absl::Seconds(2);
  d.summary = "exited with code 134";
  g.R("chief-0")->state = v1::REPLICA_STATE_FAILED;
  g.gang.Restart(&g.job, g.R("chief-0"), d, g.now, &fx);
  CHECK(g.job.gang_restarting);
  CHECK(g.ops.stopped == std::vector<std::string>{"worker-0", "worker-1"});
  CHECK(g.R("chief-0")->state == v1::REPLICA_STATE_RESTARTING);
  CHECK(g.R("worker-0")->state == v1::REPLICA_STATE_STOPPING);
  REQUIRE(g.job.current()->gang_restarts.size() == 1);
  CHECK(testing::HasEvent(fx, "GangRestarting"));

  // One stopped: the gang waits for the other.
  v1::ReplicaExited stopped = testing::ExitedSignal(g.job.RunIdOf(*g.R("worker-0")), 15);
  stopped.set_stopped_by_request(true);
  g.gang.ConfirmStop(&g.job, g.R("worker-0"), stopped, g.now, &fx);
  CHECK(g.R("worker-0")->state == v1::REPLICA_STATE_RESTARTING);
  CHECK(g.ops.launched.empty());
  // Both stopped, but the backoff has not passed: a wakeup at its end.
  g.gang.ConfirmStop(&g.job, g.R("worker-1"), stopped, g.now, &fx);
  CHECK(g.ops.launched.empty());
  CHECK(*g.timers.next() == g.now + absl::Seconds(2));
  // Due: every replica starts again as generation 1, with fresh ports, after growing back.
  g.gang.MaybeRelaunch(&g.job, g.now + absl::Seconds(2), &fx);
  CHECK(g.ops.launched == std::vector<std::string>{"chief-0", "worker-0", "worker-1"});
  CHECK(g.ops.grow_backs == 1);
  CHECK_FALSE(g.job.gang_restarting);
  CHECK(g.job.gang_generation == 1);
  CHECK_FALSE(g.job.root_cause.has_value());
  CHECK(g.R("chief-0")->port != 0);
  CHECK(testing::HasEvent(fx, "GangStarting"));
}

TEST_CASE("GangEpisodes: a replica whose node no longer keeps replicas moves before the relaunch") {
  Episode g;
  Effects fx;
  for (Replica& r : g.job.replicas) r.state = v1::REPLICA_STATE_RESTARTING;
  g.job.gang_restarting = true;
  g.nodes.Disconnect("node-a", g.now, &fx);
  g.gang.MaybeRelaunch(&g.job, g.now, &fx);
  REQUIRE(g.ops.moved.size() == 1);
  CHECK(g.ops.moved[0] == std::make_pair(std::string("chief-0"), false));
  CHECK(g.ops.launched.empty());
  CHECK(g.job.gang_restarting);
}

}  // namespace
}  // namespace trainctl::sched
