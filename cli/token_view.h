// The CLI's side of API tokens: role names, the create request from `trainctl admin token
// create`'s flags, and the token table.
//
//   absl::StatusOr<v1::CreateTokenRequest> r = CreateTokenRequestFromArgs(args);
//   std::cout << RenderTokenList(response.tokens(), now_ms);
//
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/flags.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// "admin", "operator", "member" or "viewer" (any case); INVALID_ARGUMENT naming them otherwise.
absl::StatusOr<v1::Role> ParseRole(const std::string& text);

// "admin", ... for a role.
std::string RoleName(v1::Role role);

// --owner, --role, --project and --ttl of `trainctl admin token create`.
std::vector<FlagSpec> TokenCreateFlags();

// From --owner, --role, --project (repeated) and --ttl. INVALID_ARGUMENT naming the flag; the
// server checks the rest (a member needs a project, others take none).
absl::StatusOr<v1::CreateTokenRequest> CreateTokenRequestFromArgs(const ParsedArgs& args);

// ID, OWNER, ROLE, PROJECTS, CREATED, EXPIRES, STATUS (active, revoked or expired).
std::string RenderTokenList(const google::protobuf::RepeatedPtrField<v1::ApiToken>& tokens,
                            int64_t now_ms);

}  // namespace trainctl::cli
