#include "cli/token_view.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// Parses `trainctl admin token create ARGV...` with the real flag specs.
ParsedArgs ParseTokenCreate(const std::vector<std::string>& argv) {
  std::vector<std::string> full = {"admin", "token", "create"};
  full.insert(full.end(), argv.begin(), argv.end());
  const std::vector<CommandSpec> commands = {{"admin", "", "", "", TokenCreateFlags(), 2, 3}};
  ParsedArgs parsed;
  REQUIRE(ParseArgs(full, {}, commands, &parsed).ok());
  return parsed;
}

TEST_CASE("CreateTokenRequestFromArgs takes every flag", "[token_view]") {
  absl::StatusOr<v1::CreateTokenRequest> r = CreateTokenRequestFromArgs(
      ParseTokenCreate({"--owner", "alice", "--role", "Member", "--project", "team-a", "--project",
                        "team-b", "--ttl", "1h30m"}));
  REQUIRE(r.ok());
  CHECK(r->owner() == "alice");
  CHECK(r->role() == v1::ROLE_MEMBER);
  REQUIRE(r->projects_size() == 2);
  CHECK(r->projects(1) == "team-b");
  CHECK(DurationToMs(r->ttl()) == 5400000);
  CHECK_FALSE(CreateTokenRequestFromArgs(ParseTokenCreate({"--owner", "a", "--role", "viewer"}))
                  ->has_ttl());
}

TEST_CASE("CreateTokenRequestFromArgs names the flag it refuses", "[token_view]") {
  CHECK(CreateTokenRequestFromArgs(ParseTokenCreate({"--role", "admin"})).status().message() ==
        "--owner is required");
  CHECK(CreateTokenRequestFromArgs(ParseTokenCreate({"--owner", "a"})).status().message() ==
        "--role is required: admin, operator, member or viewer");
  CHECK(CreateTokenRequestFromArgs(ParseTokenCreate({"--owner", "a", "--role", "root"}))
            .status()
            .message() == "--role must be admin, operator, member or viewer, got \"root\"");
  CHECK(CreateTokenRequestFromArgs(
            ParseTokenCreate({"--owner", "a", "--role", "admin", "--ttl", "0s"}))
            .status()
            .message() == "--ttl must be a positive duration such as 720h or 90m, got \"0s\"");
}

// 2026-01-01T00:00:00Z.
constexpr int64_t kT0 = 1767225600000;

TEST_CASE("RenderTokenList shows status and expiry, never a secret", "[token_view]") {
  v1::ListTokensResponse r;
  v1::ApiToken* a = r.add_tokens();
  a->set_id("00000000000000aa");
  a->set_owner("alice");
  a->set_role(v1::ROLE_MEMBER);
  a->add_projects("team-a");
  *a->mutable_create_time() = MsToTimestamp(kT0);
  *a->mutable_expire_time() = MsToTimestamp(kT0 + 1000);
  v1::ApiToken* b = r.add_tokens();
  b->set_id("00000000000000bb");
  b->set_owner("ops");
  b->set_role(v1::ROLE_OPERATOR);
  b->set_revoked(true);
  *b->mutable_create_time() = MsToTimestamp(kT0);
  CHECK(RenderTokenList(r.tokens(), kT0 + 2000) ==
        "ID                 OWNER   ROLE       PROJECTS   CREATED                "
        "EXPIRES                STATUS\n"
        "00000000000000aa   alice   member     team-a     2026-01-01T00:00:00Z   "
        "2026-01-01T00:00:01Z   expired\n"
        "00000000000000bb   ops     operator   -          2026-01-01T00:00:00Z   never"
        "                  revoked\n");
}

}  // namespace
}  // namespace trainctl::cli
