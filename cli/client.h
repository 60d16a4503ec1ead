// The CLI's connection to the trainctl server: which address to use, the channel and stubs, the
// per-RPC deadline, and how gRPC errors are reported to the user.
//
//   Client client(ResolveServer(flag_value, std::getenv("TRAINCTL_SERVER")));
//   grpc::ClientContext ctx;
//   client.PrepareUnary(&ctx);
//   grpc::Status s = client.stub().GetJob(&ctx, request, &job);
//   if (!s.ok()) return client.ToStatus(s);
//
// Several servers (trainctl --server a:7070,b:7070: trainctld replicas sharing one PostgreSQL
// store, one leading and the others standbys that answer every call UNAVAILABLE naming the
// leader, common/leader_hint.h): FindLeader() asks each in turn, following the leader a standby
// names, until one serves; the stubs then talk to it. A read that a standby answers during the
// command (a failover) goes again to the new leader through Unary():
//
//   Client client(addresses, ca_pem, token);
//   TC_RETURN_IF_ERROR(client.FindLeader());
//   grpc::Status s = client.Unary([&](grpc::ClientContext* ctx) {
//     return client.stub().GetJob(ctx, request, &job);
//   });
//
// Thread-compatible: one command uses one Client from one thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/retry.h"
#include "common/leader_follow.h"
#include "common/status_macros.h"
#include "trainctl/v1/admin.grpc.pb.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::cli {

// Where the server listens when neither --server nor TRAINCTL_SERVER says otherwise.
inline constexpr char kDefaultServer[] = "127.0.0.1:7070";

// Unary RPCs give up after this long; streams (WatchJob) have no per-RPC deadline. FindLeader
// and Unary's retries keep to it too, all of their attempts together.
inline constexpr std::chrono::seconds kRpcTimeout{30};
// FindLeader gives one server this long to answer its health check.
inline constexpr std::chrono::seconds kProbeTimeout{5};

// The server address (or comma-separated addresses): the --server flag if given, else `env`
// (TRAINCTL_SERVER; may be null), else kDefaultServer. Empty values count as unset.
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
  // Several servers (ParseAddressList's result), in the order to try them. REQUIRES: not empty.
  Client(std::vector<std::string> servers, const std::string& ca_pem, const std::string& token);

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The server the stubs talk to now.
  const std::string& server() const { return follow_.current(); }
  // Every address given, in order.
  const std::vector<std::string>& servers() const { return follow_.addresses(); }

  // With several servers: asks each, in order, with gRPC's health check (which a standby answers
  // UNAVAILABLE naming the leader, like every call), follows the leader a standby names (also one
  // not in the list), skips those that are down, and backs off after every round, until one
  // serves; the stubs then talk to it. UNAVAILABLE when none does `within`, naming every
  // address tried and what each said. With one server: OK at once, no call made.
  absl::Status FindLeader(std::chrono::milliseconds within = kRpcTimeout);

  // What to do after a call to server() failed with `status` (`context`: the call's, finished).
  enum class Retry {
    kNo,            // report the error
    kNow,           // a standby named the leader: server() is that leader now
    kAfterBackoff,  // several servers, and server() names no leader (a failover under way) or
                    // cannot be reached: server() is the next one to ask, after a backoff
  };
  Retry Retarget(const grpc::Status& status, const grpc::ClientContext* context);
  // Retarget's answer as what a RetryLoop does next: kDone for kNo.
  RetryLoop::Next AfterRetarget(const grpc::Status& status, const grpc::ClientContext* context);

  // Calls `call(context)` (an idempotent unary call on one of the stubs) and, while Retarget
  // says so, calls it again, within kRpcTimeout in all (the deadline of every attempt's
  // context). Returns the last attempt's status.
  template <typename Call>
  grpc::Status Unary(const Call& call);
  v1::JobService::Stub& stub() { return *stub_; }
  // ClusterService (nodes and events), on the same channel.
  v1::ClusterService::Stub& cluster() { return *cluster_; }
  // QuotaService (projects, quotas and the queue), on the same channel.
  v1::QuotaService::Stub& quota() { return *quota_; }
  // AuthService (tokens), on the same channel.
  v1::AuthService::Stub& auth() { return *auth_; }
  // AdminService (version, backups), on the same channel.
  v1::AdminService::Stub& admin() { return *admin_; }
  v1::SecretService::Stub& secrets() { return *secrets_; }
  v1::WorkdirService::Stub& workdirs() { return *workdirs_; }
  // UsageService (who used what), on the same channel.
  v1::UsageService::Stub& usage() { return *usage_; }

  // Sets the per-RPC deadline (kRpcTimeout) on a context for a unary call.
  static void PrepareUnary(grpc::ClientContext* context);

  // Whether the channel to server() is connected now. After an UNAVAILABLE error, false means
  // the server itself could not be reached (rather than the server answering UNAVAILABLE).
  bool Connected() const;

  // The gRPC status as an absl::Status with the same code. When the server could not be reached,
  // the message is UnavailableMessage (naming every server, with several).
  absl::Status ToStatus(const grpc::Status& status) const;

 private:
  // Points the stubs at server(), on its channel (made at its first use and kept).
  void UseCurrent();

  const std::string ca_pem_;
  const std::string token_;
  const bool tls_;
  LeaderFollow follow_;
  // Every server's channel made so far, by address.
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
  // server()'s, and the stubs on it.
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::JobService::Stub> stub_;
  std::unique_ptr<v1::ClusterService::Stub> cluster_;
  std::unique_ptr<v1::QuotaService::Stub> quota_;
  std::unique_ptr<v1::AuthService::Stub> auth_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
  std::unique_ptr<v1::SecretService::Stub> secrets_;
  std::unique_ptr<v1::WorkdirService::Stub> workdirs_;
  std::unique_ptr<v1::UsageService::Stub> usage_;
};

// The bearer token: `flag_value` (--token), else the first line of `file` (--token-file), else
// `env` (TRAINCTL_TOKEN; may be null), else "". INVALID_ARGUMENT when both --token and
// --token-file are given or the file cannot be read.
absl::StatusOr<std::string> ResolveToken(const std::string& flag_value, const std::string& file,
                                         const char* env);

template <typename Call>
grpc::Status Client::Unary(const Call& call) {
  const auto give_up = std::chrono::system_clock::now() + kRpcTimeout;
  grpc::Status status;
  RetryLoop(kRpcTimeout, RetryLoop::AtTheEnd::kGiveUp).Run([&] {
    grpc::ClientContext context;
    context.set_deadline(give_up);
    status = call(&context);
    return status.ok() ? RetryLoop::kDone : AfterRetarget(status, &context);
  });
  return status;
}

}  // namespace trainctl::cli
