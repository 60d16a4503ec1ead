// The scheduler core's job lifecycle (R1, R2, R6), driven by hand with a fake clock.
#include "scheduler/core.h"

#include <catch2/catch.hpp>

#include "common/time_util.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

TEST_CASE("a submitted job is QUEUED, then PENDING with every replica launched at once (R1, R2)") {
  Fixture f;
  Effects fx;
  v1::Job job = f.Submit(Spec(3), &fx);
  CHECK(job.state() == v1::JOB_STATE_QUEUED);
  CHECK(job.id().rfind("j-", 0) == 0);
  CHECK(job.checkpoint_dir() == "/ckpt/" + job.id());
  CHECK(job.project() == "default");
  REQUIRE(job.replicas_size() == 4);
  CHECK(job.replicas(0).name() == "chief-0");
  CHECK(job.replicas(3).name() == "worker-2");
  CHECK(job.replicas(3).rank() == 3);
  CHECK(fx.jobs.count(job.id()) == 1);

  f.core.Schedule(FromMs(f.now), &fx);
  std::vector<v1::LaunchReplica> launches = Launches(fx);
  REQUIRE(launches.size() == 4);  // in parallel: all launches in one turn
  const v1::Job& placed = f.Job(job.id());
  CHECK(placed.state() == v1::JOB_STATE_PENDING);
  REQUIRE(placed.attempts_size() == 1);
  CHECK(placed.attempts(0).number() == 1);
  // Spread over both nodes.
  CHECK(placed.attempts(0).nodes_size() == 2);
  for (const v1::Replica& r : placed.replicas()) CHECK(r.state() == v1::REPLICA_STATE_STARTING);
}

TEST_CASE("a job is RUNNING only when every replica started (R2)") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(1), &id);
  REQUIRE(launches.size() == 2);
  Effects fx;
  f.core.ReplicaStarted(f.NodeOf(launches[0]), Started(launches[0].run_id()), FromMs(f.now), &fx);
  CHECK(f.Job(id).state() == v1::JOB_STATE_PENDING);
  f.core.ReplicaStarted(f.NodeOf(launches[1]), Started(launches[1].run_id()), FromMs(f.now), &fx);
  CHECK(f.Job(id).state() == v1::JOB_STATE_RUNNING);
  CHECK(f.Job(id).has_start_time());
  CHECK(f.Job(id).attempts(0).state() == v1::JOB_STATE_RUNNING);
}

TEST_CASE("the primary exiting 0 succeeds the job and stops the others (R6)") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(2), &id);
  f.StartAll(launches);
  Effects fx;
  f.core.ReplicaExited(f.NodeOf(launches[0]), ExitedCode(launches[0].run_id(), 0), FromMs(++f.now),
                       &fx);
  const v1::Job& job = f.Job(id);
  CHECK(job.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(job.has_end_time());
  CHECK(job.error().code() == 0);
  CHECK(job.replicas(0).state() == v1::REPLICA_STATE_SUCCEEDED);
  CHECK(job.replicas(1).state() == v1::REPLICA_STATE_STOPPING);
  CHECK(Stops(fx).size() == 2);
  CHECK(job.attempts(0).state() == v1::JOB_STATE_SUCCEEDED);

  // The stopped workers' exits are recorded as STOPPED, not failures.
  Effects fx2;
  f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedSignal(launches[1].run_id(), 15),
                       FromMs(++f.now), &fx2);
  CHECK(f.Job(id).replicas(1).state() == v1::REPLICA_STATE_STOPPED);
  CHECK(f.Job(id).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("a worker exiting 0 leaves the job running") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(2), &id);
  f.StartAll(launches);
  Effects fx;
  f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedCode(launches[1].run_id(), 0), FromMs(++f.now),
                       &fx);
  CHECK(f.Job(id).state() == v1::JOB_STATE_RUNNING);
  CHECK(f.Job(id).replicas(1).state() == v1::REPLICA_STATE_SUCCEEDED);
  CHECK(Stops(fx).empty());
}

TEST_CASE("a non-zero exit fails the job with the exit code and the R8 message") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(ReplicaScope(Spec(2)), &id);
  f.StartAll(launches);
  Effects fx;
  f.core.ReplicaExited(f.NodeOf(launches[2]), ExitedCode(launches[2].run_id(), 3), FromMs(++f.now),
                       &fx);
  const v1::Job& job = f.Job(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 3);
  CHECK(job.error().message() ==
        "Replica worker-1 exited with a non-zero status of 3. Termination reason: Error.");
  CHECK(job.error().replica() == "worker-1");
  CHECK(job.replicas(2).exit_code() == 3);
  CHECK(job.replicas(2).state() == v1::REPLICA_STATE_FAILED);
  CHECK(Stops(fx).size() == 2);
}

TEST_CASE("cancel stops every replica, CANCELLED only when all are gone") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(1), &id);
  f.StartAll(launches);
  Effects fx;
  REQUIRE(AsView(f.core.CancelJob(id, FromMs(++f.now), &fx)).ok());
  CHECK(f.Job(id).state() == v1::JOB_STATE_CANCELLING);
  REQUIRE(Stops(fx).size() == 2);
  CHECK(Stops(fx)[0].grace_period_ms() == 10000);
  Effects fx2;
  f.core.ReplicaExited(f.NodeOf(launches[0]), ExitedSignal(launches[0].run_id(), 15),
                       FromMs(++f.now), &fx2);
  CHECK(f.Job(id).state() == v1::JOB_STATE_CANCELLING);
  f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedCode(launches[1].run_id(), 0), FromMs(++f.now),
                       &fx2);
  CHECK(f.Job(id).state() == v1::JOB_STATE_CANCELLED);
  CHECK(f.Job(id).error().code() == 1);
  // Cancelling again is a no-op.
  Effects fx3;
  CHECK(AsView(f.core.CancelJob(id, FromMs(++f.now), &fx3))->state() == v1::JOB_STATE_CANCELLED);
  CHECK(fx3.commands.empty());
}

TEST_CASE("cancelling a queued job ends it at once, unknown ids are NOT_FOUND") {
  Core core{TestOptions(1)};  // no nodes: the job stays queued
  Effects fx;
  v1::Job job = *AsView(core.SubmitJob(Spec(1), FromMs(5), &fx));
  core.Schedule(FromMs(5), &fx);
  CHECK(View(core, job.id()).state() == v1::JOB_STATE_QUEUED);
  CHECK(View(core, job.id()).queue_reason() == "NO_NODES: no node is connected and READY");
  CHECK(AsView(core.CancelJob(job.id(), FromMs(6), &fx))->state() == v1::JOB_STATE_CANCELLED);
  CHECK(AsView(core.CancelJob("j-nope", FromMs(6), &fx)).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("gang placement: a job that does not fit places none of its replicas") {
  Fixture f;  // two nodes with 4 cpus each
  Effects fx;
  v1::Job big = f.Submit(Spec(8, /*cpu=*/1), &fx);  // 9 cpus > 8
  f.core.Schedule(FromMs(f.now), &fx);
  CHECK(Launches(fx).empty());
  CHECK(f.Job(big.id()).state() == v1::JOB_STATE_QUEUED);
  CHECK(f.Job(big.id()).queue_reason().find("CAPACITY: no node has 1 free cpu cores") == 0);
  // A smaller job still fits and runs.
  v1::Job small = f.Submit(Spec(1), &fx);
  f.core.Schedule(FromMs(f.now), &fx);
  CHECK(f.Job(small.id()).state() == v1::JOB_STATE_PENDING);
}

TEST_CASE("a node out of ports is skipped, and a job no node has ports for waits for them") {
  CoreOptions options = TestOptions(42);
  options.nodes.ports = PortRange{20000, 20063};  // the smallest range: 64 ports
  Core core(options);
  int64_t now = 1'000'000;
  Effects fx;
  core.AgentRegistered(Reg("node-a", 64), FromMs(now), &fx);
  // 32 one-replica jobs take two ports each: all 64 of node-a's, though its cpu is far from full.
  std::vector<std::string> ids;
  for (int i = 0; i < 32; ++i) {
    absl::StatusOr<const Job*> job = core.SubmitJob(Spec(0, 0.5), FromMs(now), &fx);
    REQUIRE(job.ok());
    ids.push_back((*job)->id);
  }
  core.Schedule(FromMs(now), &fx);
  std::set<int32_t> ports;
  for (const std::string& id : ids) {
    const Replica& chief = core.FindJob(id)->replicas[0];
    REQUIRE(chief.state == v1::REPLICA_STATE_STARTING);
    ports.insert(chief.port);
    ports.insert(chief.rendezvous_port);
  }
  CHECK(ports.size() == 64);  // every port once
  CHECK(*ports.begin() == 20000);
  CHECK(*ports.rbegin() == 20063);

  absl::StatusOr<const Job*> late = core.SubmitJob(Spec(0, 0.5), FromMs(now), &fx);
  REQUIRE(late.ok());
  const std::string late_id = (*late)->id;
  core.Schedule(FromMs(now), &fx);
  CHECK(View(core, late_id).state() == v1::JOB_STATE_QUEUED);
  CHECK(View(core, late_id).queue_reason() ==
        "CAPACITY: no node has 2 free ports for chief-0 (most free: 0 on node-a)");
  CHECK(core.ListQueue("", 10, FromMs(now))[0].queue_status().blockers(0).message() ==
        View(core, late_id).queue_reason());

  // A second node has ports: the job goes there, though node-a has more cpu free.
  core.AgentRegistered(Reg("node-b", 1), FromMs(now), &fx);
  core.Schedule(FromMs(now), &fx);
  CHECK(core.FindJob(late_id)->replicas[0].node == "node-b");
  CHECK(core.FindJob(late_id)->state == v1::JOB_STATE_PENDING);
  CheckUsageOnExit(core);
}

TEST_CASE("resources are held until replicas are gone, then queued jobs start") {
  Fixture f;
  std::string first;
  auto launches = f.SubmitAndPlace(Spec(7), &first);  // 8 cpus: fills both nodes
  REQUIRE(launches.size() == 8);
  f.StartAll(launches);
  Effects fx;
  v1::Job second = f.Submit(Spec(0), &fx);
  f.core.Schedule(FromMs(f.now), &fx);
  CHECK(f.Job(second.id()).state() == v1::JOB_STATE_QUEUED);

  Effects fx2;
  f.core.ReplicaExited(f.NodeOf(launches[0]), ExitedCode(launches[0].run_id(), 0), FromMs(++f.now),
                       &fx2);
  f.core.Schedule(FromMs(f.now), &fx2);
  // The primary's cpu is free now; its workers are still stopping.
  CHECK(f.Job(second.id()).state() == v1::JOB_STATE_PENDING);
}

TEST_CASE("a replica larger than the largest node is refused with FAILED_PRECONDITION") {
  Fixture f;
  Effects fx;
  absl::StatusOr<v1::Job> job =
      AsView(f.core.SubmitJob(Spec(1, 1, 100, /*gpus=*/2), FromMs(f.now), &fx));
  REQUIRE(job.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(job.status().message().find("workerPools[0].resources") == 0);
  CHECK(job.status().message().find("gpus") != std::string::npos);
  CHECK(fx.jobs.empty());
  CHECK(fx.events.empty());
}

TEST_CASE("an invalid spec is refused and changes nothing") {
  Fixture f;
  Effects fx;
  v1::JobSpec spec = Spec(1);
  spec.mutable_worker_pools(1)->set_replica_count(0);
  absl::StatusOr<v1::Job> job = AsView(f.core.SubmitJob(spec, FromMs(f.now), &fx));
  CHECK(job.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(job.status().message() == "workerPools[1].replicaCount must be 1..4096, got 0");
  CHECK(fx.empty());
  CHECK(f.core.jobs().empty());
}

TEST_CASE("higher priority is placed first") {
  Fixture f;
  std::string filler;
  auto launches = f.SubmitAndPlace(Spec(7), &filler);
  f.StartAll(launches);
  Effects fx;
  v1::JobSpec low = Spec(0);
  v1::JobSpec high = Spec(0);
  high.set_priority(10);
  std::string low_id = f.Submit(low, &fx).id();
  f.now += 1;
  std::string high_id = f.Submit(high, &fx).id();
  f.core.Schedule(FromMs(f.now), &fx);
  // Free exactly one cpu.
  Effects fx2;
  f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedCode(launches[1].run_id(), 0), FromMs(++f.now),
                       &fx2);
  f.core.Schedule(FromMs(f.now), &fx2);
  CHECK(f.Job(high_id).state() == v1::JOB_STATE_PENDING);
  CHECK(f.Job(low_id).state() == v1::JOB_STATE_QUEUED);
}

TEST_CASE("re-registration re-adopts running replicas and resends lost launches") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(1), &id);
  REQUIRE(launches.size() == 2);
  // chief-0 started; worker-0's launch never arrived.
  Effects fx;
  std::string chief_node = f.NodeOf(launches[0]);
  f.core.ReplicaStarted(chief_node, Started(launches[0].run_id(), 77), FromMs(f.now), &fx);
  f.core.AgentDisconnected("node-a", FromMs(f.now), &fx);
  f.core.AgentDisconnected("node-b", FromMs(f.now), &fx);

  // Both agents come back: the chief's agent reports its run; the other reports nothing.
  std::string worker_node = f.NodeOf(launches[1]);
  v1::KnownRun known;
  known.set_run_id(launches[0].run_id());
  known.set_running(true);
  known.set_pid(77);
  Effects fx2;
  f.core.AgentRegistered(Reg(chief_node, 4, 4096, 0, {known}), FromMs(++f.now), &fx2);
  if (worker_node != chief_node) f.core.AgentRegistered(Reg(worker_node), FromMs(f.now), &fx2);
  std::vector<v1::LaunchReplica> resent = Launches(fx2);
  REQUIRE(resent.size() == 1);
  CHECK(resent[0].run_id() == launches[1].run_id());
  CHECK(f.Job(id).replicas(0).state() == v1::REPLICA_STATE_RUNNING);
  CHECK(f.Job(id).state() == v1::JOB_STATE_PENDING);
}

TEST_CASE("a running replica its restarted agent no longer knows is an internal error (R9)") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(0), &id);
  f.StartAll(launches);
  Effects fx;
  v1::Register reg = Reg(f.NodeOf(launches[0]));
  reg.set_agent_instance("instance-2");
  f.core.AgentRegistered(reg, FromMs(++f.now), &fx);
  const v1::Job& job = f.Job(id);
  CHECK(job.state() == v1::JOB_STATE_QUEUED);  // retrying
  CHECK(job.budgets_used().internal_retries() == 1);
  CHECK(job.budgets_used().job_retries() == 0);
  REQUIRE(job.attempts_size() == 1);
  CHECK(job.attempts(0).failure_class() == "INTERNAL");
  CHECK(job.attempts(0).decision() == "RETRY_JOB");
  CHECK(job.attempts(0).budgets_left().internal_retries() == 1);
  CHECK(job.attempts(0).reason().find("Internal error occurred for the current attempt.") == 0);
}

TEST_CASE("a transient crash restarts the replica in place with the same identity (R3, R4)") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(ReplicaScope(Spec(1)), &id);
  f.StartAll(launches);
  const std::string node = f.NodeOf(launches[1]);
  Effects fx;
  f.core.ReplicaExited(node, ExitedCode(launches[1].run_id(), 134), FromMs(++f.now), &fx);
  // The first restart is immediate: a new launch on the same node, same name and rank.
  std::vector<v1::LaunchReplica> relaunch = Launches(fx);
  REQUIRE(relaunch.size() == 1);
  CHECK(relaunch[0].replica_name() == "worker-0");
  CHECK(relaunch[0].restart() == 1);
  CHECK(relaunch[0].env().at("RANK") == "1");
  CHECK(relaunch[0].env().at("TRAINCTL_RESTART_COUNT") == "1");
  CHECK(relaunch[0].checkpoint_dir() == launches[1].checkpoint_dir());
  CHECK(f.NodeOf(relaunch[0]) == node);
  const v1::Job& job = f.Job(id);
  CHECK(job.state() == v1::JOB_STATE_RUNNING);
  CHECK(job.replicas(1).restart_count() == 1);
  CHECK(job.replicas(1).charged_restarts() == 1);
  CHECK(job.replicas(1).exit_code() == 134);

  // The second restart waits out the backoff (1s): nothing before, a launch after.
  Effects fx2;
  f.core.ReplicaStarted(node, Started(relaunch[0].run_id()), FromMs(++f.now), &fx2);
  f.core.ReplicaExited(node, ExitedSignal(relaunch[0].run_id(), 11), FromMs(++f.now), &fx2);
  CHECK(Launches(fx2).empty());
  CHECK(f.Job(id).replicas(1).state() == v1::REPLICA_STATE_RESTARTING);
  Effects fx3;
  f.core.Tick(FromMs(f.now + 999), &fx3);
  CHECK(Launches(fx3).empty());
  f.core.Tick(FromMs(f.now + 1000), &fx3);
  REQUIRE(Launches(fx3).size() == 1);
  CHECK(Launches(fx3)[0].restart() == 2);
}

TEST_CASE("the 6th crash of a replica retries the whole job as a new attempt (R5)") {
  Fixture f;
  v1::JobSpec spec = ReplicaScope(Spec(1));
  spec.mutable_scheduling()->mutable_restart_backoff()->mutable_initial()->set_seconds(0);
  std::string id;
  auto launches = f.SubmitAndPlace(spec, &id);
  f.StartAll(launches);
  const std::string node = f.NodeOf(launches[1]);
  std::string run = launches[1].run_id();
  for (int i = 0; i < 5; ++i) {
    Effects fx;
    f.core.ReplicaExited(node, ExitedCode(run, 6), FromMs(++f.now), &fx);
    REQUIRE(Launches(fx).size() == 1);
    run = Launches(fx)[0].run_id();
    f.core.ReplicaStarted(node, Started(run), FromMs(++f.now), &fx);
  }
  Effects fx;
  f.core.ReplicaExited(node, ExitedCode(run, 6), FromMs(++f.now), &fx);
  v1::Job job = f.Job(id);
  CHECK(job.state() == v1::JOB_STATE_QUEUED);
  CHECK(job.budgets_used().job_retries() == 1);
  CHECK(job.attempts(0).state() == v1::JOB_STATE_FAILED);
  CHECK(job.attempts(0).failure_class() == "TRANSIENT");
  CHECK(job.attempts(0).decision() == "RETRY_JOB");
  CHECK(job.attempts(0).budgets_left().job_retries() == 2);
  REQUIRE(Stops(fx).size() == 1);  // the chief
  CHECK(job.queue_reason().rfind("RETRY:", 0) == 0);

  // Attempt 2 waits for the chief to stop and for the retry backoff (5s).
  Effects fx2;
  f.core.ReplicaExited(f.NodeOf(launches[0]), ExitedSignal(launches[0].run_id(), 15),
                       FromMs(++f.now), &fx2);
  f.core.Schedule(FromMs(f.now), &fx2);
  CHECK(Launches(fx2).empty());
  Effects fx3;
  f.now += 5000;
  f.core.Tick(FromMs(f.now), &fx3);
  f.core.Schedule(FromMs(f.now), &fx3);
  std::vector<v1::LaunchReplica> second = Launches(fx3);
  REQUIRE(second.size() == 2);
  CHECK(second[1].attempt() == 2);
  CHECK(second[1].env().at("TRAINCTL_ATTEMPT") == "2");
  CHECK(second[1].restart() == 0);
  CHECK(f.Job(id).state() == v1::JOB_STATE_PENDING);
  CHECK(f.Job(id).attempts_size() == 2);
  CHECK(f.Job(id).replicas(1).charged_restarts() == 0);
}

TEST_CASE("a hung replica is stopped and restarted") {
  Fixture f;
  v1::JobSpec spec = Spec(0);
  spec.mutable_scheduling()->mutable_hang_timeout()->set_seconds(60);
  std::string id;
  auto launches = f.SubmitAndPlace(spec, &id);
  f.StartAll(launches);
  Effects fx;
  v1::ReplicaProgress p;
  p.set_run_id(launches[0].run_id());
  p.set_time_ms(f.now + 30'000);
  f.core.ReplicaProgress(f.NodeOf(launches[0]), p, FromMs(f.now + 30'000), &fx);
  f.core.Tick(FromMs(f.now + 80'000), &fx);  // 50s after the last progress
  CHECK(Stops(fx).empty());
  f.core.Tick(FromMs(f.now + 90'000), &fx);
  REQUIRE(Stops(fx).size() == 1);
  Effects fx2;
  v1::ReplicaExited stopped = ExitedSignal(launches[0].run_id(), 15);
  stopped.set_stopped_by_request(true);
  f.core.ReplicaExited(f.NodeOf(launches[0]), stopped, FromMs(f.now + 91'000), &fx2);
  REQUIRE(Launches(fx2).size() == 1);
  CHECK(f.Job(id).replicas(0).restart_count() == 1);
  bool hung_event = false;
  for (const Event& e : fx2.events) hung_event |= e.type == "ReplicaHung";
  CHECK(hung_event);
}

TEST_CASE("a job that cannot fit the connected cluster retries capacity, then fails (R8)") {
  Fixture f;                   // two nodes with 4 cpus
  v1::JobSpec spec = Spec(8);  // 9 cpus: fits neither the free nor the idle cluster
  spec.mutable_scheduling()->mutable_placement_timeout()->set_seconds(60);
  spec.mutable_scheduling()->set_max_capacity_retries(1);
  spec.mutable_scheduling()->mutable_retry_backoff()->mutable_initial()->set_seconds(10);
  Effects fx;
  std::string id = f.Submit(spec, &fx).id();
  f.core.Schedule(FromMs(f.now), &fx);
  CHECK(f.Job(id).state() == v1::JOB_STATE_QUEUED);
  f.now += 60'000;
  f.core.Tick(FromMs(f.now), &fx);
  f.core.Schedule(FromMs(f.now), &fx);
  CHECK(f.Job(id).budgets_used().capacity_retries() == 1);
  CHECK(f.Job(id).state() == v1::JOB_STATE_QUEUED);
  f.now += 10'000;  // backoff
  f.core.Tick(FromMs(f.now), &fx);
  f.core.Schedule(FromMs(f.now), &fx);
  f.now += 60'000;  // another placement timeout
  f.core.Tick(FromMs(f.now), &fx);
  f.core.Schedule(FromMs(f.now), &fx);
  const v1::Job& job = f.Job(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 8);
  CHECK(job.error().reason() == "CAPACITY");
  CHECK(job.error().message().rfind("Resources are insufficient in cluster: no node has 1 free "
                                    "cpu cores",
                                    0) == 0);
}

TEST_CASE("waiting behind running jobs is queueing, not a stockout") {
  Fixture f;
  std::string filler;
  f.StartAll(f.SubmitAndPlace(Spec(7), &filler));  // fills both nodes
  v1::JobSpec spec = Spec(0);
  spec.mutable_scheduling()->mutable_placement_timeout()->set_seconds(1);
  Effects fx;
  std::string id = f.Submit(spec, &fx).id();
  for (int i = 0; i < 10; ++i) {
    f.now += 5000;
    f.core.Tick(FromMs(f.now), &fx);
    f.core.Schedule(FromMs(f.now), &fx);
  }
  CHECK(f.Job(id).state() == v1::JOB_STATE_QUEUED);
  CHECK(f.Job(id).budgets_used().capacity_retries() == 0);
}

TEST_CASE("runs nobody wants are stopped when their agent registers") {
  Fixture f;
  v1::KnownRun stray;
  stray.set_run_id("j-gone/1/worker-0/0");
  stray.set_running(true);
  Effects fx;
  f.core.AgentRegistered(Reg("node-c", 4, 4096, 0, {stray}), FromMs(f.now), &fx);
  REQUIRE(Stops(fx).size() == 1);
  CHECK(Stops(fx)[0].run_id() == "j-gone/1/worker-0/0");
}

TEST_CASE("scheduling.timeout fails a running job with DEADLINE_EXCEEDED") {
  Fixture f;
  v1::JobSpec spec = Spec(0);
  spec.mutable_scheduling()->mutable_timeout()->set_seconds(60);
  std::string id;
  auto launches = f.SubmitAndPlace(spec, &id);
  f.StartAll(launches);
  Effects fx;
  f.core.Tick(FromMs(f.now + 59'000), &fx);
  CHECK(f.Job(id).state() == v1::JOB_STATE_RUNNING);
  f.core.Tick(FromMs(f.now + 61'000), &fx);
  CHECK(f.Job(id).state() == v1::JOB_STATE_FAILED);
  CHECK(f.Job(id).error().code() == 4);
  CHECK(Stops(fx).size() == 1);
}

TEST_CASE("restore keeps jobs, queue order and run locations") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(1), &id);
  f.StartAll(launches);
  Effects fx;
  v1::Job queued = f.Submit(Spec(20), &fx);  // too big to place now

  Core restored{TestOptions(7)};
  std::vector<ReplicaRun> runs;
  for (const auto& l : launches) {
    ReplicaRun r;
    r.run_id = l.run_id();
    r.node = f.NodeOf(l);
    runs.push_back(r);
  }
  std::vector<Node> nodes = {*f.core.FindNode("node-a"), *f.core.FindNode("node-b")};
  restored.Restore({*JobFromProto(f.Job(id)), *JobFromProto(f.Job(queued.id()))}, nodes, runs);
  CHECK(View(restored, id).state() == v1::JOB_STATE_RUNNING);
  CHECK(!restored.FindNode("node-a")->connected);
  std::string node, run_id;
  bool finished = true;
  REQUIRE(restored.LocateRun(id, "worker-0", 0, -1, &node, &run_id, &finished).ok());
  CHECK(run_id == launches[1].run_id());
  CHECK(!finished);

  // The running replicas' ports are held again: a job placed after the restart gets others.
  CHECK(restored.CheckUsage().ok());
  std::set<std::pair<std::string, int32_t>> held;
  const v1::Job restored_job = View(restored, id);
  for (const v1::Replica& r : restored_job.replicas()) {
    CHECK(r.port() != 0);
    held.insert({r.node(), r.port()});
    if (r.rendezvous_port() != 0) held.insert({r.node(), r.rendezvous_port()});
  }
  CHECK(held.size() == 3);  // chief-0's two and worker-0's one
  Effects fx2;
  for (const char* name : {"node-a", "node-b"}) {  // the agents come back with their runs
    std::vector<v1::KnownRun> known;
    for (const ReplicaRun& run : runs) {
      if (run.node != name) continue;
      known.emplace_back();
      known.back().set_run_id(run.run_id);
      known.back().set_running(true);
    }
    restored.AgentRegistered(Reg(name, 4, 4096, 0, known), FromMs(f.now), &fx2);
  }
  REQUIRE(View(restored, id).state() == v1::JOB_STATE_RUNNING);
  absl::StatusOr<const Job*> next = restored.SubmitJob(Spec(1), FromMs(f.now), &fx2);
  REQUIRE(next.ok());
  const std::string next_id = (*next)->id;
  restored.Schedule(FromMs(f.now), &fx2);
  for (const Replica& r : restored.FindJob(next_id)->replicas) {
    INFO(r.name);
    REQUIRE(r.state == v1::REPLICA_STATE_STARTING);
    CHECK(held.count({r.node, r.port}) == 0);
    CHECK(held.count({r.node, r.rendezvous_port}) == 0);
  }
  CheckUsageOnExit(restored);
}

}  // namespace
}  // namespace trainctl::sched
