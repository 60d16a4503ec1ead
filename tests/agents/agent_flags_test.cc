#include "agents/agent_flags.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace trainctl::agent {
namespace {

using Args = std::vector<std::string>;

Args Required() { return {"--scheduler", "sched:7070", "--node", "node-1", "--work-dir", "/w"}; }

Args With(Args extra) {
  Args args = Required();
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST_CASE("flags parse with their defaults", "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(Required());
  REQUIRE(flags.ok());
  CHECK(flags->scheduler == "sched:7070");
  CHECK(flags->node == "node-1");
  CHECK(flags->work_dir == "/w");
  CHECK(flags->address.empty());
  CHECK_FALSE(flags->cpus);
  CHECK_FALSE(flags->memory_mb);
  CHECK_FALSE(flags->gpus);
  CHECK(flags->reserve_memory_mb == 0);
  CHECK(flags->labels.empty());
  CHECK(flags->log_level == "info");

  flags =
      ParseAgentFlags(With({"--cpus=7.5", "--memory-mb", "2048", "--gpus", "0",
                            "--reserve-memory-mb=512", "--reserve-cpu", "0.5", "--labels",
                            "zone=a,tier=gpu", "--address", "10.0.0.1", "--log-level", "debug"}));
  REQUIRE(flags.ok());
  CHECK(*flags->cpus == 7.5);
  CHECK(*flags->memory_mb == 2048);
  CHECK(*flags->gpus == 0);
  CHECK(flags->reserve_memory_mb == 512);
  CHECK(flags->reserve_cpu == 0.5);
  CHECK(flags->labels == std::map<std::string, std::string>{{"tier", "gpu"}, {"zone", "a"}});
  CHECK(flags->address == "10.0.0.1");
  CHECK(flags->log_level == "debug");
  CHECK(ParseAgentFlags({"--help"})->help);
}

TEST_CASE("a bad flag is an error that names it", "[agent_flags]") {
  struct Row {
    Args args;
    const char* names;
  };
  const Row rows[] = {
      {{"--node", "n", "--work-dir", "/w"}, "--scheduler"},
      {{"--scheduler", "s:1", "--work-dir", "/w"}, "--node"},
      {{"--scheduler", "s:1", "--node", "n"}, "--work-dir"},
      {With({"--cpus", "0"}), "--cpus"},
      {With({"--cpus", "many"}), "--cpus"},
      {With({"--memory-mb", "-5"}), "--memory-mb"},
      {With({"--gpus", "1.5"}), "--gpus"},
      {With({"--reserve-memory-mb", "x"}), "--reserve-memory-mb"},
      {With({"--labels", "novalue"}), "--labels"},
      {With({"--labels", "a=1,a=2"}), "--labels"},
      {With({"--labels", "=1"}), "--labels"},
      {With({"--bogus", "1"}), "--bogus"},
      {With({"--gpus"}), "--gpus"},
      {With({"--node", "Node_1"}), "--node"},
      {With({"--node", "-node"}), "--node"},
      {With({"--node", std::string(64, 'a')}), "--node"},
  };
  for (const Row& row : rows) {
    absl::StatusOr<AgentFlags> flags = ParseAgentFlags(row.args);
    INFO(row.names);
    REQUIRE_FALSE(flags.ok());
    CHECK(absl::IsInvalidArgument(flags.status()));
    CHECK(absl::StrContains(flags.status().message(), row.names));
  }
}

TEST_CASE("node names are DNS labels", "[agent_flags]") {
  CHECK(ValidateNodeName("a").ok());
  CHECK(ValidateNodeName("gpu-node-07").ok());
  CHECK(ValidateNodeName(std::string(63, 'a')).ok());
  CHECK_FALSE(ValidateNodeName("").ok());
  CHECK_FALSE(ValidateNodeName("node-").ok());
  CHECK_FALSE(ValidateNodeName("node.example").ok());
}

TEST_CASE("host check flags set the check thresholds (R20)", "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(Required());
  REQUIRE(flags.ok());
  CHECK_FALSE(flags->check);
  CHECK(flags->checks.root.path == "/");
  CHECK(flags->checks.root.min_free_gb == 32);
  CHECK(flags->checks.shm.path == "/dev/shm");
  CHECK(flags->checks.shm.min_free_gb == 1);
  CHECK(flags->checks.cache.path == "/w");
  CHECK(flags->checks.cache.min_free_gb == 32);
  CHECK_FALSE(flags->checks.infiniband);

  flags = ParseAgentFlags(
      With({"--check-disk-root-gb", "100", "--check-disk-shm-gb=0.5", "--check-disk-cache-gb", "0",
            "--check-disk-root-path", "/data", "--check-disk-shm-path", "/shm", "--infiniband",
            "--check-nofile", "65536", "--check-memlock-kib=1"}));
  REQUIRE(flags.ok());
  CHECK(flags->checks.root.min_free_gb == 100);
  CHECK(flags->checks.root.path == "/data");
  CHECK(flags->checks.shm.min_free_gb == 0.5);
  CHECK(flags->checks.shm.path == "/shm");
  CHECK(flags->checks.cache.min_free_gb == 0);
  CHECK(flags->checks.infiniband);
  CHECK(flags->checks.min_nofile == 65536);
  CHECK(flags->checks.min_memlock_kib == 1);
  CHECK(ParseAgentFlags(With({"--infiniband=false"}))->checks.infiniband == false);

  flags =
      ParseAgentFlags({"--check", "--work-dir", "/w", "--gpus-needed", "2", "--hostnames", "a,b"});
  REQUIRE(flags.ok());
  CHECK(flags->check);
  CHECK(flags->check_request.gpus_needed == 2);
  CHECK(flags->check_request.hostnames == std::vector<std::string>{"a", "b"});

  CHECK_FALSE(ParseAgentFlags({"--check"}).ok());
  CHECK_FALSE(ParseAgentFlags(With({"--gpus-needed", "1"})).ok());
  CHECK_FALSE(ParseAgentFlags(With({"--check-disk-root-gb", "-1"})).ok());
  CHECK_FALSE(ParseAgentFlags(With({"--infiniband=maybe"})).ok());
}

TEST_CASE("the usage lists every flag", "[agent_flags]") {
  for (const char* flag : {"--scheduler",
                           "--node",
                           "--work-dir",
                           "--address",
                           "--cpus",
                           "--memory-mb",
                           "--gpus",
                           "--reserve-memory-mb",
                           "--reserve-cpu",
                           "--labels",
                           "--log-level",
                           "--help",
                           "--check",
                           "--gpus-needed",
                           "--hostnames",
                           "--check-disk-root-gb",
                           "--check-disk-shm-gb",
                           "--check-disk-cache-gb",
                           "--check-disk-root-path",
                           "--check-disk-shm-path",
                           "--infiniband",
                           "--check-memlock-kib",
                           "--check-nofile",
                           "--check-stack-kib",
                           "--check-nproc"}) {
    CHECK(absl::StrContains(AgentUsage(), flag));
  }
}

}  // namespace
}  // namespace trainctl::agent
