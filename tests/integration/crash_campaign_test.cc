// The agent crash campaign: trainctl-agent is SIGKILLed at random moments while jobs run through
// two agents, and started again at once. Afterwards every job ended as its workload did, no exit
// code was lost, and no replica ran twice (campaign.h).
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "tests/integration/campaign.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

TEST_CASE("200 jobs through 10 agent SIGKILLs: every exit as the workload did, none ran twice",
          "[integration][agent_restart][campaign]") {
  ClusterOptions o;
  o.agents = 2;
  o.agent.cpus = 16;
  // Kills come far apart from the lost timeout: each agent is back long before it.
  o.daemon_args = {"--node-lost-timeout", "60s"};
  MiniCluster c(o);
  const uint32_t seed = std::random_device{}();
  INFO("seed " << seed);
  Campaign campaign(c, seed);
  // Ten rounds: 20 submits, then a kill 100-700 ms later (the fault injection's own timing) of
  // either agent, which starts again at once. Jobs of earlier rounds are still running.
  std::mt19937 rng(seed + 1);
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 20; ++i) campaign.Submit();
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(100, 700)(rng)));
    const int victim = std::uniform_int_distribution<int>(0, 1)(rng);
    c.KillAgent(victim, SIGKILL);
    c.StartAgent(victim);
  }
  REQUIRE(campaign.WaitForAll(std::chrono::minutes(3)));
  std::vector<std::string> problems = campaign.Check();
  INFO(absl::StrJoin(problems, "\n"));
  CHECK(problems.empty());
}

}  // namespace
}  // namespace trainctl::testing
