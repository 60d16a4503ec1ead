// Stragglers end to end with real agents: three ranks on three nodes write their training step
// to $TRAINCTL_PROGRESS_FILE, one at a quarter of the others' rate; with a 4-second
// --straggler-window trainctld raises StragglerDetected naming that rank and its node, and
// `describe` shows the note.
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

TEST_CASE("stragglers: a rank at a quarter of the others' step rate is named with its node",
          "[integration][stragglers]") {
  ClusterOptions o;
  o.agents = 3;
  o.daemon_args = {"--straggler-window", "4s"};
  MiniCluster c(o);
  const std::string id = c.Submit(c.Spec("displayName: stragglers\nworkerPools:\n" +
                                         Pool("chief", 8) + Pool("fast", 8) + Pool("slow", 2) +
                                         "scheduling: {placement: {policy: SPREAD}}\n"));
  const v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  std::string slow_node;
  for (const v1::Replica& r : running.replicas()) {
    if (r.name() == "slow-0") slow_node = r.node();
  }
  REQUIRE(!slow_node.empty());

  CliResult events;
  CHECK(Eventually(
      [&] {
        events = c.Cli({"events", id, "--type", "StragglerDetected"});
        return absl::StrContains(events.out, "slow-0 on " + slow_node);
      },
      std::chrono::seconds(40)));
  INFO(events.out << events.err);
  CHECK_FALSE(absl::StrContains(events.out, "chief-0 on"));
  CHECK_FALSE(absl::StrContains(events.out, "fast-0 on"));
  CliResult describe = c.Cli({"describe", id});
  CHECK_THAT(describe.out,
             Catch::Contains("straggler:") && Catch::Contains("steps/s over the last 4s"));
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
}

}  // namespace stragglers_test
}  // namespace trainctl::testing
