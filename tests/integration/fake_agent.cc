#include "tests/integration/fake_agent.h"

namespace trainctl::testing {

FakeAgent::FakeAgent(const std::string& address,
                     std::shared_ptr<grpc::ChannelCredentials> credentials,
                     std::chrono::seconds deadline)
    : stub_(v1::AgentService::NewStub(grpc::CreateChannel(address, std::move(credentials)))) {
  ctx_.set_deadline(std::chrono::system_clock::now() + deadline);
  stream_ = stub_->Connect(&ctx_);
}

FakeAgent::~FakeAgent() {
  stopping_ = true;
  ctx_.TryCancel();
  if (heartbeats_.joinable()) heartbeats_.join();
  if (!finished_) stream_->Finish().ok();
}

grpc::Status FakeAgent::Register(const v1::Register& reg) {
  v1::AgentMessage msg;
  msg.set_seq(++seq_);
  *msg.mutable_register_() = reg;
  if (stream_->Write(msg)) {
    v1::SchedulerMessage in;
    while (stream_->Read(&in)) {
      if (in.has_register_ack()) {
        heartbeat_interval_ = std::chrono::milliseconds(in.register_ack().heartbeat_interval_ms());
        return grpc::Status::OK;
      }
    }
  }
  return Finish();
}

void FakeAgent::StartHeartbeats(std::chrono::milliseconds interval) {
  if (interval.count() > 0) heartbeat_interval_ = interval;
  heartbeats_ = std::thread([this, every = heartbeat_interval_] {
    while (!stopping_) {
      v1::AgentMessage beat;
      beat.set_seq(++seq_);
      beat.mutable_heartbeat();
      if (!stream_->Write(beat)) return;
      std::this_thread::sleep_for(every);
    }
  });
}

grpc::Status FakeAgent::Finish() {
  v1::SchedulerMessage in;
  while (stream_->Read(&in)) {
  }
  finished_ = true;
  return stream_->Finish();
}

v1::Register RogueRegistration(const std::string& node) {
  v1::Register reg;
  reg.set_node(node);
  reg.set_address("203.0.113.7");
  reg.mutable_capacity()->set_cpu(512);
  reg.mutable_capacity()->set_memory_mb(1 << 22);
  *reg.mutable_allocatable() = reg.capacity();
  reg.set_agent_instance("rogue");
  return reg;
}

}  // namespace trainctl::testing
