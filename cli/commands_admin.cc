// admin token create|list|revoke and whoami: AuthService requests, then print; admin backup
// (commands_backup.cc).
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/token_view.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

absl::StatusOr<int> PrintMessage(const google::protobuf::Message& m, OutputFormat format) {
  TC_ASSIGN_OR_RETURN(std::string text, MessageToFormat(m, format));
  std::cout << text << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunCreate(const ParsedArgs& args, OutputFormat format, Client& client) {
  TC_ASSIGN_OR_RETURN(v1::CreateTokenRequest request, CreateTokenRequestFromArgs(args));
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::CreateTokenResponse response;
  grpc::Status status = client.auth().CreateToken(&context, request, &response);
  if (!status.ok()) return client.ToStatus(status);
  if (format != OutputFormat::kTable) return PrintMessage(response, format);
  // The secret alone on stdout, so that `trainctl admin token create ... > alice.token` works.
  std::cerr << "token " << response.token().id() << " for " << response.token().owner() << " ("
            << RoleName(response.token().role())
            << "); it is shown only now: keep it like a password" << std::endl;
  std::cout << response.secret() << std::endl;
  return kExitOk;
}

absl::StatusOr<int> RunList(OutputFormat format, Client& client) {
  v1::ListTokensResponse response;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.auth().ListTokens(context, v1::ListTokensRequest(), &response);
  });
  if (!status.ok()) return client.ToStatus(status);
  if (format != OutputFormat::kTable) return PrintMessage(response, format);
  std::cout << RenderTokenList(response.tokens(), WallNowMs()) << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunRevoke(const std::string& id, OutputFormat format, Client& client) {
  v1::RevokeTokenRequest request;
  request.set_id(id);
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  v1::ApiToken token;
  grpc::Status status = client.auth().RevokeToken(&context, request, &token);
  if (!status.ok()) return client.ToStatus(status);
  if (format != OutputFormat::kTable) return PrintMessage(token, format);
  std::cout << "token " << token.id() << " of " << token.owner() << " revoked" << std::endl;
  return kExitOk;
}

absl::StatusOr<int> RunAdmin(const ParsedArgs& args, Client& client) {
  const std::vector<std::string>& a = args.args();
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  if (!a.empty() && a[0] == "backup") {
    if (a.size() != 2) return absl::InvalidArgumentError("admin backup takes one FILE");
    return RunAdminBackup(a[1], args.GetBool("force"), client);
  }
  if (a.size() < 2 || a[0] != "token") {
    return absl::InvalidArgumentError(
        "usage: trainctl admin token create|list|revoke, or trainctl admin backup FILE; run "
        "'trainctl admin --help'");
  }
  const std::string& sub = a[1];
  if (sub == "create" && a.size() == 2) return RunCreate(args, format, client);
  if (sub == "list" && a.size() == 2) return RunList(format, client);
  if (sub == "revoke" && a.size() == 3) return RunRevoke(a[2], format, client);
  if (sub == "revoke") return absl::InvalidArgumentError("admin token revoke takes one token ID");
  return absl::InvalidArgumentError(
      absl::StrCat("unknown admin token subcommand \"", sub, "\" (create, list or revoke, alone)"));
}

absl::StatusOr<int> RunWhoAmI(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  v1::ApiToken token;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.auth().WhoAmI(context, v1::WhoAmIRequest(), &token);
  });
  if (!status.ok()) return client.ToStatus(status);
  if (format != OutputFormat::kTable) return PrintMessage(token, format);
  std::vector<std::pair<std::string, std::string>> fields = {
      {"Owner", token.owner()},
      {"Role", RoleName(token.role())},
      {"Token", token.id().empty() ? "(none: this server does not authenticate)" : token.id()}};
  if (!token.projects().empty()) {
    std::string projects;
    for (const std::string& p : token.projects()) {
      absl::StrAppend(&projects, projects.empty() ? "" : ", ", p);
    }
    fields.push_back({"Projects", projects});
  }
  if (token.has_expire_time()) {
    fields.push_back({"Expires", FormatRfc3339(TimestampToMs(token.expire_time()))});
  }
  std::cout << RenderFields(fields) << std::flush;
  return kExitOk;
}

}  // namespace

Command AdminCommand() {
  std::vector<FlagSpec> flags = TokenCreateFlags();
  flags.push_back(OutputFlag());
  flags.push_back({"force", 0, FlagSpec::Kind::kBool, "", "",
                   "backup: replace FILE if it exists (default: refuse)"});
  CommandSpec spec{
      "admin",
      "token create|list|revoke [ID] | backup FILE",
      "Manage API tokens; back up the server's database (needs an admin token)",
      "Subcommands:\n"
      "  token create --owner NAME --role ROLE [--project P]... [--ttl D]\n"
      "                 make a token; prints it once on stdout (only its hash is stored)\n"
      "  token list     every token: id, owner, role, projects, expiry, status\n"
      "  token revoke ID\n"
      "                 refuse the token from now on\n"
      "  backup FILE [--force]\n"
      "                 a consistent copy of trainctld's database, taken while jobs run, written\n"
      "                 to FILE (mode 0600) once its size and SHA-256 check out; never a partial\n"
      "                 FILE; refuses to replace an existing FILE without --force. It holds\n"
      "                 secret env values and token hashes: keep it like a password.\n"
      "                 Restore: stop trainctld, replace DATA_DIR/trainctl.db with it, remove\n"
      "                 DATA_DIR/trainctl.db-wal and -shm, start trainctld\n"
      "\n"
      "Roles:\n"
      "  admin     everything, including tokens and quotas\n"
      "  operator  read everything and every job's logs; cordon, uncordon, drain and revoke\n"
      "            nodes\n"
      "  member    read jobs, nodes, queues and events; submit, cancel, read logs and report\n"
      "            progress in its projects only (--project, repeatable, at least one)\n"
      "  viewer    read jobs, nodes, queues and events; no logs\n"
      "\n"
      "trainctld asks for a token whenever it serves TLS. At its first start it writes an admin\n"
      "token to DATA_DIR/admin.token (mode 0600); create everyone else's with it:\n"
      "  trainctl --ca ca.crt --token-file /var/lib/trainctl/admin.token \\\n"
      "      admin token create --owner alice --role member --project team-a > alice.token",
      std::move(flags),
      2,
      3};
  return {std::move(spec), &RunAdmin};
}

Command WhoAmICommand() {
  CommandSpec spec{"whoami",
                   "",
                   "Show whose token this is: owner, role, projects",
                   "Checks the token trainctl sends (--token, --token-file or TRAINCTL_TOKEN).",
                   {OutputFlag()},
                   0,
                   0};
  return {std::move(spec), &RunWhoAmI};
}

}  // namespace trainctl::cli
