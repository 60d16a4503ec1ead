// Tests of the log shipper's transport (agents/log_shipper.h) over real gRPC: a tiny in-test
// AgentService whose ShipLogs keeps an in-memory copy (fake_log_copy.h), dropped streams, a
// failover to another scheduler, an agent restart, and a scheduler without ShipLogs. The copy
// must end up with the log's exact bytes, none sent twice. Last, the Agent's own shipper
// (agent_fixture.h) with real replicas, across an agent restart.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "agents/log_shipper.h"
#include "agents/run_files.h"
#include "tests/agents/agent_fixture.h"
#include "tests/agents/fake_log_copy.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace log_shipper_stream_test {

using ::trainctl::agent::testing::FakeLogCopy;
using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;
using ::trainctl::v1::ShipLogsRequest;
using ::trainctl::v1::ShipLogsResponse;

// The scheduler's side of ShipLogs over `copy`; it can end a stream after taking a request,
// before answering it (the answer is lost, the bytes are in the copy).
class ShipService final : public trainctl::v1::AgentService::Service {
 public:
  explicit ShipService(FakeLogCopy* copy) : copy_(copy) {}

  grpc::Status ShipLogs(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<ShipLogsResponse, ShipLogsRequest>* stream) override {
    {
      absl::MutexLock lock(&mu_);
      ++streams_;
    }
    ShipLogsRequest request;
    bool first = true;
    while (stream->Read(&request)) {
      bool drop = false;
      bool carries = false;
      for (const trainctl::v1::LogPiece& piece : request.pieces()) {
        carries = carries || !piece.data().empty();
      }
      {
        absl::MutexLock lock(&mu_);
        if (first) nodes_.push_back(request.node());
        drop = drop_next_data_ && carries;
        if (drop) drop_next_data_ = false;
      }
      first = false;
      ShipLogsResponse response = copy_->Take(request);
      if (drop) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "dropped by the test");
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

  void DropNextData() {
    absl::MutexLock lock(&mu_);
    drop_next_data_ = true;
  }
  int streams() {
    absl::MutexLock lock(&mu_);
    return streams_;
  }
  std::vector<std::string> nodes() {
    absl::MutexLock lock(&mu_);
    return nodes_;
  }

 private:
  FakeLogCopy* const copy_;
  absl::Mutex mu_;
  int streams_ ABSL_GUARDED_BY(mu_) = 0;
  bool drop_next_data_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> nodes_ ABSL_GUARDED_BY(mu_);
};

// A scheduler older than ShipLogs, counting the calls it refused.
class OldService final : public trainctl::v1::AgentService::Service {
 public:
  grpc::Status ShipLogs(grpc::ServerContext*,
                        grpc::ServerReaderWriter<ShipLogsResponse, ShipLogsRequest>*) override {
    calls_.fetch_add(1);
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown method ShipLogs");
  }
  std::atomic<int> calls_{0};
};

// A gRPC server of `service` on a free loopback port.
struct TestServer {
  explicit TestServer(grpc::Service* service) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service);
    server = builder.BuildAndStart();
    address = absl::StrCat("127.0.0.1:", port);
  }
  ~TestServer() { server->Shutdown(std::chrono::system_clock::now()); }
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

std::string Lines(int first, int last) {
  std::string text;
  for (int n = first; n <= last; ++n) text += absl::StrFormat("line %06d of the replica\n", n);
  return text;
}

void Append(const std::string& path, const std::string& text) {
  REQUIRE(MakeDirs(std::filesystem::path(path).parent_path().string()).ok());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
}

// What the agent gives its shipper, with the registered address and the run's end in the
// test's hands.
struct Agentish {
  absl::Mutex mu;
  std::string address ABSL_GUARDED_BY(mu);
  std::atomic<bool> ended{false};

  void SetAddress(const std::string& a) {
    absl::MutexLock lock(&mu);
    address = a;
  }
  LogShipper::Options Options(const std::string& work_dir) {
    LogShipper::Options options;
    options.node = "node-1";
    options.work_dir = work_dir;
    options.interval = absl::Milliseconds(20);
    options.initial_backoff = absl::Milliseconds(20);
    options.max_backoff = absl::Milliseconds(100);
    options.address = [this] {
      absl::MutexLock lock(&mu);
      return address;
    };
    options.channel = [](const std::string& a) {
      return grpc::CreateChannel(a, grpc::InsecureChannelCredentials());
    };
    options.ended = [this](const std::string&) { return ended.load(); };
    return options;
  }
};

TEST_CASE("the shipper's copy survives dropped streams, a failover and a restart, byte for byte",
          "[log_shipper][grpc]") {
  TempDir dir;
  FakeLogCopy copy;
  ShipService first_service(&copy);
  TestServer first(&first_service);
  Agentish agent;
  const RunIdParts parts{"j-ship", 1, "w-0", 0};
  const std::string run = MakeRunId(parts);
  const std::string log = RunLogPath(dir.path(), parts);
  Append(log, Lines(1, 100));
  const int64_t part1 = static_cast<int64_t>(Lines(1, 100).size());

  auto shipper = std::make_unique<LogShipper>(agent.Options(dir.path()));
  shipper->Start();
  // No registered stream yet: nothing is shipped, and the backlog says what waits.
  REQUIRE(WaitUntil([&] { return shipper->backlog_bytes() == part1; }));
  CHECK(first_service.streams() == 0);

  agent.SetAddress(first.address);
  shipper->Registered(first.address);
  REQUIRE(WaitUntil([&] { return copy.Get(run).stored == part1; }));
  REQUIRE(WaitUntil([&] { return shipper->backlog_bytes() == 0; }));

  // The scheduler takes a request and the stream breaks before its answer: the next stream
  // probes, and goes on where the copy ends.
  first_service.DropNextData();
  Append(log, Lines(101, 200));
  REQUIRE(WaitUntil([&] { return first_service.streams() >= 2; }));
  Append(log, Lines(201, 220));
  REQUIRE(WaitUntil(
      [&] { return copy.Get(run).stored == static_cast<int64_t>(ReadFile(log).size()); }));
  CHECK(shipper->stream_errors() >= 1);

  // A failover: the agent registers with another scheduler (sharing the copy, as trainctld
  // replicas share PostgreSQL); the shipper leaves the first at once.
  ShipService second_service(&copy);
  TestServer second(&second_service);
  agent.SetAddress(second.address);
  shipper->Registered(second.address);
  Append(log, Lines(221, 300));
  REQUIRE(WaitUntil(
      [&] { return copy.Get(run).stored == static_cast<int64_t>(ReadFile(log).size()); }));
  CHECK(second_service.streams() >= 1);

  // The agent restarts; the run ends meanwhile: the new shipper completes the copy.
  shipper->Stop();
  shipper.reset();
  Append(log, Lines(301, 310));
  agent.ended = true;
  shipper = std::make_unique<LogShipper>(agent.Options(dir.path()));
  shipper->Start();
  REQUIRE(WaitUntil([&] { return copy.Get(run).final; }));
  const absl::Time stop_start = absl::Now();
  shipper->Stop();
  CHECK(absl::Now() - stop_start < absl::Seconds(2));

  FakeLogCopy::Copy got = copy.Get(run);
  CHECK(got.text == ReadFile(log));
  CHECK(got.stored == static_cast<int64_t>(ReadFile(log).size()));
  CHECK(copy.taken_bytes() == got.stored);
  CHECK(copy.missed_pieces() == 0);  // no byte sent twice, none at the wrong offset
  CHECK(copy.malformed() == 0);
  for (const std::string& node : first_service.nodes()) CHECK(node == "node-1");
  for (const std::string& node : second_service.nodes()) CHECK(node == "node-1");
}

TEST_CASE("a scheduler without ShipLogs is asked again only slowly, and Stop is prompt",
          "[log_shipper][grpc]") {
  TempDir dir;
  OldService old;
  TestServer server(&old);
  Agentish agent;
  agent.SetAddress(server.address);
  Append(RunLogPath(dir.path(), {"j-old", 1, "w-0", 0}), "kept on the node\n");
  LogShipper shipper(agent.Options(dir.path()));
  shipper.Start();
  REQUIRE(WaitUntil([&] { return old.calls_.load() == 1; }));
  absl::SleepFor(absl::Milliseconds(300));  // a dozen intervals, many backoffs
  CHECK(old.calls_.load() == 1);
  CHECK(shipper.stream_errors() == 0);
  CHECK(shipper.backlog_bytes() == 17);
  const absl::Time stop_start = absl::Now();
  shipper.Stop();
  CHECK(absl::Now() - stop_start < absl::Seconds(2));
}

TEST_CASE("the agent ships a replica's log, final only once the replica ended, across a restart",
          "[log_shipper][agent]") {
  using ::trainctl::agent::testing::AgentFixture;
  using ::trainctl::agent::testing::IsExited;
  using ::trainctl::agent::testing::IsRegister;
  using ::trainctl::agent::testing::IsStarted;
  using ::trainctl::agent::testing::kWorkload;
  using ::trainctl::agent::testing::Launch;
  AgentFixture f([](Agent::Options& o) {
    o.checks.preflight = false;
    o.log_ship_interval = absl::Milliseconds(20);
  });
  auto registered = [&] {
    REQUIRE(f.scheduler().Next(IsRegister));
    trainctl::v1::SchedulerMessage ack;
    ack.mutable_register_ack()->set_heartbeat_interval_ms(50);
    f.scheduler().Send(ack);
  };
  registered();
  const std::string run = "j-agent/1/worker-0/0";
  const std::string log = RunLogPath(f.work_dir(), {"j-agent", 1, "worker-0", 0});
  // stderr is unbuffered: "before" is in the log while the replica sleeps.
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--stderr", "before", "--sleep", "1.5",
                                         "--stderr", "after", "--exit", "0"}));
  REQUIRE(f.scheduler().Next(IsStarted));
  REQUIRE(WaitUntil([&] { return f.scheduler().logs().Get(run).text == "before\n"; }));
  CHECK_FALSE(f.scheduler().logs().Get(run).final);

  // The new agent adopts the running replica before its shipper looks: the run is not ended.
  f.Restart();
  registered();
  REQUIRE(f.scheduler().Next(IsExited));
  REQUIRE(WaitUntil([&] { return f.scheduler().logs().Get(run).final; }));
  CHECK(f.scheduler().logs().Get(run).text == ReadFile(log));
  CHECK(f.scheduler().logs().Get(run).text == "before\nafter\n");
  CHECK(f.scheduler().logs().missed_pieces() == 0);
}

}  // namespace log_shipper_stream_test
}  // namespace trainctl::agent
