// Test fixture for Agent: an in-process fake scheduler (the scheduler's side of AgentService,
// with an in-memory copy of the logs the agent ships) and an agent connected to it over a local
// port, with helpers to build scheduler messages and
// match agent messages.
//
//   AgentFixture f([](Agent::Options& o) { o.checks.preflight = false; });
//   REQUIRE(f.scheduler().Next(IsRegister));
//   f.scheduler().Send(Launch("worker-0", {kWorkload, "--exit", "0"}));
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "agents/agent.h"
#include "tests/agents/fake_host_probe.h"
#include "tests/agents/fake_log_copy.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent::testing {

using ::trainctl::v1::AgentMessage;
using ::trainctl::v1::SchedulerMessage;

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

  // ShipLogs: into an in-memory copy of the agent's logs (fake_log_copy.h).
  grpc::Status ShipLogs(grpc::ServerContext*,
                        grpc::ServerReaderWriter<trainctl::v1::ShipLogsResponse,
                                                 trainctl::v1::ShipLogsRequest>* stream) override {
    trainctl::v1::ShipLogsRequest request;
    while (stream->Read(&request)) {
      if (!stream->Write(logs_.Take(request))) break;
    }
    return grpc::Status::OK;
  }
  FakeLogCopy& logs() { return logs_; }

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

  // Every message received so far, in order.
  std::vector<AgentMessage> All() {
    absl::MutexLock lock(&mu_);
    std::vector<AgentMessage> all;
    for (const Received& r : received_) all.push_back(r.message);
    return all;
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
  FakeLogCopy logs_;
  absl::Mutex mu_;
  int streams_ ABSL_GUARDED_BY(mu_) = 0;
  int reader_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool drop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<SchedulerMessage> outbox_ ABSL_GUARDED_BY(mu_);
  std::vector<Received> received_ ABSL_GUARDED_BY(mu_);
  size_t cursor_ ABSL_GUARDED_BY(mu_) = 0;
};

inline bool IsRegister(const AgentMessage& m) { return m.has_register_(); }
inline bool IsStarted(const AgentMessage& m) { return m.has_replica_started(); }
inline bool IsExited(const AgentMessage& m) { return m.has_replica_exited(); }

inline SchedulerMessage Ack(uint64_t seq) {
  SchedulerMessage m;
  m.mutable_ack()->set_seq(seq);
  return m;
}

inline bool IsCheckReport(const AgentMessage& m, const std::string& phase) {
  return m.has_check_report() && m.check_report().run().phase() == phase;
}

inline SchedulerMessage Launch(const std::string& replica, std::vector<std::string> argv,
                               int attempt = 1) {
  SchedulerMessage m;
  trainctl::v1::LaunchReplica& launch = *m.mutable_launch();
  launch.set_job_id("j-agent");
  launch.set_attempt(attempt);
  launch.set_replica_name(replica);
  launch.set_run_id(absl::StrCat("j-agent/", attempt, "/", replica, "/0"));
  for (std::string& arg : argv) launch.add_argv(std::move(arg));
  launch.add_hostnames("worker-0");
  launch.add_hostnames("worker-1");
  return m;
}

inline SchedulerMessage Stop(const std::string& run_id) {
  SchedulerMessage m;
  m.mutable_stop()->set_run_id(run_id);
  m.mutable_stop()->set_grace_period_ms(5000);
  return m;
}

// Writes an executable /bin/sh script and returns its path.
inline std::string WriteScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

// A fake scheduler on a local port and an agent connected to it, running on its own thread. The
// agent checks a fake host (FakeHostProbe, with room on the work dir) and runs no periodic
// checks unless `customize` turns them on, and leaves no stream for want of heartbeat acks
// (Options::heartbeat_ack_timeout) unless `customize` sets a timeout.
class AgentFixture {
 public:
  using Customize = std::function<void(Agent::Options&)>;

  explicit AgentFixture(const Customize& customize = nullptr) {
    probe_->free_bytes[dir_.path()] = 500 * kGb;
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
    options.probe = probe_;
    options.checks.health_check_interval = absl::ZeroDuration();
    options.run_as = RootReplicas();
    // The fake scheduler answers no heartbeat unless a test sends the ack: no ack deadline
    // unless a test sets one.
    options.heartbeat_ack_timeout = absl::ZeroDuration();
    // Host replicas only, whatever tools the host has (its check runs then have no item
    // container-runtime); a test that wants images turns them on.
    options.images.disabled = true;
    if (customize) customize(options);
    options_ = options;
    agent_ = std::make_unique<Agent>(options);
    runner_ = std::thread([this] { agent_->Run(); });
  }
  ~AgentFixture() {
    // Replicas outlive their agent: stop them first.
    agent_->StopReplicas(absl::ZeroDuration());
    if (!shut_down_) agent_->Shutdown(absl::Milliseconds(1));
    runner_.join();
    agent_.reset();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }

  // The agent process ends (without waiting for acks: as good as SIGKILL for what it keeps on
  // disk) and a new one starts on the same work dir with the same options.
  void Restart() {
    agent_->Shutdown(absl::ZeroDuration());
    runner_.join();
    agent_.reset();
    shut_down_ = false;
    agent_ = std::make_unique<Agent>(options_);
    runner_ = std::thread([this] { agent_->Run(); });
  }

  FakeScheduler& scheduler() { return scheduler_; }
  const std::string& work_dir() const { return dir_.path(); }
  FakeHostProbe& probe() { return *probe_; }
  Agent& agent() { return *agent_; }
  void Shutdown(absl::Duration ack_wait) {
    shut_down_ = true;
    agent_->Shutdown(ack_wait);
  }

 private:
  TempDir dir_;
  std::shared_ptr<FakeHostProbe> probe_ = std::make_shared<FakeHostProbe>();
  FakeScheduler scheduler_;
  std::unique_ptr<grpc::Server> server_;
  Agent::Options options_;
  std::unique_ptr<Agent> agent_;
  std::thread runner_;
  bool shut_down_ = false;
};

}  // namespace trainctl::agent::testing
