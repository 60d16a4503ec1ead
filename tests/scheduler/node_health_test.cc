// Node availability and health (R11-R19): the derived node state, check runs, isolation and
// flapping, cordon and drain, lost nodes, replica moves and re-dispatch, with a fake clock.
#include "scheduler/node_health.h"

#include <catch2/catch.hpp>

#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/job_validation.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

v1::CheckRun Checks(const std::string& phase, bool passed, int64_t time_ms,
                    const std::string& item = "disk-size root",
                    const std::string& message = "3.1 GB free, needs > 32 GB") {
  v1::CheckRun run;
  run.set_phase(phase);
  run.set_passed(passed);
  *run.mutable_time() = MsToTimestamp(time_ms);
  v1::CheckResult* r = run.add_items();
  r->set_item(item);
  r->set_passed(passed);
  r->set_message(message);
  return run;
}

bool HasEventOn(const Effects& fx, const std::string& type, const std::string& node = "") {
  for (const Event& e : fx.events) {
    if (e.type == type && (node.empty() || e.node == node)) return true;
  }
  return false;
}

// A core with three nodes and a fake clock; `lost_ms` is the lost timeout.
struct Cluster {
  Core core;
  ~Cluster() { CheckUsageOnExit(core); }
  int64_t now = 1'000'000;

  explicit Cluster(int64_t lost_ms = 365LL * 86'400'000, int flap_threshold = 3)
      : core(Options(lost_ms, flap_threshold)) {
    Effects fx;
    for (const char* n : {"node-a", "node-b", "node-c"})
      core.AgentRegistered(Reg(n), FromMs(now), &fx);
  }

  static CoreOptions Options(int64_t lost_ms, int flap_threshold) {
    CoreOptions o = TestOptions(7);
    o.nodes.lost_timeout = absl::Milliseconds(lost_ms);
    o.nodes.flap_threshold = flap_threshold;
    o.nodes.flap_window = absl::Hours(1);
    return o;
  }

  // Submits, places and starts a job; returns its id.
  std::string Run(const v1::JobSpec& spec) {
    Effects fx;
    absl::StatusOr<v1::Job> job = AsView(core.SubmitJob(spec, FromMs(now), &fx));
    REQUIRE(job.ok());
    core.Schedule(FromMs(now), &fx);
    for (const v1::LaunchReplica& l : Launches(fx)) {
      Effects fx2;
      core.ReplicaStarted(NodeOf(job->id(), l.replica_name()), Started(l.run_id()), FromMs(++now),
                          &fx2);
    }
    REQUIRE(Job(job->id()).state() == v1::JOB_STATE_RUNNING);
    return job->id();
  }

  v1::Job Job(const std::string& id) { return View(core, id); }
  v1::Replica Replica(const std::string& id, int i) { return Job(id).replicas(i); }
  std::string NodeOf(const std::string& id, const std::string& replica) {
    const sched::Replica* r = core.FindJob(id)->FindReplica(replica);
    return r == nullptr ? "" : r->node;
  }
  std::string RunId(const std::string& id, int i) {
    const v1::Replica& r = Replica(id, i);
    return MakeRunId(id, Job(id).attempts_size(), r.name(), r.restart_count());
  }
  v1::Node Node(const std::string& name) {
    absl::StatusOr<v1::Node> n = core.GetNode(name);
    REQUIRE(n.ok());
    return *n;
  }
  // The agent of `node` reports a periodic check run.
  void Report(const std::string& node, bool passed, Effects* fx) {
    ++now;
    core.CheckReported(node, Checks("periodic", passed, now), FromMs(now), fx);
  }
  void Heartbeats() {
    Effects fx;
    for (const char* n : {"node-a", "node-b", "node-c"}) core.Heartbeat(n, FromMs(now), &fx);
  }
};

// --- The pure rules ------------------------------------------------------------------------

TEST_CASE("node state is derived: LOST, then ISOLATED, DRAINING, CORDONED, READY") {
  Node n;
  n.connected = true;
  CHECK(DeriveState(n) == v1::NODE_STATE_READY);
  CHECK(DeriveHealth(n) == v1::NODE_HEALTH_UNKNOWN);  // no check yet
  n.status.cordoned = true;
  CHECK(DeriveState(n) == v1::NODE_STATE_CORDONED);
  n.draining = true;
  CHECK(DeriveState(n) == v1::NODE_STATE_DRAINING);
  n.status.checks.push_back(Checks("periodic", false, 10));
  CHECK(DeriveState(n) == v1::NODE_STATE_ISOLATED);
  CHECK(DeriveHealth(n) == v1::NODE_HEALTH_UNHEALTHY);
  n.lost = true;
  CHECK(DeriveState(n) == v1::NODE_STATE_LOST);
  CHECK(DeriveHealth(n) == v1::NODE_HEALTH_UNKNOWN);
  CHECK_FALSE(Schedulable(n));
}

TEST_CASE(
    "a later passing run of the host items supersedes a failure, a failed startup script "
    "is cleared only by the script") {
  NodeStatus s;
  s.checks.push_back(Checks("preflight", false, 10));
  CHECK(FailingChecks(s));
  s.checks.push_back(Checks("periodic", true, 20));
  CHECK_FALSE(FailingChecks(s));
  s.checks.push_back(Checks("exit", false, 30));
  CHECK(FailingChecks(s));

  NodeStatus t;
  t.checks.push_back(Checks("startup", false, 10, "startup-script", "no GPU driver"));
  t.checks.push_back(Checks("periodic", true, 20));
  CHECK(FailingChecks(t));
  t.checks[0] = Checks("startup", true, 30, "startup-script", "");
  CHECK_FALSE(FailingChecks(t));
}

TEST_CASE("isolations within the window make a node flapping, older ones are forgotten") {
  NodePolicy policy;
  policy.flap_threshold = 2;
  policy.flap_window = absl::Seconds(1);
  Node n;
  n.connected = true;
  CheckOutcome o =
      RecordCheckRun(policy, Checks("periodic", false, 100), absl::FromUnixMillis(100), &n);
  CHECK(o.isolated);
  CHECK_FALSE(o.became_flapping);
  o = RecordCheckRun(policy, Checks("periodic", false, 200), absl::FromUnixMillis(200), &n);
  CHECK_FALSE(o.isolated);  // still isolated: not a new isolation
  o = RecordCheckRun(policy, Checks("periodic", true, 2000), absl::FromUnixMillis(2000), &n);
  CHECK(o.recovered);
  o = RecordCheckRun(policy, Checks("periodic", false, 2100), absl::FromUnixMillis(2100), &n);
  CHECK(o.isolated);
  CHECK_FALSE(o.became_flapping);  // the first isolation fell out of the window
  CHECK(n.status.isolation_times.size() == 1);
  RecordCheckRun(policy, Checks("periodic", true, 2200), absl::FromUnixMillis(2200), &n);
  o = RecordCheckRun(policy, Checks("periodic", false, 2300), absl::FromUnixMillis(2300), &n);
  CHECK(o.became_flapping);
  RecordCheckRun(policy, Checks("periodic", true, 2400), absl::FromUnixMillis(2400), &n);
  CHECK(DeriveState(n) == v1::NODE_STATE_ISOLATED);  // passing, but flapping
  CHECK(DeriveHealth(n) == v1::NODE_HEALTH_HEALTHY);
}

// --- Preflight and exit checks: the four scenarios (R16) -----------------------------------

TEST_CASE(
    "scenario 1/2: a failed preflight isolates the host and re-dispatches the job first in "
    "line") {
  Cluster c;
  Effects fx;
  absl::StatusOr<v1::Job> submitted = AsView(c.core.SubmitJob(Spec(2), FromMs(c.now), &fx));
  REQUIRE(submitted.ok());
  const std::string id = submitted->id();
  c.core.Schedule(FromMs(c.now), &fx);
  std::vector<v1::LaunchReplica> launches = Launches(fx);
  REQUIRE(launches.size() == 3);
  // Every host of the job is told, for the dns item.
  CHECK(launches[0].hostnames_size() == 3);

  const std::string bad = c.NodeOf(id, "chief-0");
  v1::ReplicaExited exited;
  exited.set_run_id(launches[0].run_id());
  exited.set_launch_failed(true);
  exited.set_preflight_failed(true);
  *exited.mutable_checks() = Checks("preflight", false, c.now);
  Effects fx2;
  c.core.ReplicaExited(bad, exited, FromMs(++c.now), &fx2);

  CHECK(HasEventOn(fx2, "NodeIsolated", bad));
  CHECK(HasEvent(fx2, "JobRedispatched"));
  v1::Node node = c.Node(bad);
  CHECK(node.state() == v1::NODE_STATE_ISOLATED);
  CHECK(node.health() == v1::NODE_HEALTH_UNHEALTHY);
  CHECK(node.state_reason().find("item disk-size root failed") != std::string::npos);
  CHECK(node.health_description().find("failed its preflight check") != std::string::npos);

  const v1::Job& job = c.Job(id);
  CHECK(job.state() == v1::JOB_STATE_QUEUED);
  CHECK(job.budgets_used().redispatches() == 1);
  CHECK(job.budgets_used().job_retries() == 0);
  CHECK(job.attempts(0).failure_class() == "HOST_FAULT");
  CHECK(job.attempts(0).decision() == "REDISPATCH");
  CHECK(job.attempts(0).budgets_left().redispatches() == 2);

  // The other replicas stop; the next attempt starts at once, on the two healthy hosts.
  for (int i = 1; i < 3; ++i) {
    v1::ReplicaExited stopped;
    stopped.set_run_id(launches[i].run_id());
    stopped.set_signal(15);
    stopped.set_stopped_by_request(true);
    Effects fx3;
    c.core.ReplicaExited(c.NodeOf(id, launches[i].replica_name()), stopped, FromMs(++c.now), &fx3);
  }
  Effects fx4;
  c.core.Schedule(FromMs(c.now), &fx4);
  REQUIRE(c.Job(id).state() == v1::JOB_STATE_PENDING);
  const v1::Job moved = c.Job(id);
  for (const v1::Replica& r : moved.replicas()) CHECK(r.node() != bad);
}

TEST_CASE("re-dispatch exhausted, or off with jobRetryNum 0, fails the job with error,exiting") {
  Cluster c;
  v1::JobSpec spec = Spec(0);
  spec.mutable_fault_tolerance()->set_job_retry_num(0);
  Effects fx;
  absl::StatusOr<v1::Job> job = AsView(c.core.SubmitJob(spec, FromMs(c.now), &fx));
  REQUIRE(job.ok());
  c.core.Schedule(FromMs(c.now), &fx);
  v1::LaunchReplica l = Launches(fx).at(0);
  v1::ReplicaExited exited;
  exited.set_run_id(l.run_id());
  exited.set_launch_failed(true);
  exited.set_preflight_failed(true);
  *exited.mutable_checks() = Checks("preflight", false, c.now, "dns", "node-x does not resolve");
  Effects fx2;
  c.core.ReplicaExited(c.NodeOf(job->id(), "chief-0"), exited, FromMs(++c.now), &fx2);
  const v1::Job& ended = c.Job(job->id());
  CHECK(ended.state() == v1::JOB_STATE_FAILED);
  CHECK(ended.error().message().rfind("error,exiting: ", 0) == 0);
  CHECK(ended.error().message().find("jobRetryNum is 0") != std::string::npos);
  CHECK(ended.error().message().find("item dns failed: node-x does not resolve") !=
        std::string::npos);
  CHECK(ended.error().reason() == "HOST_FAULT");
  CHECK(HasEvent(fx2, "JobExiting"));
}

v1::ReplicaExited AbnormalExit(const std::string& run_id, bool host_ok) {
  v1::ReplicaExited exited;
  exited.set_run_id(run_id);
  exited.set_exit_code(1);
  *exited.mutable_checks() =
      Checks("exit", host_ok, 0, "health-program", host_ok ? "ok" : "ECC errors on GPU 0");
  exited.mutable_checks()->clear_time();
  return exited;
}

TEST_CASE("scenario 3: an abnormal exit on a host failing its checks isolates and re-dispatches") {
  Cluster c;
  const std::string id = c.Run(Spec(1));
  const std::string node = c.NodeOf(id, "chief-0");
  Effects fx;
  c.core.ReplicaExited(node, AbnormalExit(c.RunId(id, 0), false), FromMs(++c.now), &fx);
  CHECK(c.Node(node).state() == v1::NODE_STATE_ISOLATED);
  CHECK(c.Node(node).state_reason().find("ECC errors on GPU 0") != std::string::npos);
  CHECK(c.Job(id).state() == v1::JOB_STATE_QUEUED);
  CHECK(c.Job(id).attempts(0).failure_class() == "HOST_FAULT");
  CHECK(c.Job(id).error().code() == 0);
}

TEST_CASE(
    "scenario 4: the user's failure on a healthy host fails the job and leaves the host "
    "READY") {
  Cluster c;
  const std::string id = c.Run(ReplicaScope(Spec(1)));
  const std::string node = c.NodeOf(id, "chief-0");
  Effects fx;
  c.core.ReplicaExited(node, AbnormalExit(c.RunId(id, 0), true), FromMs(++c.now), &fx);
  CHECK(c.Job(id).state() == v1::JOB_STATE_FAILED);
  CHECK(c.Job(id).error().reason() == "USER_ERROR");
  CHECK(c.Node(node).state() == v1::NODE_STATE_READY);
  CHECK(c.Node(node).health() == v1::NODE_HEALTH_HEALTHY);
}

// --- Lost nodes ----------------------------------------------------------------------------

TEST_CASE(
    "a node without heartbeats is LOST after the timeout, its replicas move, same name and "
    "rank, not charged; when it returns, the old run is stopped there") {
  Cluster c(/*lost_ms=*/15'000);
  const std::string id = c.Run(ReplicaScope(Spec(2)));
  const std::string victim = c.NodeOf(id, "worker-1");
  const std::string old_run = c.RunId(id, 2);

  // Heartbeats keep it alive.
  c.now += 10'000;
  c.Heartbeats();
  Effects fx;
  c.now += 10'000;
  c.core.Tick(FromMs(c.now), &fx);
  CHECK(c.Node(victim).state() == v1::NODE_STATE_READY);

  for (const char* n : {"node-a", "node-b", "node-c"}) {
    if (n != victim) c.core.Heartbeat(n, FromMs(c.now), &fx);
  }
  c.now += 8'000;  // the lost timeout (15s) and the fence margin (3s)
  Effects fx2;
  c.core.Tick(FromMs(c.now), &fx2);
  CHECK(c.Node(victim).state() == v1::NODE_STATE_LOST);
  CHECK(c.Node(victim).health() == v1::NODE_HEALTH_UNKNOWN);
  CHECK(HasEventOn(fx2, "NodeLost", victim));
  CHECK(HasEvent(fx2, "ReplicaMoved"));
  const v1::Replica& moved = c.Replica(id, 2);
  CHECK(moved.name() == "worker-1");
  CHECK(moved.rank() == 2);
  CHECK(moved.node() != victim);
  CHECK(moved.moves() == 1);
  CHECK(moved.restart_count() == 1);
  CHECK(moved.charged_restarts() == 0);
  CHECK(moved.state() == v1::REPLICA_STATE_STARTING);
  std::vector<v1::LaunchReplica> launches = Launches(fx2);
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].replica_name() == "worker-1");
  CHECK(launches[0].env().at("RANK") == "2");
  CHECK(c.Job(id).state() == v1::JOB_STATE_RUNNING);
  CHECK(c.Job(id).attempts_size() == 1);  // a move, not a new attempt

  // The agent comes back still running the old process: it is stopped there.
  v1::KnownRun known;
  known.set_run_id(old_run);
  known.set_running(true);
  known.set_pid(4242);
  Effects fx3;
  c.core.AgentRegistered(Reg(victim, 4, 4096, 0, {known}), FromMs(++c.now), &fx3);
  std::vector<v1::StopReplica> stops = Stops(fx3);
  REQUIRE(stops.size() == 1);
  CHECK(stops[0].run_id() == old_run);
  CHECK(HasEventOn(fx3, "NodeReturned", victim));
  CHECK(c.Node(victim).state() == v1::NODE_STATE_READY);
}

TEST_CASE(
    "a node whose heartbeats stall on an open stream is LOST, heard from again, it is back "
    "and the runs moved off it are stopped there") {
  Cluster c(/*lost_ms=*/15'000);
  const std::string id = c.Run(Spec(1));
  const std::string victim = c.NodeOf(id, "worker-0");
  const std::string old_run = c.RunId(id, 1);
  c.now += 18'000;  // the lost timeout (15s) and the fence margin (3s)
  Effects fx;
  for (const char* n : {"node-a", "node-b", "node-c"}) {
    if (n != victim) c.core.Heartbeat(n, FromMs(c.now), &fx);
  }
  c.core.Tick(FromMs(c.now), &fx);
  REQUIRE(c.Node(victim).state() == v1::NODE_STATE_LOST);
  CHECK(c.Replica(id, 1).node() != victim);

  Effects fx2;
  c.core.Heartbeat(victim, FromMs(++c.now), &fx2);
  CHECK(c.Node(victim).state() == v1::NODE_STATE_READY);
  CHECK(HasEventOn(fx2, "NodeReturned", victim));
  std::vector<v1::StopReplica> stops = Stops(fx2);
  REQUIRE(stops.size() == 1);
  CHECK(stops[0].run_id() == old_run);
}

TEST_CASE("after a scheduler restart every node gets a full lost timeout to reconnect") {
  CoreOptions o = TestOptions(3);
  o.nodes.lost_timeout = absl::Seconds(15);
  Core core(o);
  Node n;
  n.name = "node-a";
  n.last_heartbeat = absl::FromUnixMillis(1000);  // long ago
  core.Restore({}, {n}, {});
  Effects fx;
  core.Tick(FromMs(10'000'000), &fx);
  CHECK(core.GetNode("node-a")->state() != v1::NODE_STATE_LOST);
  core.Tick(FromMs(10'015'000), &fx);
  CHECK(core.GetNode("node-a")->state() == v1::NODE_STATE_LOST);
}

// --- Operators: cordon, drain, uncordon ----------------------------------------------------

TEST_CASE(
    "drain stops replicas with the deadline as grace, moves them not charged, then the node "
    "is CORDONED with the maintenance event") {
  Cluster c;
  const std::string id = c.Run(ReplicaScope(Spec(1)));
  const std::string node = c.NodeOf(id, "worker-0");
  const std::string run = c.RunId(id, 1);

  Effects fx;
  absl::StatusOr<v1::Node> drained =
      c.core.DrainNode(node, "kernel upgrade", absl::Milliseconds(30'000), FromMs(++c.now), &fx);
  REQUIRE(drained.ok());
  CHECK(drained->state() == v1::NODE_STATE_DRAINING);
  CHECK(drained->health_description().find("maintenance event") != std::string::npos);
  CHECK(drained->health_description().find("kernel upgrade") != std::string::npos);
  std::vector<v1::StopReplica> stops = Stops(fx);
  REQUIRE(stops.size() == 1);
  CHECK(stops[0].run_id() == run);
  CHECK(stops[0].grace_period_ms() == 30'000);
  CHECK(HasEventOn(fx, "NodeDrainStarted", node));

  v1::ReplicaExited stopped;
  stopped.set_run_id(run);
  stopped.set_exit_code(0);
  stopped.set_stopped_by_request(true);
  Effects fx2;
  c.core.ReplicaExited(node, stopped, FromMs(++c.now), &fx2);
  const v1::Replica& r = c.Replica(id, 1);
  CHECK(r.name() == "worker-0");
  CHECK(r.node() != node);
  CHECK(r.moves() == 1);
  CHECK(r.charged_restarts() == 0);
  REQUIRE(Launches(fx2).size() == 1);

  Effects fx3;
  c.core.Tick(FromMs(++c.now), &fx3);
  CHECK(HasEventOn(fx3, "NodeDrained", node));
  CHECK(c.Node(node).state() == v1::NODE_STATE_CORDONED);

  Effects fx4;
  absl::StatusOr<v1::Node> back = c.core.UncordonNode(node, FromMs(++c.now), &fx4);
  REQUIRE(back.ok());
  CHECK(back->state() == v1::NODE_STATE_READY);
}

TEST_CASE("bad operator input is refused with a message, and changes nothing") {
  Cluster c;
  Effects fx;
  CHECK(
      c.core.DrainNode("node-x", "r", absl::Milliseconds(0), FromMs(c.now), &fx).status().code() ==
      absl::StatusCode::kNotFound);
  absl::Status s =
      c.core.DrainNode("node-a", "", absl::Milliseconds(0), FromMs(c.now), &fx).status();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("reason is required") != std::string::npos);
  CHECK(c.core.CordonNode("node-a", std::string(2000, 'x'), FromMs(c.now), &fx).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(c.Node("node-a").state() == v1::NODE_STATE_READY);
  CHECK(fx.events.empty());
}

TEST_CASE("a cordoned node takes no new work but keeps what runs, restarts included") {
  Cluster c;
  const std::string id = c.Run(Spec(2));
  const std::string node = c.NodeOf(id, "chief-0");
  Effects fx;
  REQUIRE(c.core.CordonNode(node, "hardware ticket 12", FromMs(c.now), &fx).ok());
  CHECK(c.Node(node).state() == v1::NODE_STATE_CORDONED);
  CHECK(c.Node(node).state_reason().find("hardware ticket 12") != std::string::npos);
  // A transient crash restarts in place.
  v1::ReplicaExited crash = ExitedCode(c.RunId(id, 0), 134);
  Effects fx2;
  c.core.ReplicaExited(node, crash, FromMs(++c.now), &fx2);
  CHECK(c.Replica(id, 0).node() == node);
  CHECK(c.Replica(id, 0).moves() == 0);
  // A new job goes elsewhere.
  Effects fx3;
  absl::StatusOr<v1::Job> other = AsView(c.core.SubmitJob(Spec(1), FromMs(c.now), &fx3));
  REQUIRE(other.ok());
  c.core.Schedule(FromMs(c.now), &fx3);
  const v1::Job placed = c.Job(other->id());
  for (const v1::Replica& r : placed.replicas()) CHECK(r.node() != node);
}

TEST_CASE(
    "a failed periodic check isolates the node and moves its replicas, a passing one brings "
    "it back") {
  Cluster c;
  const std::string id = c.Run(ReplicaScope(Spec(1)));
  const std::string node = c.NodeOf(id, "chief-0");
  Effects fx;
  c.Report(node, false, &fx);
  CHECK(c.Node(node).state() == v1::NODE_STATE_ISOLATED);
  std::vector<v1::StopReplica> stops = Stops(fx);
  REQUIRE(stops.size() == 1);
  CHECK(c.Replica(id, 0).state() == v1::REPLICA_STATE_STOPPING);
  CHECK(c.Replica(id, 0).move_reason().find("failed its periodic check") != std::string::npos);

  Effects fx2;
  c.Report(node, true, &fx2);
  CHECK(c.Node(node).state() == v1::NODE_STATE_READY);
  CHECK(HasEventOn(fx2, "NodeHealthy", node));
}

TEST_CASE("a flapping node stays out after its checks pass, until an operator uncordons it") {
  Cluster c(365LL * 86'400'000, /*flap_threshold=*/2);
  Effects fx;
  c.Report("node-a", false, &fx);
  c.Report("node-a", true, &fx);
  CHECK(c.Node("node-a").state() == v1::NODE_STATE_READY);
  c.Report("node-a", false, &fx);
  CHECK(HasEventOn(fx, "NodeFlapping", "node-a"));
  c.Report("node-a", true, &fx);
  CHECK(c.Node("node-a").state() == v1::NODE_STATE_ISOLATED);
  CHECK(c.Node("node-a").flapping());
  CHECK(c.Node("node-a").state_reason().find("uncordon") != std::string::npos);

  Effects fx2;
  REQUIRE(c.core.UncordonNode("node-a", FromMs(++c.now), &fx2).ok());
  CHECK(c.Node("node-a").state() == v1::NODE_STATE_READY);
  CHECK_FALSE(c.Node("node-a").flapping());
}

TEST_CASE("uncordoning a node whose checks still fail keeps it ISOLATED and asks for a check run") {
  Cluster c;
  Effects fx;
  c.Report("node-a", false, &fx);
  Effects fx2;
  absl::StatusOr<v1::Node> n = c.core.UncordonNode("node-a", FromMs(++c.now), &fx2);
  REQUIRE(n.ok());
  CHECK(n->state() == v1::NODE_STATE_ISOLATED);
  REQUIRE(fx2.commands.size() == 1);
  CHECK(fx2.commands[0].node == "node-a");
  CHECK(fx2.commands[0].message.has_run_checks());
}

TEST_CASE("a failed startup script keeps the host out with the script's reason (R14)") {
  Cluster c;
  v1::Register reg = Reg("node-d");
  *reg.mutable_startup() =
      Checks("startup", false, c.now, "startup-script", "exited with status 3: no GPU driver");
  Effects fx;
  c.core.AgentRegistered(reg, FromMs(++c.now), &fx);
  CHECK(c.Node("node-d").state() == v1::NODE_STATE_ISOLATED);
  CHECK(c.Node("node-d").state_reason().find("no GPU driver") != std::string::npos);
  // Periodic checks passing do not clear it; a passing script run does.
  c.Report("node-d", true, &fx);
  CHECK(c.Node("node-d").state() == v1::NODE_STATE_ISOLATED);
  *reg.mutable_startup() = Checks("startup", true, c.now, "startup-script", "");
  c.core.AgentRegistered(reg, FromMs(++c.now), &fx);
  CHECK(c.Node("node-d").state() == v1::NODE_STATE_READY);
}

TEST_CASE("an agent shutting down moves its replicas at once, not charged") {
  Cluster c;
  const std::string id = c.Run(Spec(1));
  const std::string node = c.NodeOf(id, "worker-0");
  v1::ReplicaExited exited;
  exited.set_run_id(c.RunId(id, 1));
  exited.set_signal(15);
  exited.set_node_shutdown(true);
  Effects fx;
  c.core.ReplicaExited(node, exited, FromMs(++c.now), &fx);
  CHECK(HasEventOn(fx, "NodeShutdown", node));
  const v1::Replica& r = c.Replica(id, 1);
  CHECK(r.node() != node);
  CHECK(r.moves() == 1);
  CHECK(r.charged_restarts() == 0);
  CHECK(c.Job(id).budgets_used().internal_retries() == 0);
  CHECK(c.Job(id).attempts_size() == 1);
  // Nothing new lands on it until it registers again.
  Effects fx2;
  absl::StatusOr<v1::Job> other = AsView(c.core.SubmitJob(Spec(2), FromMs(c.now), &fx2));
  REQUIRE(other.ok());
  c.core.Schedule(FromMs(c.now), &fx2);
  const v1::Job placed = c.Job(other->id());
  for (const v1::Replica& o : placed.replicas()) CHECK(o.node() != node);
}

TEST_CASE("a move with no room anywhere re-dispatches the job") {
  Cluster c;
  // Three 4-cpu replicas fill the three 4-cpu nodes.
  const std::string id = c.Run(Spec(2, /*cpu=*/4));
  const std::string node = c.NodeOf(id, "chief-0");
  Effects fx;
  c.Report(node, false, &fx);
  v1::ReplicaExited stopped;
  stopped.set_run_id(c.RunId(id, 0));
  stopped.set_signal(15);
  stopped.set_stopped_by_request(true);
  Effects fx2;
  c.core.ReplicaExited(node, stopped, FromMs(++c.now), &fx2);
  CHECK(c.Job(id).state() == v1::JOB_STATE_QUEUED);
  CHECK(c.Job(id).budgets_used().redispatches() == 1);
  CHECK(c.Job(id).attempts(0).reason().find("no other healthy node has room") != std::string::npos);
}

TEST_CASE("faultTolerance.jobRetryNum is 0..3 and defaults to 3") {
  v1::JobSpec spec = Spec(0);
  spec.mutable_fault_tolerance()->set_job_retry_num(4);
  absl::Status s = ValidateJobSpec(spec);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("faultTolerance.jobRetryNum must be 0..3") !=
        std::string::npos);
  v1::JobSpec defaults = Spec(0);
  ApplyDefaults(&defaults);
  CHECK(defaults.fault_tolerance().job_retry_num() == 3);
}

}  // namespace
}  // namespace trainctl::sched
