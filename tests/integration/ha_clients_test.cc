// The clients' side of trainctld replicas (docs/operators/postgresql-ha.md): trainctl --server and
// trainctl-agent --scheduler given several addresses find the leader, following the leader a
// standby names (a standby stand-in, standby_stub.h, in front of a real trainctld); and an agent
// leaves the stream of a trainctld that stops answering its heartbeats.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"
#include "tests/integration/standby_stub.h"

namespace trainctl::testing {
namespace {

v1::LeaderInfo LeaderAt(const std::string& address, int64_t epoch) {
  v1::LeaderInfo leader;
  leader.set_address(address);
  leader.set_epoch(epoch);
  return leader;
}

// A port nothing listens on: trainctld down.
constexpr char kDown[] = "127.0.0.1:1";

TEST_CASE("trainctl given several servers runs the command on the leader", "[integration][ha]") {
  MiniCluster c(1);
  StandbyStub standby(LeaderAt(c.address(), 4));
  StandbyStub electing{v1::LeaderInfo()};  // no trainctld leads yet
  const std::string trainctl = BinDir() + "/trainctl";

  // A standby first: it names the leader, which is in the list.
  CliResult r = c.Run({trainctl, "--server", standby.address() + "," + c.address(), "nodes"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("node-0"));
  CHECK(standby.calls() == 1);

  // One standby alone: the leader it names, though not in the list.
  r = c.Run({trainctl, "--server", standby.address(), "nodes"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("node-0"));

  // A standby that knows no leader and a trainctld that is down are skipped; TRAINCTL_SERVER
  // takes the list too.
  const std::string list = absl::StrCat(electing.address(), ",", kDown, ",", c.address());
  r = c.Run({"/usr/bin/env", "TRAINCTL_SERVER=" + list, trainctl, "nodes"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("node-0"));
  CHECK(electing.calls() >= 1);

  // A submit a standby answers goes to the leader it names, once.
  const std::string spec = c.WriteFile("one.yaml", c.Spec(R"(
displayName: through-a-standby
workerPools:
- name: main
  replicaCount: 1
  command: [WORKLOAD, --exit, "0"]
  resources: {cpu: 0.1, memoryMb: 64}
)"));
  r = c.Run({trainctl, "--server", standby.address(), "submit", "-f", spec});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("is a standby; the leader is at " + c.address()));
  CHECK(c.GetJob(std::string(absl::StripSuffix(r.out, "\n"))).display_name() ==
        "through-a-standby");

  // A malformed list is refused before anything is asked.
  r = c.Run({trainctl, "--server", c.address() + ",", "nodes"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--server must be HOST:PORT or a comma-separated list"));
}

TEST_CASE("agents given a standby and trainctld register with trainctld", "[integration][ha]") {
  ClusterOptions o;
  o.agents = 2;
  o.start_agents = false;
  MiniCluster c(o);
  StandbyStub standby(LeaderAt(c.address(), 7));
  StandbyStub electing{v1::LeaderInfo()};
  // The leader in the list, after a standby; and only through what a standby names.
  const std::string list0 = standby.address() + "," + c.address();
  const std::string list1 = electing.address() + "," + standby.address();
  c.SetAgentArgs(0, {"--scheduler", list0});
  c.SetAgentArgs(1, {"--scheduler", list1});
  c.StartAgents();  // both connected to trainctld
  CHECK(standby.calls() >= 2);
  CHECK(electing.calls() >= 1);
  for (int i : {0, 1}) {
    INFO(c.AgentLog(i));
    CHECK(Contains(c.AgentLog(i), absl::StrCat("the scheduler at ", standby.address(),
                                               " is a standby; the leader is at ", c.address(),
                                               " (epoch 7): connecting there")));
    CHECK(Contains(c.AgentLog(i), "connected to the scheduler at " + c.address()));
  }

  // Replicas get the list as TRAINCTL_SERVER, and trainctl in them takes it (on node-1, through
  // the standby's answer).
  const std::string id = c.Submit(c.Spec(absl::StrCat(R"(
displayName: cli-in-a-replica
workerPools:
- name: main
  replicaCount: 1
  command: [/bin/sh, -c, 'echo "server=$TRAINCTL_SERVER"; exec )",
                                                      BinDir(), R"(/trainctl nodes']
  resources: {cpu: 0.1, memoryMb: 64}
)")));
  v1::Job job = c.WaitForEnd(id);
  CliResult logs = c.Cli({"logs", id});
  INFO(logs.out);
  CHECK(job.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK_THAT(logs.out, Catch::Contains("server=" + list0) || Catch::Contains("server=" + list1));
  CHECK_THAT(logs.out, Catch::Contains("node-0") && Catch::Contains("node-1"));
}

TEST_CASE("an agent leaves the stream of a trainctld that answers no heartbeat",
          "[integration][ha]") {
  ClusterOptions o;
  o.agents = 1;
  o.agent_args[0] = {"--heartbeat-ack-timeout", "2s"};
  MiniCluster c(o);
  const std::string left = "no heartbeat ack from the scheduler at " + c.address();
  REQUIRE_FALSE(Contains(c.AgentLog(0), left));
  const auto frozen = std::chrono::steady_clock::now();
  c.daemon().Signal(SIGSTOP);
  const bool logged =
      Eventually([&] { return Contains(c.AgentLog(0), left); }, std::chrono::seconds(10));
  const auto noticed = std::chrono::steady_clock::now() - frozen;
  c.daemon().Signal(SIGCONT);
  INFO(c.AgentLog(0));
  REQUIRE(logged);
  // 2s without an ack, the heartbeat it waited for sent up to an interval before the stop.
  CHECK(noticed < std::chrono::seconds(6));
  CHECK(Contains(c.AgentLog(0), left + " for 2s; reconnecting"));
  // Back on a new stream once trainctld answers again.
  const std::string acked = "registration acknowledged";
  auto count = [&] {
    const std::string log = c.AgentLog(0);
    int n = 0;
    for (size_t at = log.find(acked); at != std::string::npos; at = log.find(acked, at + 1)) ++n;
    return n;
  };
  CHECK(Eventually([&] { return count() >= 2; }));
  c.WaitForNodeState("node-0", v1::NODE_STATE_READY);
}

}  // namespace
}  // namespace trainctl::testing
