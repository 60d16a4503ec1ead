// The leader a standby trainctld names (proto/trainctl/v1/leader.proto), both ends of it:
// standbys build their answer with StandbyStatus, and clients that were given several addresses
// (trainctl --server a,b; trainctl-agent --scheduler a,b) read it back with LeaderHint and go
// there next.
//
//   grpc::Status s = stub->GetJob(&ctx, req, &job);
//   if (std::optional<v1::LeaderInfo> l = LeaderHint(s, &ctx); l && !l->address().empty()) ...
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainctl/v1/leader.pb.h"

namespace trainctl {

// The trailer (gRPC) and header (REST, capitalized as Trainctl-Leader) that name the leader's
// address: its gRPC address on the gRPC port, its REST address on the REST port.
inline constexpr char kLeaderTrailer[] = "trainctl-leader";
inline constexpr char kLeaderHttpHeader[] = "Trainctl-Leader";

// A standby's answer to every call: UNAVAILABLE saying that `self` is a standby and who leads,
// with `leader` as the status details. The caller also sends the trailer (LeaderTrailerValue).
grpc::Status StandbyStatus(const v1::LeaderInfo& leader, const std::string& self);
// The message of that status.
std::string StandbyMessage(const v1::LeaderInfo& leader, const std::string& self);
// The same for REST's body: `self_http` is this trainctld's REST address, and the leader is named
// by its REST address (or said to serve none).
std::string StandbyRestMessage(const v1::LeaderInfo& leader, const std::string& self_http);

// The leader a failed call's status names: from its details, else from the `trainctl-leader`
// trailer of `ctx` (may be null; only after the call finished). nullopt for any other status.
std::optional<v1::LeaderInfo> LeaderHint(const grpc::Status& status,
                                         const grpc::ClientContext* ctx);

// "a:7070,b:7070" as its addresses, in order, each HOST:PORT checked (net_address.h);
// INVALID_ARGUMENT naming `flag` and the bad entry, or an empty list, or a duplicate.
absl::StatusOr<std::vector<std::string>> ParseAddressList(const std::string& text,
                                                          const std::string& flag);

}  // namespace trainctl
