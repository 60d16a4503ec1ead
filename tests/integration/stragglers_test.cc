// Stragglers end to end with real agents: three ranks on three nodes write their training step
// to $TRAINCTL_PROGRESS_FILE, one at a quarter of the others' rate; with a 4-second
// --straggler-window trainctld raises StragglerDetected naming that rank and its node, and
// `describe` shows the note; the same when the ranks only print their steps and the agents read
// them with scheduling.progressPattern.
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace stragglers_test {

// A rank that advances RATE steps every 0.2 s and writes its step to the progress file.
std::string Pool(const std::string& name, int rate) {
  return "- name: " + name +
         "\n  replicaCount: 1\n  resources: {cpu: 0.1, memoryMb: 32}\n"
         "  command: [/bin/sh, -c, 'i=0; while :; do i=$((i+" +
         std::to_string(rate) +
         ")); echo \"{\\\"step\\\": $i}\" > \"$TRAINCTL_PROGRESS_FILE\"; sleep 0.2; done']\n";
}

// Submits `spec` (a chief, fast-0 and slow-0) on a 3-agent cluster whose --straggler-window is
// 4s, and waits until a StragglerDetected event names slow-0 with its node; returns the events'
// text ("" when none came within 40 s). The job id goes to `id`.
std::string SlowRankNamed(MiniCluster& c, const std::string& spec, std::string* id) {
  *id = c.Submit(spec);
  const v1::Job running = c.WaitForState(*id, v1::JOB_STATE_RUNNING);
  std::string slow_node;
  for (const v1::Replica& r : running.replicas()) {
    if (r.name() == "slow-0") slow_node = r.node();
  }
  CliResult events;
  auto named = [&] {
    events = c.Cli({"events", *id, "--type", "StragglerDetected"});
    return absl::StrContains(events.out, "slow-0 on " + slow_node);
  };
  const bool ok = !slow_node.empty() && Eventually(named, std::chrono::seconds(40));
  INFO(events.out << events.err);
  CHECK(ok);
  CHECK_FALSE(absl::StrContains(events.out, "chief-0 on"));
  CHECK_FALSE(absl::StrContains(events.out, "fast-0 on"));
  return ok ? events.out : "";
}

ClusterOptions ThreeAgents() {
  ClusterOptions o;
  o.agents = 3;
  o.daemon_args = {"--straggler-window", "4s"};
  return o;
}

TEST_CASE("stragglers: a rank at a quarter of the others' step rate is named with its node",
          "[integration][stragglers]") {
  MiniCluster c(ThreeAgents());
  std::string id;
  SlowRankNamed(
      c,
      c.Spec("displayName: stragglers\nworkerPools:\n" + Pool("chief", 8) + Pool("fast", 8) +
             Pool("slow", 2) + "scheduling: {placement: {policy: SPREAD}}\n"),
      &id);
  CliResult describe = c.Cli({"describe", id});
  CHECK_THAT(describe.out,
             Catch::Contains("straggler:") && Catch::Contains("steps/s over the last 4s"));
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
}

// scheduling.stragglerAction REPLACE on four agents, one rank per node: once slow-0 is named, its
// node is excluded (NodeStraggler), the gang restarts with slow-0 on the fourth node, and the job
// stays RUNNING; `describe` shows the excluded node. The workload itself is slow, so a later
// detection on the new node finds no free node left and changes nothing more.
TEST_CASE("stragglers: REPLACE restarts the gang without the slow rank's node",
          "[integration][stragglers]") {
  ClusterOptions o = ThreeAgents();
  o.agents = 4;
  MiniCluster c(o);
  std::string id;
  SlowRankNamed(c,
                c.Spec("displayName: stragglers\nworkerPools:\n" + Pool("chief", 8) +
                       Pool("fast", 8) + Pool("slow", 2) +
                       "scheduling: {placement: {policy: SPREAD}, stragglerAction: REPLACE}\n"),
                &id);
  v1::Job job;
  auto excluded = [&] {
    job = c.GetJob(id);
    return job.excluded_nodes_size() == 1;
  };
  REQUIRE(Eventually(excluded, std::chrono::seconds(20)));
  const std::string slow_node = job.excluded_nodes(0);
  CliResult events;
  auto told = [&] {
    events = c.Cli({"events", "--node", slow_node});
    return absl::StrContains(events.out, "NodeStraggler") &&
           absl::StrContains(events.out, "ran replica slow-0 of job " + id);
  };
  CHECK(Eventually(told, std::chrono::seconds(20)));
  INFO(events.out << events.err);
  // The gang runs again, every replica off the slow node.
  auto moved = [&] {
    job = c.GetJob(id);
    if (job.state() != v1::JOB_STATE_RUNNING || job.gang_restarting()) return false;
    for (const v1::Replica& r : job.replicas()) {
      if (r.node() == slow_node || r.state() != v1::REPLICA_STATE_RUNNING) return false;
    }
    return true;
  };
  CHECK(Eventually(moved, std::chrono::seconds(40)));
  CHECK(job.state() == v1::JOB_STATE_RUNNING);
  CHECK(job.attempts_size() == 1);
  CliResult describe = c.Cli({"describe", id});
  CHECK_THAT(describe.out,
             Catch::Contains("Excluded nodes:") && Catch::Contains(slow_node + " (straggler)"));
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
}

// A rank of the test workload that trains one step per `step_time` seconds, printing "step S".
std::string PrintingPool(const std::string& name, const std::string& step_time) {
  return "- name: " + name +
         "\n  replicaCount: 1\n  resources: {cpu: 0.1, memoryMb: 32}\n"
         "  command: [WORKLOAD, --step-time, '" +
         step_time + "', --train, '1000000']\n";
}

// The same gang whose ranks only print "step S": the agents read the steps from their output
// with scheduling.progressPattern.
TEST_CASE("stragglers: steps read from the replicas' output by progressPattern name the slow rank",
          "[integration][stragglers]") {
  MiniCluster c(ThreeAgents());
  std::string id;
  SlowRankNamed(
      c,
      c.Spec("displayName: printed-steps\nworkerPools:\n" + PrintingPool("chief", "0.02") +
             PrintingPool("fast", "0.02") + PrintingPool("slow", "0.08") +
             "scheduling: {progressPattern: '^step (?P<step>\\d+)$'}\n"),
      &id);
  // The steps reach the job's view too.
  CHECK(c.GetJob(id).replicas(0).step() > 0);
  // A pattern without a step group is refused at submit.
  CliResult bad = c.Cli({"submit", "-f",
                         c.WriteFile("bad.yaml", c.Spec("displayName: bad\nworkerPools:\n" +
                                                        PrintingPool("chief", "0.02") +
                                                        "scheduling: {progressPattern: 'step "
                                                        "(\\d+)'}\n"))});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("scheduling.progressPattern must have a group named step"));
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
}

}  // namespace stragglers_test
}  // namespace trainctl::testing
