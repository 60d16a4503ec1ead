// Agent against an in-process fake scheduler: registration, reports, acks, reconnects.
#include "agents/agent.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::TempDir;
using ::trainctl::v1::AgentMessage;
using ::trainctl::v1::SchedulerMessage;

const char kWorkload[] = TRAINCTL_WORKLOAD_PATH;

// The scheduler's side of AgentService: records what agents send and sends what tests ask.
class FakeScheduler final : public trainctl::v1::AgentService::Service {
 public:
  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<SchedulerMessage, AgentMessage>* stream) override {
    int id;
    {
      absl::MutexLock lock(&mu_);
      id = ++streams_;
      drop_ = false;
    }
    std::thread reader([&] {
      AgentMessage message;
      while (stream->Read(&message)) {
        absl::MutexLock lock(&mu_);
        received_.push_back({id, message});
      }
      absl::MutexLock lock(&mu_);
      reader_done_ = id;
    });
    while (true) {
      SchedulerMessage out;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return drop_ || reader_done_ == id || !outbox_.empty();
        };
        mu_.Await(absl::Condition(&ready));
        if (drop_ || reader_done_ == id) break;
        out = std::move(outbox_.front());
        outbox_.erase(outbox_.begin());
      }
      stream->Write(out);
    }
    context->TryCancel();
    reader.join();
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "dropped by the test");
  }

  void Send(SchedulerMessage message) {
    absl::MutexLock lock(&mu_);
    outbox_.push_back(std::move(message));
  }

  // Ends the current stream from the scheduler's side.
  void DropStream() {
    absl::MutexLock lock(&mu_);
    drop_ = true;
  }

  // Waits for the next received message (after those already returned) that matches; skips
  // the ones that do not.
  std::optional<AgentMessage> Next(const std::function<bool(const AgentMessage&)>& match,
                                   int* stream = nullptr) {
    absl::MutexLock lock(&mu_);
    absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (true) {
      for (; cursor_ < received_.size(); ++cursor_) {
        if (match(received_[cursor_].message)) {
          if (stream != nullptr) *stream = received_[cursor_].stream;
          return received_[cursor_++].message;
        }
      }
      size_t seen = received_.size();
      auto more = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return received_.size() > seen; };
      if (!mu_.AwaitWithDeadline(absl::Condition(&more), deadline)) return std::nullopt;
    }
  }

  // Every seq received so far, in order.
  std::vector<uint64_t> Seqs() {
    absl::MutexLock lock(&mu_);
    std::vector<uint64_t> seqs;
    for (const Received& r : received_) seqs.push_back(r.message.seq());
    return seqs;
  }

 private:
  struct Received {
    int stream;
    AgentMessage message;
  };
  absl::Mutex mu_;
  int streams_ ABSL_GUARDED_BY(mu_) = 0;
  int reader_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool drop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<SchedulerMessage> outbox_ ABSL_GUARDED_BY(mu_);
  std::vector<Received> received_ ABSL_GUARDED_BY(mu_);
  size_t cursor_ ABSL_GUARDED_BY(mu_) = 0;
};

bool IsRegister(const AgentMessage& m) { return m.has_register_(); }
bool IsStarted(const AgentMessage& m) { return m.has_replica_started(); }
bool IsExited(const AgentMessage& m) { return m.has_replica_exited(); }

SchedulerMessage Ack(uint64_t seq) {
  SchedulerMessage m;
  m.mutable_ack()->set_seq(seq);
  return m;
}

SchedulerMessage Launch(const std::string& replica, std::vector<std::string> argv) {
  SchedulerMessage m;
  trainctl::v1::LaunchReplica& launch = *m.mutable_launch();
  launch.set_job_id("j-agent");
  launch.set_attempt(1);
  launch.set_replica_name(replica);
  launch.set_run_id(absl::StrCat("j-agent/1/", replica, "/0"));
  for (std::string& arg : argv) launch.add_argv(std::move(arg));
  return m;
}

// A fake scheduler on a local port and an agent connected to it, running on its own thread.
class AgentFixture {
 public:
  AgentFixture() {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&scheduler_);
    server_ = builder.BuildAndStart();
    Agent::Options options;
    options.scheduler = absl::StrCat("127.0.0.1:", port);
    options.node = "node-1";
    options.address = "10.1.2.3";
    options.work_dir = dir_.path();
    options.capacity.set_cpu(8);
    options.capacity.set_memory_mb(4096);
    options.allocatable.set_cpu(7);
    options.allocatable.set_memory_mb(3072);
    options.labels = {{"zone", "a"}};
    options.initial_backoff = absl::Milliseconds(20);
    options.max_backoff = absl::Milliseconds(100);
    options.progress_interval = absl::Milliseconds(50);
    agent_ = std::make_unique<Agent>(options);
    runner_ = std::thread([this] { agent_->Run(); });
  }
  ~AgentFixture() {
    if (!shut_down_) agent_->Shutdown(absl::Seconds(1), absl::Milliseconds(1));
    runner_.join();
    agent_.reset();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }

  FakeScheduler& scheduler() { return scheduler_; }
  Agent& agent() { return *agent_; }
  void Shutdown(absl::Duration grace, absl::Duration ack_wait) {
    shut_down_ = true;
    agent_->Shutdown(grace, ack_wait);
  }

 private:
  TempDir dir_;
  FakeScheduler scheduler_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Agent> agent_;
  std::thread runner_;
  bool shut_down_ = false;
};

TEST_CASE("the agent registers, heartbeats and reports runs until acked", "[agent]") {
  AgentFixture f;
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  const trainctl::v1::Register& r = reg->register_();
  CHECK(r.node() == "node-1");
  CHECK(r.address() == "10.1.2.3");
  CHECK(r.capacity().cpu() == 8);
  CHECK(r.allocatable().memory_mb() == 3072);
  CHECK(r.labels().at("zone") == "a");
  CHECK(r.agent_version() == "0.1.0");
  CHECK(r.agent_instance() == f.agent().instance());
  CHECK(r.runs().empty());
  CHECK(reg->seq() == 1);

  SchedulerMessage ack;
  ack.mutable_register_ack()->set_heartbeat_interval_ms(50);
  f.scheduler().Send(ack);
  REQUIRE(f.scheduler().Next([](const AgentMessage& m) { return m.has_heartbeat(); }));

  f.scheduler().Send(Launch("worker-0", {kWorkload, "--print", "hi", "--exit", "3"}));
  std::optional<AgentMessage> started = f.scheduler().Next(IsStarted);
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(started);
  REQUIRE(exited);
  CHECK(started->replica_started().run_id() == "j-agent/1/worker-0/0");
  CHECK(exited->replica_exited().exit_code() == 3);
  CHECK(exited->replica_exited().output_tail() == "hi");
  CHECK(exited->seq() > started->seq());

  SchedulerMessage read;
  read.mutable_read_log()->set_request_id(77);
  read.mutable_read_log()->set_run_id("j-agent/1/worker-0/0");
  f.scheduler().Send(read);
  std::optional<AgentMessage> log =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_log_data(); });
  REQUIRE(log);
  CHECK(log->log_data().request_id() == 77);
  CHECK(log->log_data().data() == "hi\n");
  CHECK(log->log_data().complete());

  // Nothing acked: after a reconnect the exit is listed in Register and both reports come
  // again, after it, with new seqs.
  f.scheduler().DropStream();
  int stream = 0;
  reg = f.scheduler().Next(IsRegister, &stream);
  REQUIRE(reg);
  CHECK(stream == 2);
  REQUIRE(reg->register_().runs_size() == 1);
  CHECK(reg->register_().runs(0).run_id() == "j-agent/1/worker-0/0");
  CHECK_FALSE(reg->register_().runs(0).running());
  std::optional<AgentMessage> started_again = f.scheduler().Next(IsStarted);
  std::optional<AgentMessage> exited_again = f.scheduler().Next(IsExited);
  REQUIRE(started_again);
  REQUIRE(exited_again);
  CHECK(started_again->seq() > reg->seq());
  CHECK(exited_again->seq() > started_again->seq());
  CHECK(exited_again->replica_exited().exit_code() == 3);

  // Acked: gone for good.
  f.scheduler().Send(Ack(exited_again->seq()));
  REQUIRE(testing::WaitUntil([&] { return f.agent().UnackedReports() == 0; }));
  f.scheduler().DropStream();
  reg = f.scheduler().Next(IsRegister, &stream);
  REQUIRE(reg);
  CHECK(stream == 3);
  CHECK(reg->register_().runs().empty());

  // Seqs are 1, 2, 3, ... in the order the scheduler saw them.
  std::vector<uint64_t> seqs = f.scheduler().Seqs();
  for (size_t i = 0; i < seqs.size(); ++i) CHECK(seqs[i] == i + 1);
}

TEST_CASE("replicas inherit no file descriptor but stdin, stdout and stderr", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch("worker-0", {"sh", "-c", "cd /proc/$$/fd && echo *"}));
  REQUIRE(f.scheduler().Next(IsExited));
  SchedulerMessage read;
  read.mutable_read_log()->set_run_id("j-agent/1/worker-0/0");
  f.scheduler().Send(read);
  std::optional<AgentMessage> log =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_log_data(); });
  REQUIRE(log);
  CHECK(log->log_data().data() == "0 1 2 3\n");  // 3: the directory the glob is reading
}

TEST_CASE("signs of progress reach the scheduler", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch(
      "worker-0", {"sh", "-c", "sleep 0.05; touch \"$TRAINCTL_PROGRESS_FILE\"; exec sleep 60"}));
  std::optional<AgentMessage> progress =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_replica_progress(); });
  REQUIRE(progress);
  CHECK(progress->replica_progress().run_id() == "j-agent/1/worker-0/0");
  CHECK(progress->replica_progress().source() == "progress-file");
  CHECK(progress->replica_progress().time_ms() > 0);
}

TEST_CASE("a reconnect keeps replicas running and lists them in Register", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--sleep", "60"}));
  std::optional<AgentMessage> started = f.scheduler().Next(IsStarted);
  REQUIRE(started);
  f.scheduler().Send(Ack(started->seq()));
  REQUIRE(testing::WaitUntil([&] { return f.agent().UnackedReports() == 0; }));

  f.scheduler().DropStream();
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  REQUIRE(reg->register_().runs_size() == 1);
  CHECK(reg->register_().runs(0).running());
  CHECK(reg->register_().runs(0).pid() == started->replica_started().pid());

  SchedulerMessage stop;
  stop.mutable_stop()->set_run_id("j-agent/1/worker-0/0");
  stop.mutable_stop()->set_grace_period_ms(5000);
  f.scheduler().Send(stop);
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().stopped_by_request());
  CHECK(exited->replica_exited().signal() == SIGTERM);
}

TEST_CASE("Shutdown stops replicas and waits for their exits to be acked", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--trap-term", "--sleep", "60"}));
  REQUIRE(f.scheduler().Next(IsStarted));
  std::thread shutdown([&] { f.Shutdown(absl::Seconds(5), absl::Seconds(10)); });
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK_FALSE(exited->replica_exited().stopped_by_request());  // The agent's own stop.
  CHECK(exited->replica_exited().exit_code() == 0);
  f.scheduler().Send(Ack(exited->seq()));
  shutdown.join();
  CHECK(f.agent().UnackedReports() == 0);
}

}  // namespace
}  // namespace trainctl::agent
