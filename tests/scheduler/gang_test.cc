// GANG jobs through the core with a fake clock: a restartable failure restarts every replica
// together, charged once to its root cause; peers' failures that follow are consequences; a
// user error waits the settle window for an earlier failure of a peer.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "common/time_util.h"
#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

// A core with two nodes and a placed, running GANG job of a chief and `workers` workers.
struct Gang {
  Core core;
  int64_t now = 1'000'000;
  std::string id;
  ~Gang() { CheckUsageOnExit(core); }

  static CoreOptions Options(int64_t lost_timeout_ms) {
    CoreOptions o = TestOptions(5);
    if (lost_timeout_ms > 0) o.nodes.lost_timeout = absl::Milliseconds(lost_timeout_ms);
    return o;
  }

  explicit Gang(int workers = 1, const std::function<void(v1::JobSpec*)>& edit = nullptr,
                int64_t lost_timeout_ms = 0)
      : core(Options(lost_timeout_ms)) {
    Effects fx;
    core.AgentRegistered(Reg("node-a"), FromMs(now), &fx);
    core.AgentRegistered(Reg("node-b"), FromMs(now), &fx);
    core.AgentRegistered(Reg("node-c"), FromMs(now), &fx);
    v1::JobSpec spec = Spec(workers);
    if (edit) edit(&spec);
    id = (*core.SubmitJob(spec, FromMs(now), &fx))->id;
    core.Schedule(FromMs(now), &fx);
    first_launches = Launches(fx);
    StartAll(first_launches);
    REQUIRE(Job().state == v1::JOB_STATE_RUNNING);
  }
  std::vector<v1::LaunchReplica> first_launches;

  const sched::Job& Job() { return *core.FindJob(id); }
  const Replica& R(const std::string& name) { return *Job().FindReplica(name); }
  std::string Run(const std::string& name) { return Job().RunIdOf(R(name)); }

  void StartAll(const std::vector<v1::LaunchReplica>& launches) {
    for (const v1::LaunchReplica& l : launches) {
      Effects fx;
      core.ReplicaStarted(R(l.replica_name()).node, Started(l.run_id()), FromMs(now), &fx);
    }
  }
  // `name` exits with `code` at `exit_ms` (its agent's clock); reported now.
  Effects Exit(const std::string& name, int code, int64_t exit_ms = 0) {
    v1::ReplicaExited e = ExitedCode(Run(name), code);
    e.set_end_time_ms(exit_ms > 0 ? exit_ms : now);
    Effects fx;
    core.ReplicaExited(R(name).node, e, FromMs(now), &fx);
    return fx;
  }
  // The agent confirms every stop it was sent: the process died of the SIGTERM.
  Effects ConfirmStops(const Effects& sent) { return testing::ConfirmStops(core, id, sent, now); }
  Effects Tick() {
    Effects fx;
    core.Tick(FromMs(now), &fx);
    core.Schedule(FromMs(now), &fx);
    return fx;
  }
};

// A failed periodic check: no new work on its node until one passes.
v1::CheckRun FailedCheck(int64_t now_ms) {
  v1::CheckRun run;
  run.set_phase("periodic");
  run.set_passed(false);
  *run.mutable_time() = MsToTimestamp(now_ms);
  return run;
}

TEST_CASE("GANG is the default for more than one replica, REPLICA for one") {
  Core core{TestOptions(1)};
  Effects fx;
  const sched::Job* two = *core.SubmitJob(Spec(1), FromMs(1), &fx);
  const sched::Job* one = *core.SubmitJob(Spec(0), FromMs(1), &fx);
  CHECK(two->spec.scheduling().restart_scope() == v1::RESTART_SCOPE_GANG);
  CHECK(two->policy.gang);
  CHECK(one->spec.scheduling().restart_scope() == v1::RESTART_SCOPE_REPLICA);
  CHECK(two->spec.scheduling().settle_window().seconds() == 3);  // the server's default
  v1::JobSpec bad = Spec(1);
  bad.mutable_scheduling()->mutable_settle_window()->set_seconds(61);
  CHECK(core.SubmitJob(bad, FromMs(1), &fx).status().message() ==
        "scheduling.settleWindow must be between 0s and 60s, got 61s and 0ns");
}

TEST_CASE("a transient crash restarts the whole gang, charged once to the crashed replica") {
  Gang g(2);
  Effects crash = g.Exit("worker-0", 134);
  // Every survivor is stopped; nothing starts until all are gone.
  CHECK(Stops(crash).size() == 2);
  CHECK(Launches(crash).empty());
  CHECK(g.Job().gang_restarting);
  CHECK(g.R("worker-0").state == v1::REPLICA_STATE_RESTARTING);
  CHECK(g.R("chief-0").state == v1::REPLICA_STATE_STOPPING);
  CHECK(HasEvent(crash, "GangRestarting"));

  Effects stopped = g.ConfirmStops(crash);
  // The last stop starts every replica at once, as generation 1 (the first restart is at once).
  const std::vector<v1::LaunchReplica> launches = Launches(stopped);
  REQUIRE(launches.size() == 3);
  for (const v1::LaunchReplica& l : launches) {
    CHECK(l.env().at("TRAINCTL_GANG_GENERATION") == "1");
    CHECK(l.restart() == 1);  // a new run of every replica
    // A fresh rendezvous port: the old one may still be held by a dying process.
    CHECK(l.env().at("MASTER_PORT") != g.first_launches[0].env().at("MASTER_PORT"));
  }
  const sched::Job& job = g.Job();
  CHECK(!job.gang_restarting);
  CHECK(job.gang_generation == 1);
  CHECK(g.R("worker-0").charged_restarts == 1);
  CHECK(g.R("chief-0").charged_restarts == 0);
  CHECK(g.R("worker-1").charged_restarts == 0);
  CHECK(g.R("chief-0").node == "node-a");  // in place
  REQUIRE(job.attempts.size() == 1);
  REQUIRE(job.attempts[0].gang_restarts.size() == 1);
  const GangRestart& restart = job.attempts[0].gang_restarts[0];
  CHECK(restart.generation == 1);
  CHECK(restart.cause.replica == "worker-0");
  CHECK(restart.cause.failure_class == FailureClass::kTransient);
  CHECK(restart.matched_rule == "default: transient exit code 134");
  CHECK(restart.charged);
  CHECK(restart.cause.consequences.empty());  // the others died of the SIGTERM it sent
  g.StartAll(launches);
  CHECK(g.Job().state == v1::JOB_STATE_RUNNING);
}

TEST_CASE("a peer failing after the root cause is a consequence, not classified on its own") {
  Gang g(1);
  Effects crash = g.Exit("worker-0", 134);
  REQUIRE(Stops(crash).size() == 1);
  // chief-0's collective broke: it exits 1 on its own before the SIGTERM reaches it.
  Effects fx = g.Exit("chief-0", 1);
  CHECK(g.Job().state == v1::JOB_STATE_RUNNING);  // not the user's error
  REQUIRE(Launches(fx).size() == 2);              // the gang starts again
  const GangRestart& restart = g.Job().attempts[0].gang_restarts[0];
  REQUIRE(restart.cause.consequences.size() == 1);
  CHECK(restart.cause.consequences[0] == "chief-0 exited with status 1");
  CHECK(HasEvent(fx, "ReplicaExited"));
}

TEST_CASE("a consequence reported before its cause settles, then is attributed to the cause") {
  Gang g(1);
  const int64_t crash_ms = g.now;
  g.now += 500;
  // The consequence's report arrives first: it waits the settle window.
  Effects first = g.Exit("chief-0", 1, crash_ms + 300);
  CHECK(g.R("chief-0").state == v1::REPLICA_STATE_SETTLING);
  CHECK(g.Job().state == v1::JOB_STATE_RUNNING);
  CHECK(Stops(first).empty());
  // The cause's report, delayed less than the window, with the earlier exit time.
  g.now += 2000;
  Effects cause = g.Exit("worker-0", 134, crash_ms);
  CHECK(g.Job().state == v1::JOB_STATE_RUNNING);
  const GangRestart& restart = g.Job().attempts[0].gang_restarts[0];
  CHECK(restart.cause.replica == "worker-0");
  REQUIRE(restart.cause.consequences.size() == 1);
  CHECK(restart.cause.consequences[0] == "chief-0 exited with status 1");
  // Nothing left to stop: both are gone, so the gang starts again at once.
  CHECK(Launches(cause).size() == 2);
}

TEST_CASE("a user error alone fails the job once the settle window has passed") {
  Gang g(1);
  g.Exit("worker-0", 1);
  CHECK(g.R("worker-0").state == v1::REPLICA_STATE_SETTLING);
  g.now += 2999;
  g.Tick();
  CHECK(g.Job().state == v1::JOB_STATE_RUNNING);
  g.now += 1;
  Effects fx = g.Tick();
  CHECK(g.Job().state == v1::JOB_STATE_FAILED);
  CHECK(g.Job().error.replica == "worker-0");
  CHECK(g.Job().error.message ==
        "Replica worker-0 exited with a non-zero status of 1. Termination reason: Error.");
  CHECK(Stops(fx).size() == 1);  // chief-0
}

TEST_CASE("within the clock skew a failure that is not the user's is the root cause") {
  Gang g(1);
  const int64_t t = g.now;
  g.Exit("chief-0", 1, t);           // a user error first, by the agents' clocks
  g.Exit("worker-0", 134, t + 500);  // within 1s: simultaneous, and transient
  const GangRestart& restart = g.Job().attempts[0].gang_restarts[0];
  CHECK(restart.cause.replica == "worker-0");
  CHECK(restart.cause.consequences == std::vector<std::string>{"chief-0 exited with status 1"});
}

TEST_CASE("beyond the clock skew the earlier user error is the root cause") {
  Gang g(1);
  const int64_t t = g.now;
  g.now += 2500;
  g.Exit("chief-0", 1, t);
  g.Exit("worker-0", 134, t + 2000);  // two seconds later: a consequence
  const sched::Job& job = g.Job();
  CHECK(job.state == v1::JOB_STATE_FAILED);
  CHECK(job.error.replica == "chief-0");
  CHECK(job.error.consequences == std::vector<std::string>{"worker-0 exited with status 134"});
  REQUIRE(job.attempts.size() == 1);
  CHECK(job.attempts[0].replica == "chief-0");
  CHECK(job.attempts[0].consequences ==
        std::vector<std::string>{"worker-0 exited with status 134"});
}

TEST_CASE("gang restarts use the cause's backoff and budget, then retry the job") {
  Gang g(1, [](v1::JobSpec* s) { s->mutable_scheduling()->set_max_replica_restarts(2); });
  for (int i = 0; i < 2; ++i) {
    Effects crash = g.Exit("worker-0", 134);
    Effects stopped = g.ConfirmStops(crash);
    std::vector<v1::LaunchReplica> launches = Launches(stopped);
    if (i == 1) {
      // The second restart waits the restart backoff (1s).
      CHECK(launches.empty());
      g.now += 1000;
      launches = Launches(g.Tick());
    }
    REQUIRE(launches.size() == 2);
    g.StartAll(launches);
  }
  CHECK(g.R("worker-0").charged_restarts == 2);
  CHECK(g.Job().gang_generation == 2);
  // The third crash finds the budget used up: the whole job is retried, as today.
  Effects third = g.Exit("worker-0", 134);
  CHECK(g.Job().state == v1::JOB_STATE_QUEUED);
  CHECK(g.Job().attempts[0].decision == Decision::kRetryJob);
  CHECK(g.Job().attempts[0].gang_restarts.size() == 2);
}

TEST_CASE("draining a node restarts the whole gang, uncharged, the moved replica elsewhere") {
  Gang g(1);
  const std::string moving_from = g.R("worker-0").node;
  Effects fx;
  REQUIRE(g.core.DrainNode(moving_from, "kernel upgrade", absl::Milliseconds(0), FromMs(g.now), &fx)
              .ok());
  CHECK(Stops(fx).size() == 2);  // the moving replica and its peer
  CHECK(g.Job().gang_restarting);
  Effects stopped = g.ConfirmStops(fx);
  const std::vector<v1::LaunchReplica> launches = Launches(stopped);
  REQUIRE(launches.size() == 2);
  CHECK(g.R("worker-0").node != moving_from);
  CHECK(g.R("worker-0").moves == 1);
  CHECK(g.R("worker-0").charged_restarts == 0);
  CHECK(g.R("chief-0").charged_restarts == 0);
  const GangRestart& restart = g.Job().attempts[0].gang_restarts[0];
  CHECK(!restart.charged);
  CHECK(restart.cause.replica == "worker-0");
}

TEST_CASE("a lost node restarts the whole gang with its replica on another node") {
  Gang g(1, nullptr, /*lost_timeout_ms=*/10'000);
  const std::string lost = g.R("worker-0").node;
  Effects fx;
  g.now += 12'000;  // the lost timeout and its fence margin; only the other nodes were heard from
  for (const std::string n : {"node-a", "node-b", "node-c"}) {
    if (n != lost) g.core.Heartbeat(n, FromMs(g.now), &fx);
  }
  Effects tick = g.Tick();
  CHECK(g.Job().gang_restarting);
  CHECK(g.R("worker-0").node != lost);
  CHECK(g.R("worker-0").state == v1::REPLICA_STATE_RESTARTING);
  Effects stopped = g.ConfirmStops(tick);  // chief-0, stopped on its live node
  CHECK(Launches(stopped).size() == 2);
  CHECK(g.R("worker-0").charged_restarts == 0);
  CHECK(!g.Job().attempts[0].gang_restarts[0].charged);
}

TEST_CASE("a gang whose replica finds no room as the gang starts again launches none of it") {
  // Found by tests/fuzz/core_agent_fuzz: the chief had to leave its node as the gang started
  // again, found no room and failed the job, and the worker after it was launched regardless.
  Gang g(1, [](v1::JobSpec* spec) {
    spec->mutable_worker_pools(0)->mutable_resources()->set_cpu(4);  // a whole node
    spec->mutable_fault_tolerance()->set_job_retry_num(0);
  });
  const std::string chief_node = g.R("chief-0").node;
  const std::string worker_node = g.R("worker-0").node;
  const Effects crash = g.Exit("worker-0", 134);  // a crash: the gang restarts
  REQUIRE(g.R("chief-0").state == v1::REPLICA_STATE_STOPPING);
  Effects fx;
  // The chief's node fails a check (no new work there), and the third node goes away: the only
  // other node holds the worker, without room for a 4-cpu chief.
  g.core.CheckReported(chief_node, FailedCheck(g.now), FromMs(g.now), &fx);
  for (const std::string n : {"node-a", "node-b", "node-c"}) {
    if (n != chief_node && n != worker_node) g.core.AgentDisconnected(n, FromMs(g.now), &fx);
  }
  Effects stopped = g.ConfirmStops(crash);
  CHECK(g.Job().state == v1::JOB_STATE_FAILED);
  CHECK_THAT(g.Job().error.message, Catch::Contains("no other healthy node has room"));
  CHECK(Launches(stopped).empty());
  CHECK(g.R("worker-0").state != v1::REPLICA_STATE_STARTING);
}

TEST_CASE("a replica that ended and lost its place starts elsewhere when its gang restarts") {
  // Found by tests/fuzz/core_agent_fuzz: a worker that had exited 0 gave its place back, another
  // job took it, and the gang's restart put the worker back on its node regardless, holding
  // more than the node has.
  Gang g(2);
  const std::string done_node = g.R("worker-1").node;
  g.Exit("worker-1", 0);  // the job goes on; its place is free
  REQUIRE(g.R("worker-1").state == v1::REPLICA_STATE_SUCCEEDED);
  Effects fx;
  // A whole node's worth: only worker-1's old node has 4 cpu free.
  const std::string other = (*g.core.SubmitJob(Spec(0, /*cpu=*/4), FromMs(g.now), &fx))->id;
  g.core.Schedule(FromMs(g.now), &fx);
  REQUIRE(g.core.FindJob(other)->replicas[0].node == done_node);
  const Effects crash = g.Exit("worker-0", 134);  // the gang restarts
  CHECK(g.R("worker-1").node != done_node);
  CHECK(g.R("worker-1").state == v1::REPLICA_STATE_RESTARTING);
  CHECK(g.R("worker-1").moves == 1);
  Effects stopped = g.ConfirmStops(crash);
  CHECK(Launches(stopped).size() == 3);
  // No node holds more than it has.
  std::map<std::string, double> cpu;
  for (const auto& [id, job] : g.core.jobs()) {
    for (const Replica& r : job.replicas) {
      if (HoldsResources(r.state)) cpu[r.node] += r.need.cpu;
    }
  }
  for (const auto& [node, used] : cpu) CHECK(used <= g.core.FindNode(node)->allocatable.cpu);
}

TEST_CASE("a move that restarts the gang stops there when the restart ends the job") {
  // Found by tests/fuzz/core_agent_fuzz: the chief's move restarted the gang, the worker that had
  // ended found no room and failed the job, and the chief was then moved and launched anyway.
  Gang g(1, [](v1::JobSpec* spec) {
    spec->mutable_worker_pools(1)->mutable_resources()->set_cpu(4);  // a whole node
    spec->mutable_fault_tolerance()->set_job_retry_num(0);
  });
  const std::string chief_node = g.R("chief-0").node;
  g.Exit("worker-0", 0);  // the job goes on; the worker's node is free again
  Effects fx;
  for (int i = 0; i < 2; ++i) {  // both nodes without the chief, taken whole
    (void)g.core.SubmitJob(Spec(0, /*cpu=*/4), FromMs(g.now), &fx);
  }
  g.core.Schedule(FromMs(g.now), &fx);
  Effects isolated;
  g.core.CheckReported(chief_node, FailedCheck(g.now), FromMs(g.now), &isolated);
  CHECK(g.Job().state == v1::JOB_STATE_FAILED);
  CHECK_THAT(g.Job().error.message, Catch::Contains("Replica worker-0 had to leave"));
  for (const v1::LaunchReplica& l : Launches(isolated)) CHECK(l.job_id() != g.id);
  CHECK(g.R("chief-0").state != v1::REPLICA_STATE_STARTING);
}

TEST_CASE("a survivor its restarted agent no longer runs counts as stopped for the gang") {
  Gang g(1);
  g.Exit("worker-0", 134);
  REQUIRE(g.R("chief-0").state == v1::REPLICA_STATE_STOPPING);
  v1::Register again = Reg(g.R("chief-0").node);
  again.set_agent_instance("instance-2");  // it runs nothing any more
  Effects fx;
  g.core.AgentRegistered(again, FromMs(g.now), &fx);
  CHECK(Launches(fx).size() == 2);  // the whole gang starts again
  CHECK(g.Job().gang_generation == 1);
}

TEST_CASE("REPLICA scope keeps restarting one replica while its peers run on") {
  Gang g(1, [](v1::JobSpec* s) {
    s->mutable_scheduling()->set_restart_scope(v1::RESTART_SCOPE_REPLICA);
  });
  Effects crash = g.Exit("worker-0", 134);
  CHECK(Stops(crash).empty());
  CHECK(Launches(crash).size() == 1);
  CHECK(g.R("chief-0").state == v1::REPLICA_STATE_RUNNING);
  CHECK(g.Job().gang_generation == 0);
}

}  // namespace
}  // namespace trainctl::sched
