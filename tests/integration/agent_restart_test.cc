// Agent restarts are invisible to jobs: replicas keep running with their pids across a SIGKILL
// or a SIGTERM of their agent (a crash, `systemctl restart`, an upgrade), and a replica that ends
// while no agent runs is reported with its true exit code by the next agent.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// A job of a chief and `workers` workers, all on node-0 (node-1 is cordoned by the caller), each
// writing its pid to DIR/pid-<replica> and exiting with `code` once DIR/go exists.
std::string WaitingJob(const MiniCluster& c, int workers, int code) {
  const std::string command = absl::StrCat(
      "  command: [/bin/sh, -c, 'exec WORKLOAD --pidfile DIR/pid-$TRAINCTL_REPLICA_NAME "
      "--wait-file DIR/go --exit ",
      code, "']\n  resources: {cpu: 0.5, memoryMb: 64}\n");
  std::string spec =
      "displayName: survives\nworkerPools:\n- name: chief\n  replicaCount: 1\n" + command;
  if (workers > 0) {
    spec += absl::StrCat("- name: worker\n  replicaCount: ", workers, "\n", command);
  }
  return c.Spec(spec + "scheduling:\n  maxReplicaRestarts: 0\n");
}

struct Started {
  std::string id;
  // Each replica's pid, in rank order (chief-0, worker-0, ...).
  std::vector<pid_t> pids;
};

// Cordons node-1, submits WaitingJob(c, workers, code) and waits until it runs and every replica
// has written its pid.
Started StartWaitingJob(MiniCluster& c, int workers, int code) {
  c.CordonNode("node-1");
  Started out;
  out.id = c.Submit(WaitingJob(c, workers, code));
  c.WaitForState(out.id, v1::JOB_STATE_RUNNING);
  std::vector<std::string> files = {c.dir() + "/pid-chief-0"};
  for (int i = 0; i < workers; ++i) files.push_back(absl::StrCat(c.dir(), "/pid-worker-", i));
  REQUIRE(Eventually([&] {
    for (const std::string& file : files) {
      if (ReadPidFile(file) <= 0) return false;
    }
    return true;
  }));
  for (const std::string& file : files) out.pids.push_back(ReadPidFile(file));
  return out;
}

TEST_CASE("a SIGKILLed agent's replicas keep running and their job succeeds after its restart",
          "[integration][agent_restart]") {
  MiniCluster c(2);
  const Started started = StartWaitingJob(c, 1, 0);
  const std::string& id = started.id;
  const pid_t pid0 = started.pids[0];
  const pid_t pid1 = started.pids[1];

  c.KillAgent(0, SIGKILL);
  CHECK(PidAlive(pid0));
  CHECK(PidAlive(pid1));
  c.StartAgent(0);
  c.WaitForConnectedNodes(2);
  v1::Job job = c.GetJob(id);
  CHECK(job.state() == v1::JOB_STATE_RUNNING);
  CHECK(job.replicas(0).pid() == pid0);
  CHECK(job.replicas(1).pid() == pid1);
  for (const v1::Replica& r : job.replicas()) CHECK(r.restart_count() == 0);

  c.WriteFile("go", "");
  job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  // The same processes ran to the end: nothing was started again.
  CHECK(job.attempts_size() == 1);
  for (const v1::Replica& r : job.replicas()) CHECK(r.restart_count() == 0);
}

TEST_CASE("a replica that exits while no agent runs is reported with its exit code",
          "[integration][agent_restart]") {
  MiniCluster c(2);
  const Started started = StartWaitingJob(c, 0, 3);
  const std::string& id = started.id;
  const pid_t pid = started.pids[0];

  c.KillAgent(0, SIGKILL);
  c.WriteFile("go", "");
  REQUIRE(Eventually([&] { return !PidAlive(pid); }));
  c.StartAgent(0);
  v1::Job job = c.WaitForEnd(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.replicas(0).exit_code() == 3);
  CHECK(job.error().message().find("exited with a non-zero status of 3") != std::string::npos);
  CHECK(job.error().message().find("nternal") == std::string::npos);
}

TEST_CASE("SIGTERM ends the agent only, and the next agent takes its replicas over",
          "[integration][agent_restart]") {
  MiniCluster c(2);
  const Started started = StartWaitingJob(c, 0, 0);
  const std::string& id = started.id;
  const pid_t pid = started.pids[0];

  c.KillAgent(0, SIGTERM);  // systemctl stop / restart
  CHECK(PidAlive(pid));
  CHECK(c.GetJob(id).state() == v1::JOB_STATE_RUNNING);
  c.StartAgent(0);
  c.WaitForConnectedNodes(2);
  CHECK(c.GetJob(id).replicas(0).pid() == pid);
  c.WriteFile("go", "");
  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  CHECK(job.replicas(0).restart_count() == 0);
}

}  // namespace
}  // namespace trainctl::testing
