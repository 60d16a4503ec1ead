// StandbyStub: a stand-in for a standby trainctld, for tests of the clients' side of high
// availability (trainctl --server a,b; trainctl-agent --scheduler a,b). A real gRPC server on a
// loopback port that answers every call, whatever its service and method (unary calls, agent
// streams, health checks), exactly as a standby does (common/leader_hint.h): UNAVAILABLE from
// StandbyStatus(leader, itself), with the leader's address in the `trainctl-leader` trailer.
//
//   v1::LeaderInfo leader;
//   leader.set_address(cluster.address());
//   leader.set_epoch(4);
//   StandbyStub standby(leader);
//   cluster.Run({BinDir() + "/trainctl", "--server", standby.address(), "list"});
//   CHECK(standby.calls() > 0);
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "trainctl/v1/leader.pb.h"

namespace trainctl::testing {

class StandbyStub {
 public:
  // Serves on 127.0.0.1, on a port of its own; `leader` with an empty address: none leads yet.
  explicit StandbyStub(v1::LeaderInfo leader);
  ~StandbyStub();
  StandbyStub(const StandbyStub&) = delete;
  StandbyStub& operator=(const StandbyStub&) = delete;

  // HOST:PORT.
  const std::string& address() const { return address_; }
  // The leader the next answers name.
  void SetLeader(v1::LeaderInfo leader);
  // Calls answered so far.
  int calls() const { return calls_.load(); }

 private:
  class Service;

  v1::LeaderInfo Leader() const;

  std::string address_;
  mutable absl::Mutex mu_;
  v1::LeaderInfo leader_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> calls_{0};
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace trainctl::testing
