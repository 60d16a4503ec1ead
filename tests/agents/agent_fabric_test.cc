// The agent's fabric check (agents/agent_fabric.cc) through its stream: the listener's port in
// Register, and a CheckFabric answered by one FabricReport with a probe per target and the run
// of --gang-check-program.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "tests/agents/agent_fixture.h"

namespace trainctl::agent::testing {
namespace agent_fabric_test {

// A loopback port nothing listens on (bound, then closed again).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

TEST_CASE("the agent answers CheckFabric with a probe per target and its program's run",
          "[fabric]") {
  AgentFixture f([](Agent::Options& o) {
    o.fabric.program = "test \"$TRAINCTL_CHECK_RANK\" = 1 && echo '{\"gbps\": 42}'";
    o.fabric.min_gbps = 10;
  });
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  const int port = reg->register_().fabric_port();
  REQUIRE(port > 0);

  SchedulerMessage check;
  trainctl::v1::CheckFabric& request = *check.mutable_check_fabric();
  request.set_request_id(17);
  request.set_job_id("j-fabric");
  trainctl::v1::FabricPeer* self = request.add_targets();
  self->set_node("node-1");
  self->set_address(absl::StrCat("127.0.0.1:", port));
  trainctl::v1::FabricPeer* gone = request.add_targets();
  gone->set_node("node-2");
  gone->set_address(absl::StrCat("127.0.0.1:", ClosedPort()));
  request.set_program(true);
  (*request.mutable_env())["TRAINCTL_CHECK_RANK"] = "1";
  request.set_timeout_ms(20000);
  f.scheduler().Send(check);

  std::optional<AgentMessage> answer =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_fabric(); });
  REQUIRE(answer);
  const trainctl::v1::FabricReport& report = answer->fabric();
  CHECK(report.request_id() == 17);
  REQUIRE(report.probes_size() == 2);
  const trainctl::v1::FabricProbe& passed = report.probes(0);
  INFO(passed.detail());
  CHECK(passed.ok());
  CHECK(passed.from() == "node-1");
  CHECK(passed.to() == "node-1");
  CHECK(passed.latency_ms() > 0);
  CHECK(passed.gbps() > 0);
  const trainctl::v1::FabricProbe& refused = report.probes(1);
  CHECK_FALSE(refused.ok());
  CHECK(refused.to() == "node-2");
  CHECK_THAT(refused.detail(), Catch::Contains("Connection refused"));
  REQUIRE(report.has_program());
  CHECK(report.program().ok());
  CHECK(report.program().node() == "node-1");
  CHECK(report.program().gbps() == 42);

  // Without `program`, the program does not run.
  request.set_request_id(18);
  request.set_program(false);
  request.mutable_targets()->DeleteSubrange(1, 1);
  f.scheduler().Send(check);
  answer = f.scheduler().Next([](const AgentMessage& m) { return m.has_fabric(); });
  REQUIRE(answer);
  CHECK(answer->fabric().request_id() == 18);
  CHECK(answer->fabric().probes_size() == 1);
  CHECK_FALSE(answer->fabric().has_program());
}

}  // namespace agent_fabric_test
}  // namespace trainctl::agent::testing
