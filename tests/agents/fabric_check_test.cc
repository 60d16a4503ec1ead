// The fabric check's parts (agents/fabric_check.h) on loopback: a real listener and probes of
// it (a healthy one, a closed port, a peer that never answers, a bandwidth minimum, more
// connections than the listener serves at once), the run of --gang-check-program, and the
// --gang-check-* flags.
#include "agents/fabric_check.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agents/agent_flags.h"
#include "agents/unique_fd.h"
#include "common/time_util.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace fabric_check_test {

std::string Loopback(int port) { return absl::StrCat("127.0.0.1:", port); }

// A TCP socket bound to a free loopback port, listening when `listen_too`; its port.
UniqueFd BoundSocket(bool listen_too, int* port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  if (listen_too) REQUIRE(listen(fd.get(), 16) == 0);
  socklen_t length = sizeof(address);
  REQUIRE(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0);
  *port = ntohs(address.sin_port);
  return fd;
}

// A connected client socket to 127.0.0.1:`port`, or -1.
UniqueFd Connect(int port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return UniqueFd();
  }
  return fd;
}

FabricProgramRequest Program(const std::string& command) {
  FabricProgramRequest request;
  request.command = command;
  request.deadline = absl::Now() + absl::Seconds(20);
  request.check_timeout = absl::Seconds(20);
  return request;
}

TEST_CASE("a fabric probe of a healthy listener measures latency and bandwidth", "[fabric]") {
  FabricListener listener;
  REQUIRE(listener.Start(0).ok());
  REQUIRE(listener.port() > 0);
  const trainctl::v1::FabricProbe probe =
      ProbeFabric(Loopback(listener.port()), absl::Now() + absl::Seconds(10), 0);
  INFO(probe.detail());
  CHECK(probe.ok());
  CHECK(probe.detail().empty());
  CHECK(probe.latency_ms() > 0);
  CHECK(probe.latency_ms() < 1000);
  CHECK(probe.gbps() > 0);
  // The listener is on the wildcard address: also reached by name.
  const trainctl::v1::FabricProbe by_name =
      ProbeFabric(absl::StrCat("localhost:", listener.port()), absl::Now() + absl::Seconds(10), 0);
  INFO(by_name.detail());
  CHECK(by_name.ok());
  CHECK(testing::WaitUntil([&] { return listener.Active() == 0; }));
}

TEST_CASE("a fabric probe of a closed port says the connection was refused", "[fabric]") {
  int port = 0;
  { BoundSocket(false, &port); }  // bound and closed again: nothing listens there
  const trainctl::v1::FabricProbe probe =
      ProbeFabric(Loopback(port), absl::Now() + absl::Seconds(10), 0);
  CHECK_FALSE(probe.ok());
  CHECK(probe.detail() == absl::StrCat("connect to ", Loopback(port), ": Connection refused"));

  const trainctl::v1::FabricProbe bad = ProbeFabric("no-port", absl::Now() + absl::Seconds(1), 0);
  CHECK_FALSE(bad.ok());
  CHECK_THAT(bad.detail(), Catch::Contains("want HOST:PORT"));
}

TEST_CASE("a fabric probe of a peer that never answers fails at its deadline", "[fabric]") {
  int port = 0;
  // Listening, never accepting: the kernel completes the connection, and nothing answers.
  UniqueFd silent = BoundSocket(true, &port);
  const auto start = std::chrono::steady_clock::now();
  std::future<trainctl::v1::FabricProbe> probe = std::async(std::launch::async, [port] {
    return ProbeFabric(Loopback(port), absl::Now() + absl::Seconds(1), 0);
  });
  REQUIRE(probe.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  const trainctl::v1::FabricProbe result = probe.get();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  CHECK_FALSE(result.ok());
  CHECK(result.detail() == "no answer within 1s");
}

TEST_CASE("a fabric probe below --gang-check-min-tcp-gbps fails with its bandwidth", "[fabric]") {
  FabricListener listener;
  REQUIRE(listener.Start(0).ok());
  const trainctl::v1::FabricProbe probe =
      ProbeFabric(Loopback(listener.port()), absl::Now() + absl::Seconds(10), 1e6);
  CHECK_FALSE(probe.ok());
  CHECK(probe.gbps() > 0);
  CHECK(probe.detail() == absl::StrCat(FormatMeasure(probe.gbps()),
                                       " Gbit/s, below --gang-check-min-tcp-gbps 1e+06"));
}

TEST_CASE("the fabric listener serves at most 64 connections and outlives more", "[fabric]") {
  FabricListener listener;
  REQUIRE(listener.Start(0).ok());
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 70; ++i) {
    clients.push_back(Connect(listener.port()));
    REQUIRE(clients.back().get() >= 0);
  }
  CHECK(testing::WaitUntil([&] { return listener.Active() == kFabricMaxConnections; }));
  // The ones past the limit were closed at once: a probe now is closed too, and says so.
  const trainctl::v1::FabricProbe busy =
      ProbeFabric(Loopback(listener.port()), absl::Now() + absl::Seconds(10), 0);
  CHECK_FALSE(busy.ok());
  CHECK_THAT(busy.detail(), Catch::Contains("closed the connection before answering"));
  CHECK(listener.Active() == kFabricMaxConnections);
  clients.clear();
  CHECK(testing::WaitUntil([&] { return listener.Active() == 0; }));
  const trainctl::v1::FabricProbe later =
      ProbeFabric(Loopback(listener.port()), absl::Now() + absl::Seconds(10), 0);
  INFO(later.detail());
  CHECK(later.ok());

  // Stop() ends the connections being served, however idle, and joins their threads.
  for (int i = 0; i < 3; ++i) clients.push_back(Connect(listener.port()));
  CHECK(testing::WaitUntil([&] { return listener.Active() == 3; }));
  const auto start = std::chrono::steady_clock::now();
  listener.Stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK(listener.Active() == 0);
}

TEST_CASE("a peer that is not a fabric listener is named so", "[fabric]") {
  int port = 0;
  UniqueFd server = BoundSocket(true, &port);
  // Answers with bytes of its own, as some other service would.
  std::future<void> other = std::async(std::launch::async, [&] {
    UniqueFd peer(accept(server.get(), nullptr, nullptr));
    char buffer[64];
    [[maybe_unused]] ssize_t n = read(peer.get(), buffer, sizeof(buffer));
    const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    n = write(peer.get(), reply, sizeof(reply) - 1);
    n = read(peer.get(), buffer, sizeof(buffer));
  });
  const trainctl::v1::FabricProbe probe =
      ProbeFabric(Loopback(port), absl::Now() + absl::Seconds(10), 0);
  CHECK_FALSE(probe.ok());
  CHECK(probe.detail() == "the peer does not speak the fabric check protocol");
  other.wait();
}

TEST_CASE("the gang check program passes on exit 0 and fails with its output's tail", "[fabric]") {
  const trainctl::v1::FabricProgramRun passed = RunFabricProgram(Program("echo fine"));
  CHECK(passed.ok());
  CHECK(passed.detail().empty());
  CHECK(passed.gbps() == 0);
  CHECK(passed.has_took());

  const trainctl::v1::FabricProgramRun failed =
      RunFabricProgram(Program("echo all-reduce; echo NCCL error: peer lost >&2; exit 1"));
  CHECK_FALSE(failed.ok());
  CHECK(failed.detail() == "exited with status 1: all-reduce\nNCCL error: peer lost");

  const trainctl::v1::FabricProgramRun chatty =
      RunFabricProgram(Program("head -c 5000 /dev/zero | tr '\\0' x; echo; echo last; exit 2"));
  CHECK_FALSE(chatty.ok());
  CHECK_THAT(chatty.detail(), Catch::StartsWith("exited with status 2: ...xxx"));
  CHECK_THAT(chatty.detail(), Catch::EndsWith("x\nlast"));
  CHECK(chatty.detail().size() < 600);

  const trainctl::v1::FabricProgramRun missing =
      RunFabricProgram(Program("/nonexistent/gang-check"));
  CHECK_FALSE(missing.ok());
  CHECK_THAT(missing.detail(), Catch::StartsWith("exited with status 127: "));
}

TEST_CASE("the gang check program's last gbps line is read and judged by --gang-check-min-gbps",
          "[fabric]") {
  const std::string script =
      "echo '{\"gbps\": 12.5}'; echo '{\"gbps\": 93.1, \"ranks\": 2}'; echo '{\"gbps\": \"x\"}';"
      " echo '{not json'; echo done";
  FabricProgramRequest request = Program(script);
  trainctl::v1::FabricProgramRun run = RunFabricProgram(request);
  CHECK(run.ok());
  CHECK(run.gbps() == Approx(93.1));

  request.min_gbps = 90;
  run = RunFabricProgram(request);
  CHECK(run.ok());
  CHECK(run.detail().empty());

  request.min_gbps = 100;
  run = RunFabricProgram(request);
  CHECK_FALSE(run.ok());
  CHECK(run.gbps() == Approx(93.1));
  CHECK(run.detail() == "reported 93.1 Gbit/s, below --gang-check-min-gbps 100");

  FabricProgramRequest silent = Program("echo no number here");
  silent.min_gbps = 10;
  run = RunFabricProgram(silent);
  CHECK_FALSE(run.ok());
  CHECK(run.detail() == "printed no {\"gbps\": N} line, and --gang-check-min-gbps is 10");
}

TEST_CASE("the gang check program is killed at the check's deadline", "[fabric]") {
  FabricProgramRequest request = Program("sleep 30");
  const auto start = std::chrono::steady_clock::now();
  request.deadline = absl::Now() + absl::Milliseconds(300);
  request.check_timeout = absl::Seconds(60);
  const trainctl::v1::FabricProgramRun run = RunFabricProgram(request);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed < std::chrono::seconds(5));
  CHECK_FALSE(run.ok());
  CHECK(run.detail() ==
        absl::StrCat("killed at the check's deadline (", FormatDuration(60000), ")"));
  // It ran until the deadline, not less: the call lasted that long (its `took` counts from the
  // program's start, a few milliseconds after the deadline was set on a loaded host).
  CHECK(elapsed >= std::chrono::milliseconds(300));
  CHECK(DurationToMs(run.took()) >= 200);

  std::atomic<bool> cancelled{true};
  FabricProgramRequest stopping = Program("sleep 30");
  stopping.cancelled = &cancelled;
  const trainctl::v1::FabricProgramRun cut = RunFabricProgram(stopping);
  CHECK_FALSE(cut.ok());
  CHECK(cut.detail() == "killed: the agent is stopping");
}

TEST_CASE("the gang check program gets the check's environment", "[fabric]") {
  FabricProgramRequest request = Program(
      "test \"$TRAINCTL_CHECK_RANK\" = 3 && test -n \"$PATH\" && "
      "echo \"{\\\"gbps\\\": $TRAINCTL_CHECK_WORLD_SIZE}\"");
  request.env = {{"TRAINCTL_CHECK_RANK", "3"}, {"TRAINCTL_CHECK_WORLD_SIZE", "4"}};
  const trainctl::v1::FabricProgramRun run = RunFabricProgram(request);
  INFO(run.detail());
  CHECK(run.ok());
  CHECK(run.gbps() == 4);
}

TEST_CASE("the gang check flags parse, default, and name themselves in errors", "[fabric]") {
  const std::vector<std::string> base = {"--scheduler", "127.0.0.1:7070", "--node",
                                         "n",           "--work-dir",     "/w"};
  absl::StatusOr<AgentFlags> defaults = ParseAgentFlags(base);
  REQUIRE(defaults.ok());
  CHECK(defaults->gang_check.port == 0);
  CHECK(defaults->gang_check.program.empty());
  CHECK(defaults->gang_check.min_gbps == 0);
  CHECK(defaults->gang_check.min_tcp_gbps == 0);

  std::vector<std::string> args = base;
  for (const char* arg :
       {"--gang-check-port", "7090", "--gang-check-program", "/opt/nccl-check --all",
        "--gang-check-min-gbps", "10", "--gang-check-min-tcp-gbps", "0.5"}) {
    args.push_back(arg);
  }
  absl::StatusOr<AgentFlags> set = ParseAgentFlags(args);
  REQUIRE(set.ok());
  CHECK(set->gang_check.port == 7090);
  CHECK(set->gang_check.program == "/opt/nccl-check --all");
  CHECK(set->gang_check.min_gbps == 10);
  CHECK(set->gang_check.min_tcp_gbps == 0.5);

  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--gang-check-port", "65536"},
                                                        {"--gang-check-port", "-1"},
                                                        {"--gang-check-port", "x"},
                                                        {"--gang-check-min-gbps", "-1"},
                                                        {"--gang-check-min-tcp-gbps", "fast"}}) {
    std::vector<std::string> bad = base;
    bad.push_back(flag);
    bad.push_back(value);
    absl::StatusOr<AgentFlags> parsed = ParseAgentFlags(bad);
    INFO(flag << " " << value);
    REQUIRE_FALSE(parsed.ok());
    CHECK_THAT(std::string(parsed.status().message()), Catch::StartsWith(flag));
  }
  const std::string usage = AgentUsage();
  for (const char* flag : {"--gang-check-port", "--gang-check-program", "--gang-check-min-gbps",
                           "--gang-check-min-tcp-gbps"}) {
    CHECK_THAT(usage, Catch::Contains(flag));
  }
}

TEST_CASE("fabric measurements read with three significant digits", "[fabric]") {
  CHECK(FormatMeasure(93.14) == "93.1");
  CHECK(FormatMeasure(0.31234) == "0.312");
  CHECK(FormatMeasure(1234.5) == "1230");
  CHECK(FormatMeasure(0) == "0");
}

}  // namespace fabric_check_test
}  // namespace trainctl::agent
