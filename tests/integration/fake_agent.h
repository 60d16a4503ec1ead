// A client that speaks the agent protocol over a raw gRPC stream, for the tests of what trainctld
// does with peers that are not real agents (claims on other nodes' names, absurd registrations,
// too many streams, a node that only reads its launches).
//
//   FakeAgent fake(c.address());
//   grpc::Status s = fake.Register(reg);   // OK once a RegisterAck came, else how it ended
//   fake.StartHeartbeats();                // keeps the node READY while the test reads
//   v1::SchedulerMessage m;
//   while (fake.Read(&m)) { ... }
//
// Not thread-safe, except that the heartbeat thread writes while the test reads (gRPC allows one
// reader and one writer at once). The destructor cancels the stream and joins that thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::testing {

class FakeAgent {
 public:
  // Opens the stream; it ends at `deadline` from now at the latest.
  explicit FakeAgent(
      const std::string& address,
      std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials(),
      std::chrono::seconds deadline = std::chrono::seconds(10));
  ~FakeAgent();
  FakeAgent(const FakeAgent&) = delete;
  FakeAgent& operator=(const FakeAgent&) = delete;

  // Sends `reg`. OK once a RegisterAck arrived (the stream stays open), else the status the
  // scheduler ended the stream with.
  grpc::Status Register(const v1::Register& reg);
  // Sends a Heartbeat every `interval` (default: what the RegisterAck asked for) from a thread.
  void StartHeartbeats(std::chrono::milliseconds interval = std::chrono::milliseconds(0));
  bool Read(v1::SchedulerMessage* msg) { return stream_->Read(msg); }
  // Reads until the scheduler ends the stream; returns how.
  grpc::Status Finish();

 private:
  std::unique_ptr<v1::AgentService::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::SchedulerMessage>> stream_;
  std::atomic<uint64_t> seq_{0};
  std::chrono::milliseconds heartbeat_interval_{500};
  std::atomic<bool> stopping_{false};
  std::thread heartbeats_;
  bool finished_ = false;
};

// A registration of `node` with made-up, sane resources (512 cpus, 4 TiB) at 203.0.113.7.
v1::Register RogueRegistration(const std::string& node);

}  // namespace trainctl::testing
