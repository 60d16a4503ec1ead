// Elastic jobs end to end: a GANG job whose worker pool is elastic loses a host that no other node
// can replace, shrinks after scheduling.elasticWait, and finishes with the smaller world size;
// `trainctl resize` says why it cannot grow while nothing has room, and grows the job back once
// the host returns.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

using std::chrono::seconds;

// Each replica writes "RANK WORLD_SIZE" to DIR/world-<replica>-<generation> and its pid to
// DIR/pid-<replica>-<generation>, then runs until DIR/go exists. Every replica fills a node of the
// cluster (4 cpu), so a lost host's replica finds no room.
constexpr char kElasticJob[] = R"(
displayName: elastic
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'G=$TRAINCTL_REPLICA_NAME-$TRAINCTL_GANG_GENERATION; echo $$ > DIR/pid-$G; echo $RANK $WORLD_SIZE > DIR/world-$G; while [ ! -e DIR/go ]; do sleep 0.05; done']
  resources: {cpu: 4}
- name: worker
  replicaCount: 2
  command: [/bin/sh, -c, 'G=$TRAINCTL_REPLICA_NAME-$TRAINCTL_GANG_GENERATION; echo $$ > DIR/pid-$G; echo $RANK $WORLD_SIZE > DIR/world-$G; while [ ! -e DIR/go ]; do sleep 0.05; done']
  resources: {cpu: 4}
  elastic: {minReplicas: 1}
scheduling: {elasticWait: 1s}
)";

// Three agents of 4 cpu, lost after 2s without heartbeats.
ClusterOptions ThreeHosts() {
  ClusterOptions o;
  o.agents = 3;
  o.daemon_args = {"--node-lost-timeout", "2s", "--heartbeat-interval", "200ms"};
  return o;
}

// The agent index of node-<i>.
int AgentOfNode(const std::string& node) { return std::stoi(node.substr(node.rfind('-') + 1)); }

}  // namespace

TEST_CASE("elastic: a job shrinks when a host is killed and finishes with the smaller world size",
          "[integration][elastic]") {
  MiniCluster c(ThreeHosts());
  const std::string id = c.Submit(c.Spec(kElasticJob));
  const v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  REQUIRE(running.replicas_size() == 3);
  const v1::Replica lost_replica = running.replicas(1);  // worker-0
  const v1::Replica kept = running.replicas(2);          // worker-1
  const std::string lost = lost_replica.node();
  const std::string world = c.dir() + "/world-";
  REQUIRE(Eventually([&] { return !ReadTextFile(world + "worker-1-0").empty(); }));
  CHECK(absl::StripAsciiWhitespace(ReadTextFile(world + "worker-1-0")) == "2 3");
  const pid_t orphan = WaitForPidFile(c.dir() + "/pid-worker-0-0");

  c.KillAgent(AgentOfNode(lost), SIGKILL);
  c.WaitForNodeState(lost, v1::NODE_STATE_LOST, seconds(10));
  // After the 1s wait the gang starts again without worker-0: ranks 0 and 1 of 2.
  // Each replica writes its own file as it starts: wait for every one read.
  auto written = [&](std::initializer_list<const char*> names) {
    return Eventually(
        [&] {
          for (const char* name : names) {
            if (ReadTextFile(world + name).empty()) return false;
          }
          return true;
        },
        seconds(30));
  };
  REQUIRE(written({"chief-0-1", "worker-1-1"}));
  CHECK(absl::StripAsciiWhitespace(ReadTextFile(world + "chief-0-1")) == "0 2");
  CHECK(absl::StripAsciiWhitespace(ReadTextFile(world + "worker-1-1")) == "1 2");
  const v1::Job shrunk = c.WaitForJob(id, [](const v1::Job& j) {
    return j.state() == v1::JOB_STATE_RUNNING && j.gang_generation() == 1;
  });
  CHECK(shrunk.replicas(1).name() == "worker-0");
  CHECK(shrunk.replicas(1).state() == v1::REPLICA_STATE_REMOVED);
  CHECK(shrunk.replicas(2).rank() == 1);
  CHECK(shrunk.replicas(2).node() == kept.node());
  REQUIRE(shrunk.attempts(0).resizes_size() == 1);
  CHECK(shrunk.attempts(0).resizes(0).world_size() == 2);
  CHECK(shrunk.budgets_used().redispatches() == 0);
  CHECK(!c.ListEvents(id, "", "JobResized").empty());

  // Nothing has room for worker-0: resize says so, and changes nothing.
  CliResult no_room = c.Cli({"resize", id});
  CHECK(no_room.exit_code != 0);
  CHECK(Contains(no_room.err, "no node has room for a removed replica"));
  CliResult described = c.Cli({"describe", id});
  INFO(described.err);
  CHECK(Contains(described.out, "worker 1 of 2 replicas (min 1)"));
  CHECK(Contains(described.out, "Resizes:"));

  c.WriteFile("go", "");
  const v1::Job done = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  CHECK(done.attempts_size() == 1);
  CHECK(done.gang_generation() == 1);
  if (PidAlive(orphan)) kill(orphan, SIGKILL);  // the lost host's replica outlived its agent
}

TEST_CASE("elastic: trainctl resize grows a shrunk job back once its host returns",
          "[integration][elastic]") {
  MiniCluster c(ThreeHosts());
  const std::string id = c.Submit(c.Spec(kElasticJob));
  const v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const std::string lost = running.replicas(1).node();
  const std::string world = c.dir() + "/world-";
  const pid_t orphan = WaitForPidFile(c.dir() + "/pid-worker-0-0");
  c.KillAgent(AgentOfNode(lost), SIGKILL);
  c.WaitForJob(id, [](const v1::Job& j) {
    return j.state() == v1::JOB_STATE_RUNNING && j.gang_generation() == 1;
  });

  // The host comes back (its new agent stops the old run), and resize grows the job.
  c.StartAgent(AgentOfNode(lost));
  c.WaitForNodeState(lost, v1::NODE_STATE_READY);
  CHECK(Eventually([&] { return !PidAlive(orphan); }));
  CliResult resize = c.Cli({"resize", id});
  INFO(resize.err);
  REQUIRE(resize.exit_code == 0);
  REQUIRE(Eventually(
      [&] {
        return !ReadTextFile(world + "worker-0-2").empty() &&
               !ReadTextFile(world + "worker-1-2").empty();
      },
      seconds(30)));
  CHECK(absl::StripAsciiWhitespace(ReadTextFile(world + "worker-0-2")) == "1 3");
  CHECK(absl::StripAsciiWhitespace(ReadTextFile(world + "worker-1-2")) == "2 3");
  const v1::Job grown = c.WaitForJob(id, [](const v1::Job& j) {
    return j.state() == v1::JOB_STATE_RUNNING && j.gang_generation() == 2;
  });
  REQUIRE(grown.attempts(0).resizes_size() == 2);
  CHECK(grown.attempts(0).resizes(1).to_replicas() == 2);
  CHECK(grown.budgets_used().job_retries() == 0);
  c.WriteFile("go", "");
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  if (PidAlive(orphan)) kill(orphan, SIGKILL);
}

}  // namespace trainctl::testing
