// StandbyStub (standby_stub.h): every call answered as a standby trainctld answers it.
#include "tests/integration/standby_stub.h"

#include <catch2/catch.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/leader_hint.h"

namespace trainctl::testing {

// Each call gets a reactor that finishes it at once with the standby's answer.
class StandbyStub::Service final : public grpc::CallbackGenericService {
 public:
  explicit Service(StandbyStub* stub) : stub_(stub) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    stub_->calls_.fetch_add(1);
    const v1::LeaderInfo leader = stub_->Leader();
    if (!leader.address().empty()) ctx->AddTrailingMetadata(kLeaderTrailer, leader.address());
    return new Refusal(StandbyStatus(leader, stub_->address()));
  }

 private:
  class Refusal final : public grpc::ServerGenericBidiReactor {
   public:
    explicit Refusal(const grpc::Status& status) { Finish(status); }
    void OnDone() override { delete this; }
  };

  StandbyStub* const stub_;
};

StandbyStub::StandbyStub(v1::LeaderInfo leader) : leader_(std::move(leader)) {
  service_ = std::make_unique<Service>(this);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(service_.get());
  server_ = builder.BuildAndStart();
  REQUIRE(server_ != nullptr);
  REQUIRE(port > 0);
  address_ = absl::StrCat("127.0.0.1:", port);
}

StandbyStub::~StandbyStub() {
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
}

void StandbyStub::SetLeader(v1::LeaderInfo leader) {
  absl::MutexLock lock(&mu_);
  leader_ = std::move(leader);
}

v1::LeaderInfo StandbyStub::Leader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

}  // namespace trainctl::testing
