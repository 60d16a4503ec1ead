// StandbyServer: what a trainctld that does not lead serves on its ports while it waits for the
// leader lease (server/leadership.h). Every gRPC call, of any service (health checks and agent
// streams too), ends UNAVAILABLE naming the leader (common/leader_hint.h: a LeaderInfo in the
// status details and the `trainctl-leader` trailer); every HTTP request gets 503 with the
// google.rpc.Status JSON the REST API uses for errors, its LeaderInfo in `details`, and a
// `Trainctl-Leader` header with the leader's REST address. Clients given several addresses go
// there; a client given only this one sees who to ask instead.
//
// It binds the ports the leader will serve on, so a standby that takes over serves on the same
// ones (Stop, then the real servers bind them again).
//
// Thread-safe: set_leader from any thread; Start once, Stop once.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "trainctl/v1/leader.pb.h"

namespace httplib {
class Server;
}

namespace trainctl::server {

struct StandbyOptions {
  // --listen and --http-listen ("off": no HTTP); the gRPC credentials and the HTTPS files.
  std::string listen;
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::string http_listen;
  std::string tls_cert;
  std::string tls_key;
};

class StandbyServer {
 public:
  explicit StandbyServer(StandbyOptions options);
  ~StandbyServer();
  StandbyServer(const StandbyServer&) = delete;
  StandbyServer& operator=(const StandbyServer&) = delete;

  // Binds both ports and serves. UNAVAILABLE naming the flag when one cannot be bound.
  absl::Status Start();
  // The ports bound (the HTTP one 0 with --http-listen off).
  int grpc_port() const { return grpc_port_; }
  int http_port() const { return http_port_; }
  // Stops serving and frees both ports.
  void Stop();

  void set_leader(const v1::LeaderInfo& leader) ABSL_LOCKS_EXCLUDED(mu_);
  // This trainctld's advertised gRPC and REST addresses, for the answers' text on each port.
  void set_self(const std::string& self, const std::string& self_http) ABSL_LOCKS_EXCLUDED(mu_);
  v1::LeaderInfo leader() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class Service;

  StandbyOptions options_;
  mutable absl::Mutex mu_;
  v1::LeaderInfo leader_ ABSL_GUARDED_BY(mu_);
  std::string self_ ABSL_GUARDED_BY(mu_);
  std::string self_http_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<httplib::Server> http_;
  std::thread http_thread_;
  int grpc_port_ = 0;
  int http_port_ = 0;
};

}  // namespace trainctl::server
