// JobLifecycle with its parts wired by hand (JobTable, NodeRegistry, AdmissionQueue, Timers): what
// an attempt holds on its nodes and in its project, and that every end gives it back exactly;
// retries, moves and re-dispatches (R4, R5, R13, R16-R18); the ports each replica holds. Fake
// clock.
#include "scheduler/job_lifecycle.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

struct Parts {
  JobTable jobs{7};
  NodeRegistry nodes{NodePolicy{}};
  AdmissionQueue queue{Quota{}};
  Timers timers;
  JobLifecycle life{&jobs, &nodes, &queue, &timers};
  absl::Time now = kT0;

  // Nodes of 4 cpu and 4096 MiB each.
  explicit Parts(std::vector<std::string> names = {"node-a", "node-b", "node-c"}) {
    Effects fx;
    for (const std::string& n : names) nodes.Register(testing::Reg(n), now, &fx);
  }
  ~Parts() {
    if (std::uncaught_exceptions() == 0) CheckUsage();
  }

  // Submits chief-0 and `workers` workers needing `cpu` each; returns the stored job.
  // REPLICA scope unless told: most of these tests follow one replica on its own.
  Job* Submit(int workers, double cpu = 1, int retry_num = kDefaultJobRetryNum,
              v1::RestartScope scope = v1::RESTART_SCOPE_REPLICA) {
    v1::JobSpec spec = testing::Spec(workers, cpu);
    spec.mutable_scheduling()->set_restart_scope(scope);
    spec.mutable_fault_tolerance()->set_job_retry_num(retry_num);
    ApplyDefaults(&spec);
    Effects fx;
    return jobs.Find(life.Submit(spec, "/ckpt", now, &fx)->id);
  }
  // Places `job` on `placed` and confirms every replica started: RUNNING.
  void Run(Job* job, const std::vector<std::string>& placed) {
    Effects fx;
    life.StartAttempt(job, placed, now, &fx);
    for (Replica& r : job->replicas) {
      life.Started(job, &r, testing::Started(job->RunIdOf(r)), now, &fx);
    }
    REQUIRE(job->state == v1::JOB_STATE_RUNNING);
  }
  // The agent confirms the stop trainctl asked for.
  void ConfirmStop(Job* job, const std::string& replica) {
    Effects fx;
    Replica* r = job->FindReplica(replica);
    REQUIRE(r->state == v1::REPLICA_STATE_STOPPING);
    v1::ReplicaExited exited = testing::ExitedSignal(job->RunIdOf(*r), 15);
    exited.set_stopped_by_request(true);
    life.RecordExit(job, r, exited, now, &fx);
    life.ConfirmStop(job, r, exited, now, &fx);
  }

  // What the parts count incrementally equals a recount over the jobs.
  void CheckUsage() const {
    std::map<std::string, NodeRegistry::NodeUsage> by_node;
    std::map<std::string, ProjectUsage> by_project;
    for (const auto& [id, job] : jobs.all()) {
      if (IsAdmitted(job.state)) by_project[job.project].running_jobs++;
      for (const Replica& r : job.replicas) {
        if (!HoldsResources(r.state)) continue;
        by_node[r.node].used += r.need;
        by_node[r.node].replicas++;
        by_project[job.project].used += r.need;
      }
    }
    for (const auto& [name, node] : nodes.nodes()) {
      INFO("node " << name);
      CHECK(nodes.UsageOf(name).replicas == by_node[name].replicas);
      CHECK(std::abs(nodes.UsageOf(name).used.cpu - by_node[name].used.cpu) < 1e-9);
    }
    std::set<std::string> projects = queue.Projects();
    for (const auto& [name, usage] : by_project) projects.insert(name);
    for (const std::string& project : projects) {
      INFO("project " << project);
      CHECK(queue.UsageOf(project).running_jobs == by_project[project].running_jobs);
      CHECK(std::abs(queue.UsageOf(project).used.cpu - by_project[project].used.cpu) < 1e-9);
    }
    const absl::Status ports = life.binding().CheckPorts(jobs);
    INFO(ports.ToString());
    CHECK(ports.ok());
  }

  // Whether `port` is held in `node`'s pool.
  bool Held(const std::string& node, int32_t port) const {
    const PortPool* pool = nodes.book().PortsOf(node);
    return pool != nullptr && pool->InUse(port);
  }
  int32_t PortsHeld(const std::string& node) const {
    const PortPool* pool = nodes.book().PortsOf(node);
    return pool == nullptr ? 0 : pool->used();
  }
};

// The ports a replica has: its own and the rendezvous port (0 for a non-primary).
std::pair<int32_t, int32_t> PortsOf(const Replica& r) { return {r.port, r.rendezvous_port}; }

TEST_CASE("JobLifecycle: StartAttempt holds resources on the nodes and in the project") {
  Parts p;
  Job* job = p.Submit(1, 1.5);
  CHECK(p.queue.Queued("", 10) == std::vector<std::string>{job->id});
  CHECK(p.queue.UsageOf("default").running_jobs == 0);

  Effects fx;
  p.life.StartAttempt(job, {"node-a", "node-b"}, p.now, &fx);
  CHECK(job->state == v1::JOB_STATE_PENDING);
  CHECK(p.queue.Queued("", 10).empty());
  REQUIRE(job->attempts.size() == 1);
  CHECK(job->attempts[0].nodes == std::vector<std::string>{"node-a", "node-b"});
  CHECK(job->replicas[1].state == v1::REPLICA_STATE_STARTING);
  CHECK(p.nodes.UsageOf("node-a").replicas == 1);
  CHECK(p.nodes.UsageOf("node-a").used.cpu == 1.5);
  CHECK(p.nodes.UsageOf("node-b").used.memory_mb == 100);
  CHECK(p.nodes.UsageOf("node-c").replicas == 0);
  CHECK(p.queue.UsageOf("default").used.cpu == 3);
  CHECK(p.queue.UsageOf("default").running_jobs == 1);
  CHECK(p.jobs.active().count(job->id) == 1);
  CHECK(testing::Launches(fx).size() == 2);
  CHECK(fx.runs.size() == 2);
}

TEST_CASE("JobLifecycle: the job's end releases exactly what it held, once its replicas stop") {
  Parts p;
  Job* job = p.Submit(1);
  p.Run(job, {"node-a", "node-b"});
  Effects fx;
  Failure clean;
  clean.report.set_exit_code(0);
  p.life.EndRun(job, &job->replicas[0], clean, p.now, &fx);  // the primary exits 0
  CHECK(job->state == v1::JOB_STATE_SUCCEEDED);
  CHECK(p.nodes.UsageOf("node-a").replicas == 0);
  CHECK(p.nodes.UsageOf("node-b").replicas == 1);  // worker-0 still stops
  CHECK(p.queue.UsageOf("default").running_jobs == 0);
  CHECK(p.queue.UsageOf("default").used.cpu == 1);
  CHECK(p.jobs.active().count(job->id) == 1);

  p.ConfirmStop(job, "worker-0");
  CHECK(p.nodes.UsageOf("node-b").replicas == 0);
  CHECK(p.queue.UsageOf("default").used.cpu == 0);
  CHECK(p.queue.Projects().empty());
  CHECK(p.jobs.active().empty());
}

TEST_CASE("JobLifecycle: cancel ends a queued job at once, a running one when its replicas stop") {
  Parts p;
  Job* queued = p.Submit(0);
  Job* running = p.Submit(1);
  Effects fx;
  p.life.Cancel(queued, p.now, &fx);
  CHECK(queued->state == v1::JOB_STATE_CANCELLED);
  CHECK(p.queue.Queued("", 10) == std::vector<std::string>{running->id});

  p.Run(running, {"node-a", "node-b"});
  p.life.Cancel(running, p.now, &fx);
  CHECK(running->state == v1::JOB_STATE_CANCELLING);
  CHECK(p.queue.UsageOf("default").running_jobs == 1);  // CANCELLING is still admitted
  p.ConfirmStop(running, "chief-0");
  CHECK(running->state == v1::JOB_STATE_CANCELLING);
  p.ConfirmStop(running, "worker-0");
  CHECK(running->state == v1::JOB_STATE_CANCELLED);
  CHECK(running->error.code == absl::StatusCode::kCancelled);
  CHECK(p.queue.UsageOf("default").running_jobs == 0);
  CHECK(p.nodes.UsageOf("node-b").replicas == 0);
}

TEST_CASE("JobLifecycle: a retry requeues the job first in line, with its backoff wakeup") {
  Parts p;
  Job* waiting = p.Submit(0);  // submitted first, never placed
  Job* job = p.Submit(1);
  p.Run(job, {"node-a", "node-b"});
  p.now += absl::Minutes(1);

  Effects fx;
  Failure lost;  // R9: its agent restarted without it: an internal retry
  lost.kind = Failure::Kind::kLost;
  p.life.EndRun(job, &job->replicas[0], lost, p.now, &fx);
  CHECK(job->state == v1::JOB_STATE_QUEUED);
  CHECK(p.queue.Queued("", 10) == std::vector<std::string>{job->id, waiting->id});
  CHECK(job->budgets_used.internal_retries == 1);
  CHECK(job->next_attempt_time == p.now + absl::Seconds(5));  // retryBackoff's default
  CHECK(p.timers.next() == p.now + absl::Seconds(5));
  const Attempt& ended = job->attempts[0];
  CHECK(ended.state == v1::JOB_STATE_FAILED);
  CHECK(ended.failure_class == FailureClass::kInternal);
  CHECK(ended.decision == Decision::kRetryJob);
  CHECK(ended.budgets_left->internal_retries == kDefaultMaxInternalRetries - 1);
  CHECK(job->queue_reason.rfind("RETRY: attempt 2 starts once attempt 1's replicas", 0) == 0);
  CHECK(p.queue.UsageOf("default").running_jobs == 0);
  CHECK(p.nodes.UsageOf("node-b").replicas == 1);  // worker-0 stops first

  p.ConfirmStop(job, "worker-0");
  CHECK(p.queue.UsageOf("default").used.cpu == 0);
  p.life.StartAttempt(job, {"node-c", "node-c"}, p.now + absl::Seconds(5), &fx);
  CHECK(job->current_attempt() == 2);
  CHECK(p.nodes.UsageOf("node-c").replicas == 2);
  CHECK(p.queue.Queued("", 10) == std::vector<std::string>{waiting->id});
}

TEST_CASE("JobLifecycle: a replica moved off a lost node leaves a stale run there") {
  Parts p;
  Job* job = p.Submit(1);
  p.Run(job, {"node-a", "node-b"});
  const std::string old_run = job->RunIdOf(job->replicas[0]);
  Effects fx;
  p.nodes.Disconnect("node-a", p.now, &fx);
  p.life.MoveReplicasOff("node-a", MoveCause::kLost, "node node-a was lost", std::nullopt,
                         /*node_gone=*/true, p.now, &fx);
  const Replica& chief = job->replicas[0];
  CHECK(p.nodes.Find("node-a")->stale_runs == std::set<std::string>{old_run});
  CHECK(chief.node == "node-c");  // the most free node other than its own
  CHECK(chief.state == v1::REPLICA_STATE_STARTING);
  CHECK(chief.restart_count == 1);
  CHECK(chief.moves == 1);
  CHECK_FALSE(chief.moving());
  CHECK(job->budgets_used == Budgets{});  // a move charges nothing
  CHECK(job->attempts[0].nodes == std::vector<std::string>{"node-a", "node-b", "node-c"});
  CHECK(p.nodes.UsageOf("node-a").replicas == 0);
  CHECK(p.nodes.UsageOf("node-c").replicas == 1);
  CHECK(job->state == v1::JOB_STATE_RUNNING);  // a move is not a new attempt
}

TEST_CASE("JobLifecycle: a move with a reachable process stops it gracefully first") {
  Parts p;
  Job* job = p.Submit(1);
  p.Run(job, {"node-a", "node-b"});
  Effects fx;
  p.life.MoveReplicasOff("node-a", MoveCause::kUnhealthy, "node node-a failed its check",
                         absl::Seconds(30),
                         /*node_gone=*/false, p.now, &fx);
  Replica* chief = &job->replicas[0];
  CHECK(chief->state == v1::REPLICA_STATE_STOPPING);
  CHECK(chief->move_cause == MoveCause::kUnhealthy);
  REQUIRE(testing::Stops(fx).size() == 1);
  CHECK(testing::Stops(fx)[0].grace_period_ms() == 30'000);
  CHECK(p.nodes.UsageOf("node-a").replicas == 1);  // held until it stops
  CHECK(p.nodes.Find("node-a")->stale_runs.empty());

  const v1::ReplicaExited exited = testing::ExitedSignal(job->RunIdOf(*chief), 15);
  REQUIRE(p.life.StopKindOf(*job, *chief, exited) == JobLifecycle::StopKind::kForMove);
  p.life.RecordExit(job, chief, exited, p.now, &fx);
  p.life.moves().ContinueMove(job, chief, p.now, &fx);
  CHECK(chief->node == "node-c");
  CHECK(chief->state == v1::REPLICA_STATE_STARTING);
  CHECK(p.nodes.UsageOf("node-a").replicas == 0);
}

// Two nodes of 4 cpu, each full with one replica of the job: a moved replica finds no room.
struct FullCluster : Parts {
  Job* job;
  explicit FullCluster(int retry_num) : Parts({"node-a", "node-b"}) {
    job = Submit(1, 4, retry_num);
    Run(job, {"node-a", "node-b"});
  }
};

TEST_CASE("JobLifecycle: no room for a moved replica re-dispatches the job, charged (R16, R17)") {
  FullCluster c(/*retry_num=*/3);
  Effects fx;
  c.nodes.Disconnect("node-a", c.now, &fx);
  c.life.MoveReplicasOff("node-a", MoveCause::kLost, "node node-a was lost", std::nullopt,
                         /*node_gone=*/true, c.now, &fx);
  CHECK(c.job->state == v1::JOB_STATE_QUEUED);
  CHECK(c.job->budgets_used.redispatches == 1);
  CHECK(c.job->attempts[0].failure_class == FailureClass::kHostFault);
  CHECK(c.job->attempts[0].decision == Decision::kRedispatch);
  CHECK(c.queue.Queued("", 10) == std::vector<std::string>{c.job->id});
  CHECK(c.nodes.UsageOf("node-a").replicas == 0);
  c.ConfirmStop(c.job, "worker-0");
}

TEST_CASE("JobLifecycle: no room and re-dispatch off fails the job with error,exiting") {
  FullCluster c(/*retry_num=*/0);
  Effects fx;
  c.life.MoveReplicasOff("node-a", MoveCause::kUnhealthy, "node node-a failed its check",
                         std::nullopt,
                         /*node_gone=*/true, c.now, &fx);
  CHECK(c.job->state == v1::JOB_STATE_FAILED);
  CHECK(c.job->error.message ==
        "error,exiting: Replica chief-0 had to leave node node-a (node node-a failed its check) "
        "but no other healthy node has room for it (needs 4 cpu, 100 MiB, 0 gpus, 2 ports; "
        "node-b: 0 cpu, 3996 MiB, 0 gpus, 12767 ports free). Re-dispatch "
        "is off (faultTolerance.jobRetryNum is 0).");
  CHECK(c.job->attempts[0].decision == Decision::kFailJob);
  c.ConfirmStop(c.job, "worker-0");
}

TEST_CASE("JobLifecycle: a move with no room says why each other node could not take it") {
  FullCluster c(/*retry_num=*/3);
  Effects fx;
  c.nodes.Disconnect("node-b", c.now, &fx);
  c.life.MoveReplicasOff("node-a", MoveCause::kLost, "node node-a was lost", std::nullopt,
                         /*node_gone=*/true, c.now, &fx);
  REQUIRE(c.job->state == v1::JOB_STATE_QUEUED);
  CHECK_THAT(c.job->attempts[0].reason,
             Catch::EndsWith("no other healthy node has room for it (needs 4 cpu, 100 MiB, 0 "
                             "gpus, 2 ports; node-b: not connected)."));
  c.ConfirmStop(c.job, "worker-0");
}

TEST_CASE("JobLifecycle: a drain with no room re-dispatches uncharged, and never fails") {
  FullCluster c(/*retry_num=*/0);
  Effects fx;
  REQUIRE(c.nodes.Drain("node-a", "upgrade", absl::ZeroDuration(), c.now, &fx).ok());
  c.life.MoveReplicasOff("node-a", MoveCause::kDrain, "node node-a is draining: upgrade",
                         std::nullopt,
                         /*node_gone=*/false, c.now, &fx);
  Replica* chief = &c.job->replicas[0];
  REQUIRE(chief->state == v1::REPLICA_STATE_STOPPING);
  c.life.RecordExit(c.job, chief, testing::ExitedSignal(c.job->RunIdOf(*chief), 15), c.now, &fx);
  c.life.moves().ContinueMove(c.job, chief, c.now, &fx);
  CHECK(c.job->state == v1::JOB_STATE_QUEUED);
  CHECK(c.job->budgets_used.redispatches == 0);
  CHECK(c.job->attempts[0].failure_class == FailureClass::kMaintenance);
  CHECK(c.job->attempts[0].decision == Decision::kRedispatch);
  c.ConfirmStop(c.job, "worker-0");
}

TEST_CASE("JobLifecycle: a transient crash restarts in place, holding its node throughout") {
  Parts p;
  Job* job = p.Submit(1);
  p.Run(job, {"node-a", "node-b"});
  Effects fx;
  Failure crash;
  crash.report.set_exit_code(134);
  p.life.EndRun(job, &job->replicas[1], crash, p.now, &fx);  // the first restart: at once
  CHECK(job->replicas[1].state == v1::REPLICA_STATE_STARTING);
  CHECK(job->replicas[1].node == "node-b");
  CHECK(p.nodes.UsageOf("node-b").replicas == 1);

  p.life.Started(job, &job->replicas[1], testing::Started(job->RunIdOf(job->replicas[1])), p.now,
                 &fx);
  p.life.EndRun(job, &job->replicas[1], crash, p.now, &fx);  // the second waits its backoff
  CHECK(job->replicas[1].state == v1::REPLICA_STATE_RESTARTING);
  CHECK(p.timers.next() == p.now + absl::Seconds(1));
  CHECK(p.nodes.UsageOf("node-b").replicas == 1);

  REQUIRE(p.nodes.Cordon("node-b", "", p.now, &fx).ok());  // a cordon keeps what runs
  p.life.Tick(p.now + absl::Seconds(1), &fx);
  CHECK(job->replicas[1].state == v1::REPLICA_STATE_STARTING);
  CHECK(job->replicas[1].node == "node-b");
  CHECK(job->replicas[1].restart_count == 2);
}

// A RESTARTING replica's restart count already names a run not launched yet: moved, it launches
// that run on the new node, and no row says the run ever ran on the old one.
TEST_CASE("JobLifecycle: a restarting replica moved off its node keeps its pending run number") {
  Parts p;
  Job* job = p.Submit(1);
  p.Run(job, {"node-a", "node-b"});
  Effects fx;
  Failure crash;
  crash.report.set_exit_code(134);
  Replica* worker = &job->replicas[1];
  p.life.EndRun(job, worker, crash, p.now, &fx);  // restart 1, at once
  p.life.Started(job, worker, testing::Started(job->RunIdOf(*worker)), p.now, &fx);
  p.life.EndRun(job, worker, crash, p.now, &fx);  // restart 2, after its backoff
  REQUIRE(worker->state == v1::REPLICA_STATE_RESTARTING);
  REQUIRE(worker->restart_count == 2);

  Effects moved;
  REQUIRE(p.nodes.Drain("node-b", "upgrade", absl::ZeroDuration(), p.now, &moved).ok());
  p.life.MoveReplicasOff("node-b", MoveCause::kDrain, "node node-b is draining: upgrade",
                         std::nullopt,
                         /*node_gone=*/false, p.now, &moved);
  CHECK(worker->node == "node-c");
  CHECK(worker->restart_count == 2);  // run 2 is launched, on node-c
  for (const ReplicaRun& run : moved.runs) {
    CHECK_FALSE((run.restart == 2 && run.node == "node-b"));  // run 2 never ran on node-b
  }
}

// --- Ports --------------------------------------------------------------------------------------

TEST_CASE("JobLifecycle: StartAttempt gives every replica its ports before any launch") {
  Parts p;
  Job* job = p.Submit(2);
  Effects fx;
  p.life.StartAttempt(job, {"node-a", "node-b", "node-a"}, p.now, &fx);
  const Replica& chief = job->replicas[0];
  const Replica& w0 = job->replicas[1];
  const Replica& w1 = job->replicas[2];
  // From the start of the default range, in rank order: the primary takes two on node-a.
  CHECK(PortsOf(chief) == std::pair<int32_t, int32_t>{20000, 20001});
  CHECK(PortsOf(w0) == std::pair<int32_t, int32_t>{20000, 0});  // node-b has a pool of its own
  CHECK(PortsOf(w1) == std::pair<int32_t, int32_t>{20002, 0});
  CHECK(p.PortsHeld("node-a") == 3);
  CHECK(p.PortsHeld("node-b") == 1);
  CHECK(p.PortsHeld("node-c") == 0);
  // The first launch already lists the ports of replicas launched after it.
  std::vector<v1::LaunchReplica> launches = testing::Launches(fx);
  REQUIRE(launches.size() == 3);
  for (const v1::LaunchReplica& l : launches) {
    INFO(l.replica_name());
    CHECK(l.env().at("MASTER_PORT") == "20001");
    CHECK(l.env().at("MASTER_ADDR") == "node-a.local");
    CHECK(l.env()
              .at("TRAINCTL_CLUSTER_SPEC")
              .find("{\"chief\":[\"node-a.local:20000\"],"
                    "\"worker\":[\"node-b.local:20000\","
                    "\"node-a.local:20002\"]}") != std::string::npos);
  }
}

TEST_CASE("JobLifecycle: ports are kept over in-place restarts, during the backoff too") {
  Parts p;
  Job* job = p.Submit(1);
  p.Run(job, {"node-a", "node-b"});
  Replica* chief = &job->replicas[0];
  Replica* worker = &job->replicas[1];
  const auto chief_ports = PortsOf(*chief);
  const auto worker_ports = PortsOf(*worker);
  Effects fx;
  Failure crash;
  crash.report.set_exit_code(134);                // transient: restarts in place
  p.life.EndRun(job, worker, crash, p.now, &fx);  // the first restart: at once
  REQUIRE(worker->state == v1::REPLICA_STATE_STARTING);
  CHECK(PortsOf(*worker) == worker_ports);
  CHECK(p.Held("node-b", worker->port));
  std::vector<v1::LaunchReplica> relaunch = testing::Launches(fx);
  REQUIRE(relaunch.size() == 1);
  CHECK(relaunch[0]
            .env()
            .at("TRAINCTL_CLUSTER_SPEC")
            .find(absl::StrCat("node-b.local:", worker_ports.first)) != std::string::npos);

  p.life.Started(job, worker, testing::Started(job->RunIdOf(*worker)), p.now, &fx);
  p.life.EndRun(job, worker, crash, p.now, &fx);  // the second waits its backoff
  REQUIRE(worker->state == v1::REPLICA_STATE_RESTARTING);
  CHECK(p.Held("node-b", worker->port));  // nobody else gets it meanwhile
  p.life.Tick(p.now + absl::Seconds(1), &fx);
  REQUIRE(worker->state == v1::REPLICA_STATE_STARTING);
  CHECK(PortsOf(*worker) == worker_ports);

  p.life.EndRun(job, chief, crash, p.now, &fx);  // the primary keeps both of its ports
  REQUIRE(chief->state == v1::REPLICA_STATE_STARTING);
  CHECK(PortsOf(*chief) == chief_ports);
  CHECK(p.PortsHeld("node-a") == 2);
  CHECK(p.PortsHeld("node-b") == 1);
}

TEST_CASE("JobLifecycle: a replica gives its ports back when it stops holding resources") {
  Parts p;
  Job* job = p.Submit(1);
  p.Run(job, {"node-a", "node-b"});
  const auto chief_ports = PortsOf(job->replicas[0]);
  Effects fx;
  Failure clean;
  clean.report.set_exit_code(0);
  p.life.EndRun(job, &job->replicas[0], clean, p.now, &fx);  // the primary exits 0
  REQUIRE(job->state == v1::JOB_STATE_SUCCEEDED);
  CHECK(p.PortsHeld("node-a") == 0);
  CHECK(p.PortsHeld("node-b") == 1);  // worker-0 holds its port until it has stopped
  p.ConfirmStop(job, "worker-0");
  CHECK(p.PortsHeld("node-b") == 0);
  // The replicas still show the ports they had, for the record.
  CHECK(PortsOf(job->replicas[0]) == chief_ports);
  CHECK(job->replicas[1].port != 0);

  // The next job on node-a gets ports past the released ones (the cursor goes on).
  Job* next = p.Submit(0);
  p.Run(next, {"node-a"});
  CHECK(PortsOf(next->replicas[0]) ==
        std::pair<int32_t, int32_t>{chief_ports.second + 1, chief_ports.second + 2});
}

TEST_CASE("JobLifecycle: a moved replica gets a port on its new node and frees the old one") {
  SECTION("its node is lost: moved at once") {
    Parts p;
    Job* job = p.Submit(1);
    p.Run(job, {"node-a", "node-b"});
    Effects fx;
    p.nodes.Disconnect("node-a", p.now, &fx);
    p.life.MoveReplicasOff("node-a", MoveCause::kLost, "node node-a was lost", std::nullopt,
                           /*node_gone=*/true, p.now, &fx);
    const Replica& chief = job->replicas[0];
    REQUIRE(chief.node == "node-c");
    CHECK(PortsOf(chief) == std::pair<int32_t, int32_t>{20000, 20001});  // node-c's first
    CHECK(p.Held("node-c", 20000));
    CHECK(p.Held("node-c", 20001));
    CHECK(p.PortsHeld("node-a") == 0);
    std::vector<v1::LaunchReplica> launches = testing::Launches(fx);
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].env().at("MASTER_PORT") == "20001");
    CHECK(launches[0].env().at("MASTER_ADDR") == "node-c.local");
  }
  SECTION("drained: it holds its old ports until its process has stopped") {
    Parts p;
    Job* job = p.Submit(1);
    p.Run(job, {"node-a", "node-b"});
    // node-c already runs a replica with the first ports of its range; it has the most cpu left.
    Job* other = p.Submit(0, 0.5);
    p.Run(other, {"node-c"});
    Effects fx;
    REQUIRE(p.nodes.Drain("node-b", "upgrade", absl::ZeroDuration(), p.now, &fx).ok());
    p.life.MoveReplicasOff("node-b", MoveCause::kDrain, "node node-b is draining: upgrade",
                           std::nullopt,
                           /*node_gone=*/false, p.now, &fx);
    Replica* worker = &job->replicas[1];
    REQUIRE(worker->state == v1::REPLICA_STATE_STOPPING);
    CHECK(p.Held("node-b", worker->port));
    p.life.RecordExit(job, worker, testing::ExitedSignal(job->RunIdOf(*worker), 15), p.now, &fx);
    p.life.moves().ContinueMove(job, worker, p.now, &fx);
    REQUIRE(worker->node == "node-c");
    CHECK(PortsOf(*worker) == std::pair<int32_t, int32_t>{20002, 0});  // not the other job's
    CHECK(p.PortsHeld("node-b") == 0);
    CHECK(p.PortsHeld("node-c") == 3);
  }
  SECTION("restarting on a node that no longer keeps replicas") {
    Parts p;
    Job* job = p.Submit(1);
    p.Run(job, {"node-a", "node-b"});
    Replica* worker = &job->replicas[1];
    Effects fx;
    Failure crash;
    crash.report.set_exit_code(134);
    p.life.EndRun(job, worker, crash, p.now, &fx);
    p.life.Started(job, worker, testing::Started(job->RunIdOf(*worker)), p.now, &fx);
    p.life.EndRun(job, worker, crash, p.now, &fx);
    REQUIRE(worker->state == v1::REPLICA_STATE_RESTARTING);
    p.nodes.Disconnect("node-b", p.now, &fx);  // the restart finds its node gone
    p.life.Tick(p.now + absl::Seconds(1), &fx);
    REQUIRE(worker->node == "node-c");
    CHECK(worker->state == v1::REPLICA_STATE_STARTING);
    CHECK(PortsOf(*worker) == std::pair<int32_t, int32_t>{20000, 0});
    CHECK(p.PortsHeld("node-b") == 0);
  }
}

TEST_CASE("JobLifecycle: RenewPorts gives every replica different ports on its node") {
  Parts p;
  Job* job = p.Submit(2);
  p.Run(job, {"node-a", "node-b", "node-a"});
  std::vector<std::pair<int32_t, int32_t>> before;
  for (const Replica& r : job->replicas) before.push_back(PortsOf(r));

  p.life.binding().RenewPorts(
      job);  // every replica holds resources: the new ports are held at once
  for (size_t i = 0; i < job->replicas.size(); ++i) {
    const Replica& r = job->replicas[i];
    INFO(r.name);
    CHECK(r.port != before[i].first);
    CHECK(p.Held(r.node, r.port));
    CHECK_FALSE(p.Held(r.node, before[i].first));
  }
  CHECK(job->replicas[0].rendezvous_port != before[0].second);
  CHECK(job->replicas[0].rendezvous_port != 0);
  CHECK(job->replicas[1].rendezvous_port == 0);
  CHECK(p.PortsHeld("node-a") == 3);
  CHECK(p.PortsHeld("node-b") == 1);
  // Launches built now list the new ports.
  const v1::LaunchReplica l = BuildLaunch(*job, 1, p.nodes.nodes());
  CHECK(l.env().at("MASTER_PORT") == absl::StrCat(job->replicas[0].rendezvous_port));
  CHECK(l.env()
            .at("TRAINCTL_CLUSTER_SPEC")
            .find(absl::StrCat("\"node-b.local:", job->replicas[1].port, "\"")) !=
        std::string::npos);

  // Replicas that hold nothing (the job's replicas stopped) have new ports picked, not held.
  Effects fx;
  p.life.Cancel(job, p.now, &fx);
  for (const char* name : {"chief-0", "worker-0", "worker-1"}) p.ConfirmStop(job, name);
  CHECK(p.PortsHeld("node-a") == 0);
  const int32_t stopped_port = job->replicas[2].port;
  p.life.binding().RenewPorts(job);
  CHECK(job->replicas[2].port != stopped_port);
  CHECK(job->replicas[2].port != job->replicas[0].port);  // distinct though none is held
  CHECK(job->replicas[2].port != job->replicas[0].rendezvous_port);
  CHECK(p.PortsHeld("node-a") == 0);
  CHECK(p.PortsHeld("node-b") == 0);
}

}  // namespace
}  // namespace trainctl::sched
