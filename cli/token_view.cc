#include "cli/token_view.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cli/output.h"
#include "common/enum_names.h"
#include "common/flag_values.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {

absl::StatusOr<v1::Role> ParseRole(const std::string& text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == "admin") return v1::ROLE_ADMIN;
  if (lower == "operator") return v1::ROLE_OPERATOR;
  if (lower == "member") return v1::ROLE_MEMBER;
  if (lower == "viewer") return v1::ROLE_VIEWER;
  return BadFlagValue("--role", "admin, operator, member or viewer", text);
}

std::string RoleName(v1::Role role) {
  if (role == v1::ROLE_UNSPECIFIED) return "-";
  return absl::AsciiStrToLower(EnumShortName(role));
}

std::vector<FlagSpec> TokenCreateFlags() {
  return {
      {"owner", 0, FlagSpec::Kind::kValue, "NAME", "",
       "create: who the token is for (1..64 characters); the actor of its events"},
      {"role", 0, FlagSpec::Kind::kValue, "ROLE", "", "create: admin, operator, member or viewer"},
      {"project", 0, FlagSpec::Kind::kList, "PROJECT", "", "create: a project a member may act in"},
      {"ttl", 0, FlagSpec::Kind::kValue, "D", "",
       "create: expire after this long, e.g. 720h (default: never)"}};
}

absl::StatusOr<v1::CreateTokenRequest> CreateTokenRequestFromArgs(const ParsedArgs& args) {
  v1::CreateTokenRequest request;
  if (!args.IsSet("owner")) return absl::InvalidArgumentError("--owner is required");
  if (!args.IsSet("role")) {
    return absl::InvalidArgumentError("--role is required: admin, operator, member or viewer");
  }
  request.set_owner(args.Get("owner"));
  absl::StatusOr<v1::Role> role = ParseRole(args.Get("role"));
  if (!role.ok()) return role.status();
  request.set_role(*role);
  for (const std::string& p : args.GetAll("project")) request.add_projects(p);
  if (args.IsSet("ttl")) {
    TC_ASSIGN_OR_RETURN(
        int64_t ttl_ms,
        ParseDurationFlag("--ttl", args.Get("ttl"), 1, std::numeric_limits<int64_t>::max(),
                          "a positive duration such as 720h or 90m"));
    *request.mutable_ttl() = MsToDuration(ttl_ms);
  }
  return request;
}

std::string RenderTokenList(const google::protobuf::RepeatedPtrField<v1::ApiToken>& tokens,
                            int64_t now_ms) {
  Table table({"ID", "OWNER", "ROLE", "PROJECTS", "CREATED", "EXPIRES", "STATUS"});
  for (const v1::ApiToken& t : tokens) {
    const int64_t expire_ms = t.has_expire_time() ? TimestampToMs(t.expire_time()) : 0;
    std::string status = "active";
    if (t.revoked()) {
      status = "revoked";
    } else if (expire_ms > 0 && expire_ms <= now_ms) {
      status = "expired";
    }
    table.AddRow({t.id(), t.owner(), RoleName(t.role()),
                  t.projects().empty() ? "-" : absl::StrJoin(t.projects(), ","),
                  FormatRfc3339(TimestampToMs(t.create_time())),
                  expire_ms > 0 ? FormatRfc3339(expire_ms) : "never", status});
  }
  return table.Render();
}

}  // namespace trainctl::cli
