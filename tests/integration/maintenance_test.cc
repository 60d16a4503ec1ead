// Maintenance windows end to end, with real agents: a job kept off a host with an upcoming
// window; a replica moved off a drained host kept off a host with a window; the host drained at
// the window's start (its replica moved, uncharged) by the window, whose hold survives a restart
// of trainctld and never lifts an operator's cordon; a window that an agent's --maintenance-file
// reports, changes and clears; and a window from the file that an operator cleared, which the
// agent's restart does not bring back.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// A directory of the test's own, for a file an agent flag names before the cluster starts.
std::string MaintenanceTempDir() {
  char dir[] = "/tmp/trainctl-maint.XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  return dir;
}

void WriteMaintenanceFile(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    out << text;
    REQUIRE(out.good());
  }
  REQUIRE(std::rename((path + ".tmp").c_str(), path.c_str()) == 0);
}

// The file's JSON: a window from `at` for `duration` (a JSON value: "\"2h\"" or seconds).
std::string WindowJson(const std::string& at, const std::string& duration,
                       const std::string& reason) {
  return absl::StrCat("{\"start\": \"", at, "\", \"duration\": ", duration, ", \"reason\": \"",
                      reason, "\"}");
}

// One agent, node-0, that reads its window from `file`.
ClusterOptions OneAgentWithFile(const std::string& file) {
  ClusterOptions o;
  o.agents = 1;
  o.agent_args[0] = {"--maintenance-file", file};
  return o;
}

}  // namespace

TEST_CASE("a job is kept off a host with a window, and the host is drained at the window's start",
          "[integration][maintenance]") {
  MiniCluster c(2);
  // node-0's window starts in 8s: long enough to place both jobs before it.
  const std::string at = FormatRfc3339(WallNowMs() + 8'000);
  CliResult set = c.Cli(
      {"node", "maintenance", "node-0", "--at", at, "--duration", "1m", "--reason", "BIOS update"});
  INFO(set.err);
  REQUIRE(set.exit_code == 0);
  CHECK(Contains(set.out, "maintenance " + at));

  // No expected duration nor timeout: the job avoids windows within 24 h, so node-0 (first by
  // name, with both nodes free) is not chosen.
  const std::string long_job = c.Submit(c.Spec(R"(
displayName: long
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --trap-term, --print, started, --wait-file, DIR/finish]
  resources: {cpu: 3, memoryMb: 64}
)"));
  v1::Job long_running = c.WaitForState(long_job, v1::JOB_STATE_RUNNING);
  CHECK(long_running.replicas(0).node() == "node-1");

  // Expected to end in 1s, before the window: it may use node-0 (the most free node).
  const std::string short_job = c.Submit(c.Spec(R"(
displayName: short
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --trap-term, --print, started, --wait-file, DIR/finish]
  resources: {cpu: 1, memoryMb: 64}
scheduling: {expectedDuration: 1s}
)"));
  v1::Job short_running = c.WaitForState(short_job, v1::JOB_STATE_RUNNING);
  REQUIRE(short_running.replicas(0).node() == "node-0");

  CliResult nodes = c.Cli({"nodes"});
  CHECK(Contains(nodes.out, "MAINTENANCE"));
  CHECK(Contains(nodes.out, "BIOS update"));

  // It outlives its expectation: at the window's start node-0 is drained and the replica moves
  // to node-1, not charged to its restart budget.
  v1::Job moved = c.WaitForJob(short_job, [](const v1::Job& j) {
    return j.replicas(0).moves() == 1 && j.replicas(0).state() == v1::REPLICA_STATE_RUNNING;
  });
  CHECK(moved.replicas(0).node() == "node-1");
  CHECK(moved.replicas(0).charged_restarts() == 0);
  v1::Node drained = c.WaitForNodeState("node-0", v1::NODE_STATE_CORDONED);
  CHECK(drained.maintenance().drained());
  std::vector<v1::Event> drain = c.ListEvents("", "node-0", "NodeDrainStarted");
  REQUIRE(drain.size() == 1);
  CHECK(Contains(drain[0].reason(), "drained by its maintenance window from " + at));
  CHECK(Contains(drain[0].reason(), "BIOS update"));
  CHECK_FALSE(Contains(drain[0].reason(), "operator"));
  CHECK(drained.maintenance().holds_cordon());

  // The window's hold is in the node's record: it outlives a restart of trainctld, and --clear
  // ends it at once.
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  c.WaitForConnectedNodes(2);
  REQUIRE(c.GetNode("node-0").maintenance().holds_cordon());
  CliResult clear = c.Cli({"node", "maintenance", "node-0", "--clear"});
  INFO(clear.err);
  REQUIRE(clear.exit_code == 0);
  v1::Node back = c.WaitForNodeState("node-0", v1::NODE_STATE_READY);
  CHECK_FALSE(back.has_maintenance());

  // An operator's cordon is not the window's to lift: a window that already began drains the
  // node when it is recorded, and its clear leaves the operator's cordon in place.
  c.CordonNode("node-0", "ticket 4711");
  CliResult begun =
      c.Cli({"node", "maintenance", "node-0", "--at", FormatRfc3339(WallNowMs() - 10'000),
             "--duration", "1m", "--reason", "PSU swap"});
  INFO(begun.err);
  REQUIRE(begun.exit_code == 0);
  v1::Node during = c.GetNode("node-0");
  CHECK(during.maintenance().drained());
  CHECK_FALSE(during.maintenance().holds_cordon());
  CliResult clear_again = c.Cli({"node", "maintenance", "node-0", "--clear"});
  REQUIRE(clear_again.exit_code == 0);
  v1::Node still = c.GetNode("node-0");
  CHECK_FALSE(still.has_maintenance());
  CHECK(still.cordoned());
  CHECK(still.state() == v1::NODE_STATE_CORDONED);
  c.UncordonNode("node-0");
  c.WaitForNodeState("node-0", v1::NODE_STATE_READY);
  c.WriteFile("finish", "");
}

TEST_CASE("a replica moved off a drained host keeps off a host with a window before its job's end",
          "[integration][maintenance]") {
  MiniCluster c(3);
  // node-1's window starts in 30 minutes, before the job's expected end (1h).
  CliResult set =
      c.Cli({"node", "maintenance", "node-1", "--at", FormatRfc3339(WallNowMs() + 1'800'000),
             "--duration", "1h", "--reason", "firmware"});
  INFO(set.err);
  REQUIRE(set.exit_code == 0);
  const std::string id = c.Submit(c.Spec(R"(
displayName: moving
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --trap-term, --print, started, --wait-file, DIR/finish]
  resources: {cpu: 1, memoryMb: 64}
scheduling: {expectedDuration: 1h}
)"));
  // node-0 and node-2 are equally free: node-0, first by name.
  REQUIRE(c.WaitForState(id, v1::JOB_STATE_RUNNING).replicas(0).node() == "node-0");
  CliResult drain = c.Cli({"node", "drain", "node-0", "--reason", "kernel upgrade"});
  INFO(drain.err);
  REQUIRE(drain.exit_code == 0);
  // Not node-1 (first by name of the two left): its window starts before the job's end.
  v1::Job moved = c.WaitForJob(id, [](const v1::Job& j) {
    return j.replicas(0).moves() == 1 && j.replicas(0).state() == v1::REPLICA_STATE_RUNNING;
  });
  CHECK(moved.replicas(0).node() == "node-2");
  c.WriteFile("finish", "");
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("an agent's --maintenance-file sets, changes and clears the node's window",
          "[integration][maintenance]") {
  const std::string dir = MaintenanceTempDir();
  const std::string file = dir + "/maintenance.json";
  const std::string at = FormatRfc3339(WallNowMs() + 3'600'000);
  WriteMaintenanceFile(file, WindowJson(at, "\"2h\"", "vendor notice 17"));
  MiniCluster c(OneAgentWithFile(file));
  v1::Node node = c.WaitForNode("node-0", [](const v1::Node& n) { return n.has_maintenance(); });
  CHECK(node.maintenance().source() == "agent");
  CHECK(node.maintenance().reason() == "vendor notice 17");
  CHECK(FormatRfc3339(TimestampToMs(node.maintenance().start_time())) == at);
  CHECK(DurationToMs(node.maintenance().duration()) == 2 * 3'600'000);

  // A change reaches the scheduler with a heartbeat.
  WriteMaintenanceFile(file, WindowJson(at, "600", "moved"));
  node = c.WaitForNode("node-0",
                       [](const v1::Node& n) { return n.maintenance().reason() == "moved"; });
  CHECK(DurationToMs(node.maintenance().duration()) == 600'000);
  CliResult describe = c.Cli({"node", "describe", "node-0"});
  CHECK(Contains(describe.out, "Maintenance:"));
  CHECK(Contains(describe.out, "[agent]"));

  // Emptied: no window.
  WriteMaintenanceFile(file, "");
  c.WaitForNode("node-0", [](const v1::Node& n) { return !n.has_maintenance(); });
  std::remove(file.c_str());
  rmdir(dir.c_str());
}

TEST_CASE("an agent's window that an operator cleared stays cleared while the file is unchanged",
          "[integration][maintenance]") {
  const std::string dir = MaintenanceTempDir();
  const std::string file = dir + "/maintenance.json";
  const std::string at = FormatRfc3339(WallNowMs() + 3'600'000);
  WriteMaintenanceFile(file, WindowJson(at, "\"2h\"", "vendor notice 18"));
  MiniCluster c(OneAgentWithFile(file));
  c.WaitForNode("node-0", [](const v1::Node& n) { return n.has_maintenance(); });
  CliResult clear = c.Cli({"node", "maintenance", "node-0", "--clear"});
  INFO(clear.err);
  REQUIRE(clear.exit_code == 0);
  REQUIRE_FALSE(c.GetNode("node-0").has_maintenance());

  // The agent registers again with the same file: the cleared window does not come back. The
  // registration and its window are applied in one turn, so the event means it was decided.
  const size_t reconnects = c.ListEvents("", "node-0", "NodeReconnected").size();
  c.KillAgent(0, SIGTERM);
  c.StartAgent(0);
  REQUIRE(Eventually(
      [&] { return c.ListEvents("", "node-0", "NodeReconnected").size() > reconnects; }));
  v1::Node node = c.GetNode("node-0");
  CHECK_FALSE(node.has_maintenance());
  CHECK(node.agent_maintenance().reason() == "vendor notice 18");

  // Nor after trainctld restarts: the window the agent sent last is in the node's record.
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  c.WaitForConnectedNodes(1);
  CHECK_FALSE(c.GetNode("node-0").has_maintenance());

  // A changed file is a new notice: applied with the next heartbeat.
  WriteMaintenanceFile(file, WindowJson(at, "\"3h\"", "vendor notice 19"));
  node = c.WaitForNode("node-0", [](const v1::Node& n) { return n.has_maintenance(); });
  CHECK(node.maintenance().reason() == "vendor notice 19");
  CHECK(node.maintenance().source() == "agent");
  std::remove(file.c_str());
  rmdir(dir.c_str());
}

}  // namespace trainctl::testing
