#include "common/leader_hint.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace trainctl {
namespace {

constexpr char kLeaderInfoType[] = "type.googleapis.com/trainctl.v1.LeaderInfo";

bool ValidHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  return colon != std::string::npos && colon > 0 &&
         absl::SimpleAtoi(address.substr(colon + 1), &port) && port > 0 && port <= 65535;
}

}  // namespace

std::string StandbyMessage(const v1::LeaderInfo& leader, const std::string& self) {
  if (leader.address().empty()) {
    return absl::StrCat("trainctld at ", self,
                        " is a standby and no trainctld leads yet (a failover is under way); "
                        "try again in a few seconds");
  }
  return absl::StrCat("trainctld at ", self, " is a standby; the leader is at ", leader.address(),
                      " (epoch ", leader.epoch(), ")");
}

std::string StandbyRestMessage(const v1::LeaderInfo& leader, const std::string& self_http) {
  if (leader.address().empty() || !leader.http_address().empty()) {
    v1::LeaderInfo rest = leader;
    rest.set_address(leader.http_address());
    return StandbyMessage(rest, self_http);
  }
  return absl::StrCat("trainctld at ", self_http, " is a standby; the leader (epoch ",
                      leader.epoch(), ") serves no REST API; its gRPC address is ",
                      leader.address());
}

grpc::Status StandbyStatus(const v1::LeaderInfo& leader, const std::string& self) {
  v1::RpcStatus details;
  details.set_code(grpc::StatusCode::UNAVAILABLE);
  details.set_message(StandbyMessage(leader, self));
  details.add_details()->PackFrom(leader);
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, details.message(),
                      details.SerializeAsString());
}

std::optional<v1::LeaderInfo> LeaderHint(const grpc::Status& status,
                                         const grpc::ClientContext* ctx) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return std::nullopt;
  v1::RpcStatus details;
  if (!status.error_details().empty() && details.ParseFromString(status.error_details())) {
    for (const auto& any : details.details()) {
      v1::LeaderInfo leader;
      if (any.type_url() == kLeaderInfoType && any.UnpackTo(&leader)) return leader;
    }
  }
  if (ctx == nullptr) return std::nullopt;
  const auto& trailers = ctx->GetServerTrailingMetadata();
  auto it = trailers.find(kLeaderTrailer);
  if (it == trailers.end()) return std::nullopt;
  v1::LeaderInfo leader;
  leader.set_address(std::string(it->second.data(), it->second.size()));
  return leader;
}

absl::StatusOr<std::vector<std::string>> ParseAddressList(const std::string& text,
                                                          const std::string& flag) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const std::string address(absl::StripAsciiWhitespace(part));
    if (address.empty() || !ValidHostPort(address)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " must be HOST:PORT or a comma-separated list of them, got \"", text,
                       "\"", address.empty() ? " (an empty entry)" : "",
                       address.empty() ? "" : absl::StrCat(" (\"", address, "\" is not one)")));
    }
    if (!seen.insert(address).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " names ", address, " twice, in \"", text, "\""));
    }
    out.push_back(address);
  }
  return out;
}

}  // namespace trainctl
