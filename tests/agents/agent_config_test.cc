// trainctl-agent's config file: --config under the flags, errors that name the file,
// --print-config, and what SIGHUP may change.
#include "agents/agent_config.h"

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "agents/agent_flags.h"
#include "tests/common/config_testing.h"

namespace trainctl::agent {
namespace {

using ::trainctl::testing::TempConfigFile;

TEST_CASE("the agent reads its settings from --config, and flags override them", "[config]") {
  TempConfigFile f(
      "scheduler: 127.0.0.1:7070\n"
      "node: gpu-1\n"
      "work-dir: /var/lib/trainctl-agent\n"
      "labels: {topology.rack: r1, gpu.type: a100}\n"
      "check-nofile: 4096\n"
      "health-check-interval: 5m\n"
      "log-level: debug\n");
  absl::StatusOr<AgentFlags> flags =
      ParseAgentFlags({"--config", f.path(), "--node", "gpu-2", "--check-nofile=8192"});
  REQUIRE(flags.ok());
  CHECK(flags->config_path == f.path());
  CHECK(flags->scheduler == "127.0.0.1:7070");
  CHECK(flags->node == "gpu-2");
  CHECK(flags->work_dir == "/var/lib/trainctl-agent");
  CHECK(flags->labels ==
        std::map<std::string, std::string>{{"gpu.type", "a100"}, {"topology.rack", "r1"}});
  CHECK(flags->checks.host.min_nofile == 8192);
  CHECK(flags->checks.health_check_interval == absl::Minutes(5));
  CHECK(flags->log_level == "debug");
}

TEST_CASE("a bad agent config file stops it with the file, line, key and reason", "[config]") {
  const std::string base = "scheduler: 127.0.0.1:7070\nnode: n\nwork-dir: /w\n";
  struct Case {
    std::string text;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {base + "check-nofile: lots\n",
            ":4: check-nofile: --check-nofile must be a whole number"},
           {base + "node-name: x\n", ":4: node-name: unknown key"},
           {base + "stop-replicas: true\n", ":4: stop-replicas: is a command-line action"},
           {base + "log-level: loud\n", ":4: log-level: --log-level must be one of"},
           {"scheduler: 127.0.0.1:7070\nnode: Bad_Name\nwork-dir: /w\n", ":2: node: --node"},
       }) {
    INFO(c.text);
    TempConfigFile f(c.text);
    absl::StatusOr<AgentFlags> flags = ParseAgentFlags({"--config", f.path()});
    REQUIRE_FALSE(flags.ok());
    CHECK_THAT(std::string(flags.status().message()), Catch::StartsWith(f.path()));
    CHECK_THAT(std::string(flags.status().message()), Catch::Contains(c.want));
  }
}

TEST_CASE("the agent's --print-config reads back as the same settings", "[config]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags({"--scheduler",
                                                      "127.0.0.1:7070",
                                                      "--node",
                                                      "n",
                                                      "--work-dir",
                                                      "/w",
                                                      "--print-config",
                                                      "--labels",
                                                      "a=b,c=d",
                                                      "--cpus",
                                                      "2.5",
                                                      "--run-as",
                                                      "team=alice",
                                                      "--cpu-policy",
                                                      "static",
                                                      "--check-disk-root-gb",
                                                      "0.5",
                                                      "--health-check-timeout",
                                                      "1500ms",
                                                      "--pass-env",
                                                      "PATH"});
  REQUIRE(flags.ok());
  CHECK(flags->print_config);
  const std::string text = AgentConfigText(*flags);
  CHECK_THAT(text, Catch::Contains("\nlabels: a=b,c=d\n"));
  CHECK_THAT(text, Catch::Contains("\nhealth-check-timeout: 1500ms\n"));
  CHECK_THAT(text, Catch::Contains("# gpus:  (not set)"));
  TempConfigFile f(text);
  absl::StatusOr<AgentFlags> again = ParseAgentFlags({"--config", f.path()});
  REQUIRE(again.ok());
  CHECK(AgentConfigEntries(*again) == AgentConfigEntries(*flags));
}

TEST_CASE("every agent flag that is a setting has a config key", "[config]") {
  absl::StatusOr<AgentFlags> flags =
      ParseAgentFlags({"--scheduler", "127.0.0.1:7070", "--node", "n", "--work-dir", "/w"});
  REQUIRE(flags.ok());
  std::set<std::string> keys;
  for (const auto& [key, value] : AgentConfigEntries(*flags)) keys.insert(key);
  const std::set<std::string> actions = {"config",      "print-config",  "help",
                                         "check",       "stop-replicas", "stop-grace",
                                         "gpus-needed", "hostnames"};
  CHECK(::trainctl::testing::FlagsOfUsage(AgentUsage(), actions) == keys);
}

TEST_CASE("SIGHUP applies the agent's log level and check thresholds", "[config]") {
  for (const char* key : {"log-level", "check-disk-root-gb", "check-nofile", "infiniband"}) {
    INFO(key);
    CHECK(AgentKeyReloads(key));
  }
  for (const char* key : {"scheduler", "node", "labels", "health-check-program", "cpus"}) {
    INFO(key);
    CHECK_FALSE(AgentKeyReloads(key));
  }
}

}  // namespace
}  // namespace trainctl::agent
