// Host health end to end (R11-R19): preflight and periodic checks on real agents, isolated and
// flapping hosts, lost and drained nodes, startup scripts, and what happened to the jobs on them.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

using std::chrono::seconds;

constexpr size_t kNpos = std::string::npos;

// The latest check run of `phase` on the node, or nullptr.
const v1::CheckRun* FindCheck(const v1::Node& node, const std::string& phase) {
  for (const v1::CheckRun& run : node.checks()) {
    if (run.phase() == phase) return &run;
  }
  return nullptr;
}

const v1::CheckResult* FindItem(const v1::CheckRun& run, const std::string& item) {
  for (const v1::CheckResult& r : run.items()) {
    if (r.item() == item) return &r;
  }
  return nullptr;
}

// True when some item of the run says `text` in its message or measured value.
bool RunMentions(const v1::CheckRun& run, const std::string& text) {
  for (const v1::CheckResult& r : run.items()) {
    if (Contains(r.message(), text) || Contains(r.measured(), text)) return true;
  }
  return false;
}

bool HasEvent(MiniCluster& c, const std::string& job_id, const std::string& node,
              const std::string& type) {
  return !c.ListEvents(job_id, node, type).empty();
}

int NodeIndex(const std::string& node) {
  int i = -1;
  REQUIRE(absl::SimpleAtoi(absl::StripPrefix(node, "node-"), &i));
  return i;
}

std::string WriteScript(MiniCluster& c, const std::string& name, const std::string& body) {
  std::string path = c.WriteFile(name, absl::StrCat("#!/bin/sh\n", body));
  REQUIRE(chmod(path.c_str(), 0755) == 0);
  return path;
}

// A health program for node i that fails, first line "ECC errors on GPU 0", while
// DIR/sick-node-<i> exists.
std::string HealthProgram(MiniCluster& c, int i) {
  std::string flag = absl::StrCat(c.dir(), "/sick-", NodeName(i));
  return WriteScript(c, absl::StrCat("health-", NodeName(i), ".sh"),
                     absl::StrCat("if [ -e ", flag,
                                  " ]; then\n"
                                  "  echo 'ECC errors on GPU 0'\n"
                                  "  echo 'uncorrectable errors: 12'\n"
                                  "  exit 1\n"
                                  "fi\n"
                                  "echo 'GPUs healthy'\n"));
}

void SetSick(MiniCluster& c, int i, bool sick) {
  std::string flag = absl::StrCat(c.dir(), "/sick-", NodeName(i));
  if (sick) {
    c.WriteFile(absl::StrCat("sick-", NodeName(i)), "");
  } else {
    std::filesystem::remove(flag);
  }
}

// A job of one chief and `workers` workers, 1 cpu each (so placement spreads them one per node
// on equal nodes). Every replica marks itself ready; the chief exits 0 once all of its attempt's
// replicas are ready, so an attempt that lost a replica to a host fault never succeeds.
std::string AllReadyJob(int workers, const std::string& extra = "") {
  return absl::StrCat(R"(
displayName: all-ready
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'touch DIR/ready-$TRAINCTL_ATTEMPT-$TRAINCTL_REPLICA_NAME; while [ $(ls DIR | grep -c ^ready-$TRAINCTL_ATTEMPT-) -lt )",
                      workers + 1, R"( ]; do sleep 0.05; done']
  resources: {cpu: 1, memoryMb: 64}
- name: worker
  replicaCount: )",
                      workers, R"(
  command: [/bin/sh, -c, 'touch DIR/ready-$TRAINCTL_ATTEMPT-$TRAINCTL_REPLICA_NAME; exec sleep 300']
  resources: {cpu: 1, memoryMb: 64}
scheduling:
  retryBackoff: {initial: 100ms, max: 200ms}
)",
                      extra);
}

bool Ran(const v1::Attempt& attempt, const std::string& node) {
  for (const std::string& n : attempt.nodes()) {
    if (n == node) return true;
  }
  return false;
}

TEST_CASE("a failed preflight isolates the host and re-dispatches the job to healthy hosts",
          "[integration][health]") {
  ClusterOptions o;
  o.agents = 3;
  o.agent_args[0] = {"--check-disk-root-gb", "1e9", "--health-check-interval", "0"};
  MiniCluster c(o);
  std::string id = c.Submit(c.Spec(AllReadyJob(2)));
  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED, seconds(60));

  REQUIRE(job.attempts_size() == 2);
  const v1::Attempt& first = job.attempts(0);
  CHECK(Ran(first, "node-0"));  // spread placement used every node
  CHECK(first.failure_class() == "HOST_FAULT");
  CHECK(first.decision() == "REDISPATCH");
  CHECK(first.node() == "node-0");
  CHECK(job.budgets_used().redispatches() == 1);
  CHECK(job.budgets_used().job_retries() == 0);
  CHECK(job.budgets_used().internal_retries() == 0);
  CHECK_FALSE(Ran(job.attempts(1), "node-0"));
  for (const v1::Replica& r : job.replicas()) {
    INFO(r.name());
    CHECK(r.node() != "node-0");
    CHECK(r.moves() == 0);
  }

  v1::Node node = c.GetNode("node-0");
  CHECK(node.state() == v1::NODE_STATE_ISOLATED);
  CHECK(node.health() == v1::NODE_HEALTH_UNHEALTHY);
  const v1::CheckRun* preflight = FindCheck(node, "preflight");
  REQUIRE(preflight != nullptr);
  CHECK_FALSE(preflight->passed());
  CHECK(preflight->job_id() == id);
  const v1::CheckResult* root = FindItem(*preflight, "disk-size root");
  REQUIRE(root != nullptr);
  CHECK_FALSE(root->passed());
  for (const char* healthy : {"node-1", "node-2"}) {
    CHECK(c.GetNode(healthy).state() == v1::NODE_STATE_READY);
  }
  CHECK(Contains(c.AgentLog(0), "item disk-size root failed"));
  CHECK(HasEvent(c, "", "node-0", "NodeIsolated"));

  CliResult describe = c.Cli({"node", "describe", "node-0"});
  INFO(describe.err);
  CHECK(describe.exit_code == 0);
  CHECK(Contains(describe.out, "ISOLATED"));
  CHECK(Contains(describe.out, "disk-size root"));
}

TEST_CASE("a failed preflight fails a job with jobRetryNum 0", "[integration][health]") {
  ClusterOptions o;
  o.agents = 2;
  o.agent_args[0] = {"--check-disk-root-gb", "1e9"};
  MiniCluster c(o);
  std::string id = c.Submit(c.Spec(AllReadyJob(1, "faultTolerance: {jobRetryNum: 0}\n")));
  v1::Job job = c.WaitForEnd(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  INFO(job.error().DebugString());
  CHECK(job.error().message().rfind("error,exiting:", 0) == 0);
  CHECK(job.attempts_size() == 1);
  CHECK(job.budgets_used().redispatches() == 0);
  CHECK(HasEvent(c, id, "", "JobExiting"));
  CHECK(c.GetNode("node-0").state() == v1::NODE_STATE_ISOLATED);
}

TEST_CASE("a SIGKILLed agent's node is lost, its replica moves and resumes from its checkpoint",
          "[integration][health]") {
  ClusterOptions o;
  o.agents = 3;
  o.daemon_args = {"--node-lost-timeout", "2s", "--heartbeat-interval", "200ms"};
  MiniCluster c(o);
  // The first run trains to step 3 and then hangs, holding its node; the moved run resumes and
  // finishes at step 6.
  std::string id = c.Submit(c.Spec(R"(
displayName: lost
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'if [ "$TRAINCTL_RESTART_COUNT" = 0 ]; then exec WORKLOAD --pidfile DIR/pid-first --train 3 --wait-file DIR/never; fi; exec WORKLOAD --train 6']
  resources: {cpu: 1, memoryMb: 64}
)"));
  v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const std::string lost = running.replicas(0).node();
  const int victim = NodeIndex(lost);
  const pid_t orphan = WaitForPidFile(c.dir() + "/pid-first");
  const std::string ckpt = running.checkpoint_dir() + "/ckpt-chief-0";
  REQUIRE(Eventually([&] { return absl::StripAsciiWhitespace(ReadTextFile(ckpt)) == "3"; }));

  c.KillAgent(victim, SIGKILL);
  c.WaitForNodeState(lost, v1::NODE_STATE_LOST, seconds(10));
  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  CHECK(job.attempts_size() == 1);
  const v1::Replica& chief = job.replicas(0);
  CHECK(chief.name() == "chief-0");
  CHECK(chief.rank() == 0);
  CHECK(chief.node() != lost);
  CHECK(chief.moves() == 1);
  CHECK(chief.restart_count() == 1);
  CHECK(chief.charged_restarts() == 0);
  CHECK(job.budgets_used().job_retries() == 0);
  CHECK(job.budgets_used().internal_retries() == 0);
  CHECK(job.budgets_used().redispatches() == 0);
  CHECK(HasEvent(c, "", lost, "NodeLost"));
  CHECK(HasEvent(c, id, "", "ReplicaMoved"));
  CliResult logs = c.Cli({"logs", id, "--replica", "chief-0", "--attempt", "1", "--restart", "1"});
  INFO(logs.err);
  CHECK(Contains(logs.out, "resumed from step 3"));
  CHECK(Contains(logs.out, "trained to step 6"));

  // The old run outlived its agent. The agent's next incarnation reports it, and the scheduler
  // has it stopped: it was moved away.
  CHECK(PidAlive(orphan));
  c.StartAgent(victim);
  CHECK(Eventually([&] { return !PidAlive(orphan); }, seconds(20)));
  v1::Node back = c.WaitForNodeState(lost, v1::NODE_STATE_READY);
  CHECK(back.connected());
  CHECK(HasEvent(c, "", lost, "NodeReturned"));
  if (PidAlive(orphan)) kill(orphan, SIGKILL);  // never leave it behind, even on failure
}

TEST_CASE("draining a node moves its replica gracefully, uncharged, and cordons the node",
          "[integration][health]") {
  MiniCluster c(3);
  std::string id = c.Submit(c.Spec(R"(
displayName: drained
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --trap-term, --print, started, --wait-file, DIR/finish]
  resources: {cpu: 1, memoryMb: 64}
- name: worker
  replicaCount: 1
  command: [WORKLOAD, --trap-term, --print, started, --wait-file, DIR/finish]
  resources: {cpu: 1, memoryMb: 64}
scheduling: {restartScope: REPLICA}   # only the drained replica moves
)"));
  v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const std::string drained = running.replicas(1).node();
  const std::string chief_node = running.replicas(0).node();

  CliResult drain =
      c.Cli({"node", "drain", drained, "--reason", "kernel upgrade", "--deadline", "10s"});
  INFO(drain.err);
  REQUIRE(drain.exit_code == 0);
  v1::Job moved = c.WaitForJob(id, [](const v1::Job& j) {
    return j.replicas(1).moves() == 1 && j.replicas(1).state() == v1::REPLICA_STATE_RUNNING;
  });
  const v1::Replica& worker = moved.replicas(1);
  CHECK(worker.name() == "worker-0");
  CHECK(worker.rank() == 1);
  CHECK(worker.node() != drained);
  CHECK(worker.restart_count() == 1);
  CHECK(worker.charged_restarts() == 0);
  CHECK(moved.replicas(0).node() == chief_node);  // the chief was not touched
  CHECK(moved.replicas(0).restart_count() == 0);
  CHECK(moved.attempts_size() == 1);
  CHECK(moved.state() == v1::JOB_STATE_RUNNING);
  // Run 0 of the current attempt: the one stopped on the drained node.
  CliResult old_run = c.Cli({"logs", id, "--replica", "worker-0", "--restart", "0"});
  INFO(old_run.err);
  CHECK(Contains(old_run.out, "got SIGTERM"));  // stopped gracefully

  v1::Node node = c.WaitForNodeState(drained, v1::NODE_STATE_CORDONED);
  CHECK(node.cordoned());
  CHECK(node.replicas() == 0);
  CHECK(Contains(node.health_description(), "maintenance event"));
  CHECK(Contains(node.health_description(), "kernel upgrade"));
  CHECK(HasEvent(c, "", drained, "NodeDrainStarted"));
  CHECK(HasEvent(c, "", drained, "NodeDrained"));
  CHECK(HasEvent(c, id, "", "ReplicaMoved"));
  CliResult nodes = c.Cli({"nodes"});
  CHECK(Contains(nodes.out, "CORDONED"));

  c.WriteFile("finish", "");
  v1::Job done = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  CHECK(done.budgets_used().job_retries() == 0);
  CHECK(done.budgets_used().redispatches() == 0);

  CliResult uncordon = c.Cli({"node", "uncordon", drained});
  INFO(uncordon.err);
  CHECK(uncordon.exit_code == 0);
  v1::Node ready = c.WaitForNodeState(drained, v1::NODE_STATE_READY);
  CHECK_FALSE(ready.cordoned());
}

// Submits a one-replica job and steers it onto node-0: the other `agents` - 1 nodes are cordoned
// until it runs there. Returns the job id once they take work again.
std::string SubmitOnNode0(MiniCluster& c, int agents, const std::string& spec) {
  for (int i = 1; i < agents; ++i) c.CordonNode(NodeName(i));
  std::string id = c.Submit(c.Spec(spec));
  v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  REQUIRE(running.replicas(0).node() == "node-0");
  for (int i = 1; i < agents; ++i) {
    c.UncordonNode(NodeName(i));
    c.WaitForNodeState(NodeName(i), v1::NODE_STATE_READY);
  }
  return id;
}

// Scenarios 3 and 4 (R15): a replica exits 1 on node-0, and the health check the agent runs right
// after the exit tells a host fault from the user's.
class ExitCheckCluster {
 public:
  ExitCheckCluster() : c_(Options()) {
    for (int i = 0; i < 3; ++i) {
      c_.SetAgentArgs(
          i, {"--health-check-program", HealthProgram(c_, i), "--health-check-interval", "1h"});
    }
    c_.StartAgents();
    // The start-up check has run and passed everywhere before the test makes a host sick.
    for (int i = 0; i < 3; ++i) {
      c_.WaitForNode(NodeName(i), [](const v1::Node& n) {
        const v1::CheckRun* periodic = FindCheck(n, "periodic");
        return periodic != nullptr && periodic->passed() && n.state() == v1::NODE_STATE_READY;
      });
    }
  }

  MiniCluster& cluster() { return c_; }

  // Runs a replica on node-0 that exits 1 on its first run once DIR/release exists (and 0 on
  // later runs); returns the job id once it runs there and the other nodes take work again.
  std::string RunOnNode0() {
    return SubmitOnNode0(c_, 3, R"(
displayName: exit-check
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --print, started, --wait-file, DIR/release, --fail-times, "1", --fail-code, "1", --print, finished]
  resources: {cpu: 1, memoryMb: 64}
scheduling:
  retryBackoff: {initial: 100ms, max: 200ms}
)");
  }

 private:
  static ClusterOptions Options() {
    ClusterOptions o;
    o.agents = 3;
    o.start_agents = false;  // the health programs live in dir()
    return o;
  }

  MiniCluster c_;
};

TEST_CASE("an abnormal exit on a host that then fails its health check re-dispatches the job",
          "[integration][health]") {
  ExitCheckCluster ec;
  MiniCluster& c = ec.cluster();
  std::string id = ec.RunOnNode0();
  SetSick(c, 0, true);
  c.WriteFile("release", "");

  v1::Node node = c.WaitForNodeState("node-0", v1::NODE_STATE_ISOLATED);
  CHECK(node.health() == v1::NODE_HEALTH_UNHEALTHY);
  CHECK((Contains(node.state_reason(), "ECC errors on GPU 0") ||
         Contains(node.health_description(), "ECC errors on GPU 0")));
  const v1::CheckRun* exit_check = FindCheck(node, "exit");
  REQUIRE(exit_check != nullptr);
  CHECK_FALSE(exit_check->passed());
  CHECK(exit_check->job_id() == id);
  CHECK(RunMentions(*exit_check, "ECC errors on GPU 0"));

  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  CHECK(job.attempts(0).failure_class() == "HOST_FAULT");
  CHECK(job.attempts(0).decision() == "REDISPATCH");
  CHECK(job.budgets_used().redispatches() == 1);
  CHECK(job.budgets_used().job_retries() == 0);
  CHECK(job.replicas(0).node() != "node-0");
  CHECK(c.GetNode("node-0").state() == v1::NODE_STATE_ISOLATED);
}

TEST_CASE("an abnormal exit on a host that passes its health check is the user's error",
          "[integration][health]") {
  ExitCheckCluster ec;
  MiniCluster& c = ec.cluster();
  std::string id = ec.RunOnNode0();
  c.WriteFile("release", "");

  v1::Job job = c.WaitForEnd(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().reason() == "USER_ERROR");
  CHECK(job.error().code() == 3);
  CHECK(job.error().message() ==
        "Replica chief-0 exited with a non-zero status of 1. Termination reason: Error.");
  CHECK(job.attempts_size() == 1);
  CHECK(job.budgets_used().redispatches() == 0);
  // The agent did check the host after the exit, and the host passed.
  v1::Node node = c.WaitForNode("node-0", [&](const v1::Node& n) {
    const v1::CheckRun* exit_check = FindCheck(n, "exit");
    return exit_check != nullptr && exit_check->job_id() == id;
  });
  CHECK(FindCheck(node, "exit")->passed());
  CHECK(node.state() == v1::NODE_STATE_READY);
  CHECK(node.health() == v1::NODE_HEALTH_HEALTHY);
}

TEST_CASE("a failed periodic check isolates the host and moves its running replicas",
          "[integration][health]") {
  ClusterOptions o;
  o.agents = 3;
  o.start_agents = false;
  MiniCluster c(o);
  c.SetAgentArgs(
      0, {"--health-check-program", HealthProgram(c, 0), "--health-check-interval", "300ms"});
  c.StartAgents();
  c.WaitForNodeState("node-0", v1::NODE_STATE_READY);
  std::string id = SubmitOnNode0(c, 3, R"(
displayName: periodic
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --trap-term, --print, started, --wait-file, DIR/finish]
  resources: {cpu: 1, memoryMb: 64}
)");

  SetSick(c, 0, true);
  v1::Node node = c.WaitForNodeState("node-0", v1::NODE_STATE_ISOLATED);
  CHECK(node.health() == v1::NODE_HEALTH_UNHEALTHY);
  CHECK(Contains(node.state_reason(), "ECC errors on GPU 0"));
  v1::Job moved = c.WaitForJob(id, [](const v1::Job& j) {
    return j.replicas(0).moves() == 1 && j.replicas(0).state() == v1::REPLICA_STATE_RUNNING;
  });
  CHECK(moved.replicas(0).node() != "node-0");
  CHECK(moved.replicas(0).name() == "chief-0");
  CHECK(moved.replicas(0).charged_restarts() == 0);
  CHECK(moved.attempts_size() == 1);
  CHECK(moved.budgets_used().redispatches() == 0);
  CHECK(HasEvent(c, id, "", "ReplicaMoved"));
  CliResult old_run =
      c.Cli({"logs", id, "--replica", "chief-0", "--attempt", "1", "--restart", "0"});
  CHECK(Contains(old_run.out, "got SIGTERM"));

  c.WriteFile("finish", "");
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("a host isolated too often is flapping and stays out until uncordoned",
          "[integration][health]") {
  ClusterOptions o;
  o.agents = 1;
  o.start_agents = false;
  o.daemon_args = {"--flap-threshold", "2"};
  MiniCluster c(o);
  c.SetAgentArgs(
      0, {"--health-check-program", HealthProgram(c, 0), "--health-check-interval", "300ms"});
  c.StartAgents();
  c.WaitForNodeState("node-0", v1::NODE_STATE_READY);
  auto latest_periodic_passed = [](bool passed) {
    return [passed](const v1::Node& n) {
      const v1::CheckRun* periodic = FindCheck(n, "periodic");
      return periodic != nullptr && periodic->passed() == passed;
    };
  };
  c.WaitForNode("node-0", latest_periodic_passed(true));

  SetSick(c, 0, true);
  v1::Node isolated = c.WaitForNodeState("node-0", v1::NODE_STATE_ISOLATED);
  CHECK(isolated.health() == v1::NODE_HEALTH_UNHEALTHY);
  CHECK_FALSE(isolated.flapping());
  CHECK(Contains(isolated.state_reason(), "ECC errors on GPU 0"));

  SetSick(c, 0, false);
  v1::Node healthy = c.WaitForNodeState("node-0", v1::NODE_STATE_READY);
  CHECK(healthy.health() == v1::NODE_HEALTH_HEALTHY);
  CHECK(HasEvent(c, "", "node-0", "NodeHealthy"));

  SetSick(c, 0, true);
  v1::Node flapping = c.WaitForNode("node-0", [](const v1::Node& n) {
    return n.state() == v1::NODE_STATE_ISOLATED && n.flapping();
  });
  CHECK(flapping.isolation_times_size() == 2);
  CHECK(HasEvent(c, "", "node-0", "NodeFlapping"));

  // Its checks pass again, and it still stays out.
  SetSick(c, 0, false);
  v1::Node held = c.WaitForNode("node-0", latest_periodic_passed(true));
  CHECK(held.state() == v1::NODE_STATE_ISOLATED);
  CHECK(held.flapping());

  c.UncordonNode("node-0");
  v1::Node back = c.WaitForNodeState("node-0", v1::NODE_STATE_READY);
  CHECK_FALSE(back.flapping());
  CHECK(back.health() == v1::NODE_HEALTH_HEALTHY);
}

TEST_CASE("startup scripts run before the agent registers, a failing one isolates the host",
          "[integration][health]") {
  ClusterOptions o;
  o.agents = 3;
  o.start_agents = false;
  MiniCluster c(o);
  const std::string marker = c.dir() + "/startup-ran-node-0";
  c.SetAgentArgs(0, {"--startup-script",
                     WriteScript(c, "startup-ok.sh",
                                 absl::StrCat("echo \"$TRAINCTL_NODE\" > ", c.dir(),
                                              "/startup-ran-$TRAINCTL_NODE\necho prepared\n"))});
  c.SetAgentArgs(1, {"--startup-script",
                     WriteScript(c, "startup-bad.sh",
                                 "echo 'no GPU driver'\necho 'modprobe: nvidia not found' >&2\n"
                                 "exit 3\n")});
  for (int i = 0; i < 3; ++i) c.StartAgent(i);

  // The first time the scheduler knows node-0, its script has already run.
  bool marker_at_register = false;
  c.WaitForNode("node-0", [&](const v1::Node&) {
    marker_at_register = std::filesystem::exists(marker);
    return true;
  });
  CHECK(marker_at_register);
  CHECK(absl::StripAsciiWhitespace(ReadTextFile(marker)) == "node-0");
  v1::Node good = c.WaitForNodeState("node-0", v1::NODE_STATE_READY);
  const v1::CheckRun* startup = FindCheck(good, "startup");
  REQUIRE(startup != nullptr);
  CHECK(startup->passed());

  v1::Node bad = c.WaitForNodeState("node-1", v1::NODE_STATE_ISOLATED);
  CHECK(bad.health() == v1::NODE_HEALTH_UNHEALTHY);
  CHECK(Contains(bad.state_reason(), "no GPU driver"));
  const v1::CheckRun* failed = FindCheck(bad, "startup");
  REQUIRE(failed != nullptr);
  CHECK_FALSE(failed->passed());
  c.WaitForNodeState("node-2", v1::NODE_STATE_READY);

  std::string id = c.Submit(c.Spec(AllReadyJob(2)));
  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  CHECK(job.attempts_size() == 1);
  for (const v1::Attempt& a : job.attempts()) CHECK_FALSE(Ran(a, "node-1"));
  for (const v1::Replica& r : job.replicas()) CHECK(r.node() != "node-1");
  CliResult describe = c.Cli({"node", "describe", "node-1"});
  CHECK(Contains(describe.out, "no GPU driver"));
}

}  // namespace
}  // namespace trainctl::testing
