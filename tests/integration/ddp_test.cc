// PyTorch DDP jobs end to end: examples/pytorch-ddp/train.py (gloo, CPU) on a real trainctld and
// two real agents. The tests need Debian's python3-torch as /usr/bin/python3; without it they
// pass with a warning, so a developer without torch still gets a green run. CI installs it.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

const std::string kExample = std::string(TRAINCTL_SOURCE_DIR) + "/examples/pytorch-ddp";

// train.py as one chief and `workers` workers, each run with `args` (YAML flow list items).
std::string DdpJob(int workers, const std::string& args,
                   const std::string& scheduling = "{stopGracePeriod: 2s}") {
  const std::string pool = absl::StrCat("  command: [/usr/bin/python3, ", kExample, "/train.py, ",
                                        args, "]\n  resources: {cpu: 1, memoryMb: 1024}\n");
  return absl::StrCat("displayName: ddp\nworkerPools:\n- name: chief\n  replicaCount: 1\n", pool,
                      "- name: worker\n  replicaCount: ", workers, "\n", pool,
                      "scheduling: ", scheduling, "\n");
}

// REQUIREs that replica `name` (rank `rank`) logged every step from 1 to `steps`.
void CheckLoggedSteps(MiniCluster& c, const std::string& id, const std::string& name, int rank,
                      int steps) {
  CliResult logs = c.Cli({"logs", id, "--replica", name});
  INFO(name << ": " << logs.err << logs.out);
  REQUIRE(logs.exit_code == 0);
  for (int step = 1; step <= steps; ++step) {
    CHECK(logs.out.find(absl::StrCat("rank ", rank, " step ", step, " loss ")) !=
          std::string::npos);
  }
}

TEST_CASE("the pytorch-ddp example trains 2 ranks on two agents and checkpoints",
          "[integration][torch]") {
  if (!HaveTorch()) return;
  MiniCluster c(2);
  // The example's job.yaml as it is, but for the path to the repository.
  const std::string spec =
      absl::StrReplaceAll(ReadTextFile(kExample + "/job.yaml"),
                          {{"/path/to/trainctl", std::string(TRAINCTL_SOURCE_DIR)}});
  REQUIRE(spec.find("train.py") != std::string::npos);
  std::string id = c.Submit(spec);
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(120));
  INFO(job.error().message() << "\n" << job.error().output_tail());
  REQUIRE(job.state() == v1::JOB_STATE_SUCCEEDED);
  REQUIRE(job.replicas_size() == 2);
  CHECK(job.replicas(0).node() != job.replicas(1).node());
  CheckLoggedSteps(c, id, "chief-0", 0, 20);
  CheckLoggedSteps(c, id, "worker-0", 1, 20);
  CHECK(std::filesystem::is_regular_file(job.checkpoint_dir() + "/checkpoint.pt"));
}

TEST_CASE("a 4-rank DDP job over two agents succeeds", "[integration][torch]") {
  if (!HaveTorch()) return;
  MiniCluster c(2);
  std::string id = c.Submit(DdpJob(3, R"(--steps, "5", --checkpoint-every, "0")"));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(120));
  INFO(job.error().message() << "\n" << job.error().output_tail());
  REQUIRE(job.state() == v1::JOB_STATE_SUCCEEDED);
  REQUIRE(job.replicas_size() == 4);
  std::set<std::string> nodes;
  for (const v1::Replica& r : job.replicas()) nodes.insert(r.node());
  CHECK(nodes == std::set<std::string>{"node-0", "node-1"});
  const char* names[] = {"chief-0", "worker-0", "worker-1", "worker-2"};
  for (int rank = 0; rank < 4; ++rank) CheckLoggedSteps(c, id, names[rank], rank, 5);
}

// The peer's consequent failure (its collective breaks when worker-0 exits) may be reported first;
// it waits the settle window, and worker-0's own exit, with the earlier exit time, is the cause.
TEST_CASE("a rank that exits 1 on its own fails the DDP job, and the error names it",
          "[integration][torch]") {
  if (!HaveTorch()) return;
  MiniCluster c(2);
  std::string id = c.Submit(
      DdpJob(1, R"(--steps, "20", --step-seconds, "0.05", --exit-at-step, "3", --exit-rank, "1")"));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(120));
  REQUIRE(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().message() ==
        "Replica worker-0 exited with a non-zero status of 1. Termination reason: Error.");
  CHECK(job.error().replica() == "worker-0");
  CliResult logs = c.Cli({"logs", id, "--replica", "worker-0"});
  CHECK(logs.out.find("rank 1 exiting with status 1 at step 3") != std::string::npos);
  // chief-0's broken collective is listed as what followed, if it failed before it was stopped.
  for (const std::string& consequence : job.error().consequences()) {
    CHECK(consequence.rfind("chief-0 ", 0) == 0);
  }
}

// The restart of the whole gang after worker-0 aborted: every replica ran again, resumed from the
// checkpoint, and the attempt records the cause.
void CheckGangRestart(MiniCluster& c, const v1::Job& job) {
  INFO(job.ShortDebugString());
  REQUIRE(job.state() == v1::JOB_STATE_SUCCEEDED);
  REQUIRE(job.attempts_size() == 1);  // restarted in place, not retried
  CHECK(job.gang_generation() == 1);
  CHECK(job.replicas(0).restart_count() == 1);
  CHECK(job.replicas(1).restart_count() == 1);
  CHECK(job.replicas(1).charged_restarts() == 1);  // one restart, charged to the cause
  CHECK(job.replicas(0).charged_restarts() == 0);
  REQUIRE(job.attempts(0).gang_restarts_size() == 1);
  const v1::GangRestart& restart = job.attempts(0).gang_restarts(0);
  CHECK(restart.cause().replica() == "worker-0");
  CHECK(restart.cause().failure_class() == "TRANSIENT");
  CHECK(restart.charged());
  for (const char* name : {"chief-0", "worker-0"}) {
    // The second run resumed from the checkpoint saved before the crash, not from step 0.
    CliResult second = c.Cli({"logs", job.id(), "--replica", name, "--restart", "1"});
    INFO(second.out);
    CHECK(second.out.find("resumed from step 5") != std::string::npos);
  }
}

TEST_CASE("one rank aborting once restarts the gang, which resumes from its checkpoint",
          "[integration][torch]") {
  if (!HaveTorch()) return;
  MiniCluster c(2);
  std::string id = c.Submit(DdpJob(1, R"(--steps, "12", --step-seconds, "0.05",
    --checkpoint-every, "5", --abort-at-step, "7", --abort-rank, "1")"));
  CheckGangRestart(c, c.WaitForEnd(id, std::chrono::seconds(180)));
}

TEST_CASE("the cause's exit reported after its consequence is still the cause",
          "[integration][torch]") {
  if (!HaveTorch()) return;
  ClusterOptions o;
  o.agents = 2;
  // Every agent holds back reports of exit 134 for 6s, so chief-0's broken collective (exit 1)
  // reaches the scheduler first even on a loaded machine, where it has taken chief-0 over 2s to
  // notice; and the cause still comes within the job's 10s settle window.
  for (int i = 0; i < 2; ++i) o.agent_args[i] = {"--inject-exit-report-delay", "134:6s"};
  MiniCluster c(o);
  std::string id = c.Submit(DdpJob(1,
                                   R"(--steps, "12", --step-seconds, "0.05",
    --checkpoint-every, "5", --abort-at-step, "7", --abort-rank, "1")",
                                   "{stopGracePeriod: 2s, settleWindow: 10s}"));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(180));
  CheckGangRestart(c, job);
  // chief-0 failed first by the scheduler's clock; it was a consequence, not the cause.
  const v1::GangRestart& restart = job.attempts(0).gang_restarts(0);
  REQUIRE(restart.cause().consequences_size() == 1);
  CHECK(restart.cause().consequences(0).rfind("chief-0 exited with status 1", 0) == 0);
}

TEST_CASE("a survivor that ignores SIGTERM is killed after the grace period and restarted",
          "[integration][torch]") {
  if (!HaveTorch()) return;
  MiniCluster c(2);
  // chief-0 stays in its broken collective and ignores SIGTERM: stopGracePeriod (2s) ends it.
  std::string id = c.Submit(DdpJob(1, R"(--steps, "12", --step-seconds, "0.05",
    --checkpoint-every, "5", --abort-at-step, "7", --abort-rank, "1",
    --ignore-sigterm-rank, "0")"));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(180));
  CheckGangRestart(c, job);
  CliResult events = c.Cli({"events", id, "--type", "ReplicaStopping"});
  CHECK(events.out.find("restarting the gang") != std::string::npos);
}

// An elastic DDP job: 3 ranks, one per agent; the agent of worker-1 dies and nothing can take its
// rank, so after elasticWait the gang starts again as 2 ranks, resumes from rank 0's checkpoint
// and trains to the end at the smaller world size.
TEST_CASE("an elastic DDP job loses a host, shrinks to 2 ranks, resumes and finishes",
          "[integration][torch]") {
  if (!HaveTorch()) return;
  ClusterOptions o;
  o.agents = 3;
  o.agent.cpus = 1;  // one rank per host
  o.daemon_args = {"--node-lost-timeout", "2s", "--heartbeat-interval", "200ms"};
  MiniCluster c(o);
  std::string spec = DdpJob(2, R"(--steps, "40", --step-seconds, "0.1", --checkpoint-every, "5")",
                            "{stopGracePeriod: 2s, elasticWait: 1s}");
  spec = absl::StrReplaceAll(
      spec, {{"- name: worker\n  replicaCount: 2\n",
              "- name: worker\n  replicaCount: 2\n  elastic: {minReplicas: 1}\n"}});
  REQUIRE(spec.find("elastic: {minReplicas: 1}") != std::string::npos);
  const std::string id = c.Submit(spec);
  const v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING, std::chrono::seconds(60));
  const v1::Replica lost = running.replicas(2);  // worker-1, rank 2
  REQUIRE(lost.node().rfind("node-", 0) == 0);
  // Once rank 0 has saved a checkpoint, worker-1's host goes away.
  REQUIRE(Eventually(
      [&] { return std::filesystem::exists(running.checkpoint_dir() + "/checkpoint.pt"); },
      std::chrono::seconds(60)));
  const pid_t orphan =
      static_cast<pid_t>(c.WaitForJob(id, [](const v1::Job& j) { return j.replicas(2).pid() != 0; })
                             .replicas(2)
                             .pid());
  c.KillAgent(std::stoi(lost.node().substr(5)), SIGKILL);
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(180));
  if (orphan > 0 && PidAlive(orphan)) kill(orphan, SIGKILL);  // outlived its agent
  INFO(job.error().message() << "\n" << job.error().output_tail());
  REQUIRE(job.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(job.attempts_size() == 1);
  CHECK(job.replicas(2).state() == v1::REPLICA_STATE_REMOVED);
  REQUIRE(job.attempts(0).resizes_size() == 1);
  CHECK(job.attempts(0).resizes(0).world_size() == 2);
  // The second generation trained as ranks 0 and 1 of 2, from the checkpoint, to the end.
  for (const char* name : {"chief-0", "worker-0"}) {
    CliResult second = c.Cli({"logs", id, "--replica", name, "--restart", "1"});
    INFO(name << ": " << second.out);
    CHECK(second.out.find("resumed from step") != std::string::npos);
    CHECK(second.out.find(absl::StrCat("rank ", name[0] == 'c' ? 0 : 1, " step 40 loss")) !=
          std::string::npos);
  }
}

}  // namespace
}  // namespace trainctl::testing
