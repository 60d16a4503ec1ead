// The CLI's connection to the trainctl server: which address to use, the channel and stubs, the
// per-RPC deadline, and how gRPC errors are reported to the user.
//
//   Client client(ResolveServer(flag_value, std::getenv("TRAINCTL_SERVER")));
//   grpc::ClientContext ctx;
//   client.PrepareUnary(&ctx);
//   grpc::Status s = client.stub().GetJob(&ctx, request, &job);
//   if (!s.ok()) return client.ToStatus(s);
//
// Thread-compatible: one command uses one Client from one thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainctl/v1/admin.grpc.pb.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::cli {

// Where the server listens when neither --server nor TRAINCTL_SERVER says otherwise.
inline constexpr char kDefaultServer[] = "127.0.0.1:7070";

// Unary RPCs give up after this long; streams (WatchJob) have no per-RPC deadline.
inline constexpr std::chrono::seconds kRpcTimeout{30};

// Reconnect backoff for broken streams and polls: 200ms, doubling, at most 2s.
inline constexpr int64_t kInitialBackoffMs = 200;
inline constexpr int64_t kMaxBackoffMs = 2000;

// The backoff after one of `current_ms`.
int64_t NextBackoffMs(int64_t current_ms);

// The server address: the --server flag if given, else `env` (TRAINCTL_SERVER; may be null),
// else kDefaultServer. Empty values count as unset.
std::string ResolveServer(const std::string& flag_value, const char* env);

// The message for an UNAVAILABLE error: which address could not be reached, gRPC's reason, how
// to point trainctl at another server, and what TLS needs (`tls`: the client talks TLS).
std::string UnavailableMessage(const std::string& server, const std::string& grpc_message,
                               bool tls = false);

// Whether a broken WatchJob stream (or a failed poll while following logs) is worth retrying:
// the server went away or restarted, as opposed to a request it rejected.
bool IsTransient(grpc::StatusCode code);

// `flag_value` if given, else `env` (may be null), else "".
std::string ResolveSetting(const std::string& flag_value, const char* env);

class Client {
 public:
  // `ca_pem`: the CA the server's certificate must chain to; empty: plaintext. `token`: the
  // bearer token sent with every call; only over TLS (gRPC never sends call credentials in
  // plaintext), and a plaintext server on loopback needs none.
  explicit Client(std::string server, const std::string& ca_pem = "",
                  const std::string& token = "");

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& server() const { return server_; }
  v1::JobService::Stub& stub() { return *stub_; }
  // ClusterService (nodes and events), on the same channel.
  v1::ClusterService::Stub& cluster() { return *cluster_; }
  // QuotaService (projects, quotas and the queue), on the same channel.
  v1::QuotaService::Stub& quota() { return *quota_; }
  // AuthService (tokens), on the same channel.
  v1::AuthService::Stub& auth() { return *auth_; }
  // AdminService (version, backups), on the same channel.
  v1::AdminService::Stub& admin() { return *admin_; }

  // Sets the per-RPC deadline (kRpcTimeout) on a context for a unary call.
  static void PrepareUnary(grpc::ClientContext* context);

  // Whether the channel is connected to the server now. After an UNAVAILABLE error, false means
  // the server itself could not be reached (rather than the server answering UNAVAILABLE).
  bool Connected() const;

  // The gRPC status as an absl::Status with the same code. When the server could not be reached,
  // the message is UnavailableMessage.
  absl::Status ToStatus(const grpc::Status& status) const;

 private:
  // Constant after construction.
  const std::string server_;
  const bool tls_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::JobService::Stub> stub_;
  std::unique_ptr<v1::ClusterService::Stub> cluster_;
  std::unique_ptr<v1::QuotaService::Stub> quota_;
  std::unique_ptr<v1::AuthService::Stub> auth_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};

// The bearer token: `flag_value` (--token), else the first line of `file` (--token-file), else
// `env` (TRAINCTL_TOKEN; may be null), else "". INVALID_ARGUMENT when both --token and
// --token-file are given or the file cannot be read.
absl::StatusOr<std::string> ResolveToken(const std::string& flag_value, const std::string& file,
                                         const char* env);

}  // namespace trainctl::cli
