// trainctl-agent's AgentDaemon in process (agents/agent_daemon.h): flags that contradict the host
// or name no shim fail Init, a metrics port taken fails it too, and a daemon that started
// registers with a fake scheduler and stops cleanly.
#include "agents/agent_daemon.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/agents/agent_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::FakeScheduler;
using ::trainctl::agent::testing::IsRegister;
using ::trainctl::agent::testing::TempDir;

// The flags of an agent of node-1 on `work_dir` with a fixed host (4 CPUs, 2 GiB, no GPUs), and
// `extra`.
std::vector<std::string> Args(const std::string& scheduler, const std::string& work_dir,
                              std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--scheduler",
                                   scheduler,
                                   "--node",
                                   "node-1",
                                   "--work-dir",
                                   work_dir,
                                   "--cpus",
                                   "4",
                                   "--memory-mb",
                                   "2048",
                                   "--gpus",
                                   "0",
                                   "--shim",
                                   "/bin/true",
                                   "--default-run-as-user",
                                   "root",
                                   "--allow-root-replicas"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::unique_ptr<AgentDaemon> MakeDaemon(const std::vector<std::string>& args) {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(args);
  INFO(flags.status().ToString());
  REQUIRE(flags.ok());
  REQUIRE(ResolvePrograms(&*flags).ok());
  return std::make_unique<AgentDaemon>(args, *flags);
}

TEST_CASE("flags that contradict the host, or no shim, fail the agent's Init", "[agent_daemon]") {
  TempDir dir;
  std::unique_ptr<AgentDaemon> reserve =
      MakeDaemon(Args("127.0.0.1:1", dir.path(), {"--reserve-cpu", "4"}));
  const absl::Status too_much = reserve->Init();
  REQUIRE_FALSE(too_much.ok());
  CHECK_THAT(std::string(too_much.message()), Catch::Contains("--reserve-cpu: 4 leaves no CPU"));
  CHECK(reserve->ReportFailure(too_much) == 2);
  reserve->Shutdown();

  std::unique_ptr<AgentDaemon> no_shim =
      MakeDaemon(Args("127.0.0.1:1", dir.path(), {"--shim", dir.path() + "/no-shim"}));
  const absl::Status missing = no_shim->Init();
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.message()),
             Catch::Contains("cannot run the replicas' supervisor " + dir.path() + "/no-shim"));
  CHECK(no_shim->ReportFailure(missing) == 1);
}

TEST_CASE("a metrics port already taken fails the agent's Init, which undoes itself",
          "[agent_daemon]") {
  TempDir dir;
  std::unique_ptr<AgentDaemon> first =
      MakeDaemon(Args("127.0.0.1:1", dir.path(), {"--metrics-listen", "127.0.0.1:0"}));
  REQUIRE(first->Init().ok());
  REQUIRE(first->metrics_port() > 0);
  TempDir other;
  std::unique_ptr<AgentDaemon> second =
      MakeDaemon(Args("127.0.0.1:1", other.path(),
                      {"--metrics-listen", absl::StrCat("127.0.0.1:", first->metrics_port())}));
  const absl::Status taken = second->Init();
  REQUIRE_FALSE(taken.ok());
  CHECK(second->ReportFailure(taken) == 1);
  second.reset();  // destroyed without Start or Shutdown
  first.reset();
}

TEST_CASE("an agent daemon registers its node and stops cleanly", "[agent_daemon]") {
  FakeScheduler scheduler;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&scheduler);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);

  TempDir dir;
  std::unique_ptr<AgentDaemon> daemon =
      MakeDaemon(Args(absl::StrCat("127.0.0.1:", port), dir.path(),
                      {"--reserve-cpu", "1", "--metrics-listen", "127.0.0.1:0"}));
  REQUIRE(daemon->Init().ok());
  CHECK(daemon->options().allocatable.cpu() == 3);
  daemon->Start();
  std::optional<v1::AgentMessage> reg = scheduler.Next(IsRegister);
  REQUIRE(reg);
  CHECK(reg->register_().node() == "node-1");
  CHECK(reg->register_().capacity().cpu() == 4);
  CHECK(reg->register_().allocatable().cpu() == 3);
  const absl::Time asked = absl::Now();
  daemon->Shutdown();
  // The fake scheduler acknowledges nothing: the stop waits the 2 s given to acks, no longer.
  CHECK(absl::Now() - asked < absl::Seconds(5));
  daemon->Shutdown();
  daemon.reset();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
}

}  // namespace
}  // namespace trainctl::agent
