// secret set|list|delete: a project's secrets (SecretService). A value comes from a file or the
// command line, never from a prompt; no command prints one (trainctld never returns it).
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// ProjectSecrets::kMaxValueBytes, checked here first so a large file is not sent.
constexpr int64_t kMaxSecretBytes = 64 * 1024;

absl::StatusOr<std::string> SecretValue(const ParsedArgs& args) {
  const bool from_file = args.IsSet("from-file");
  const bool literal = args.IsSet("from-literal");
  if (from_file == literal) {
    return absl::InvalidArgumentError(
        "secret set needs exactly one of --from-file FILE and --from-literal VALUE");
  }
  if (literal) return args.Get("from-literal");
  const std::string path = args.Get("from-file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read --from-file ", path));
  std::ostringstream text;
  text << in.rdbuf();
  std::string value = text.str();
  if (static_cast<int64_t>(value.size()) > kMaxSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat("--from-file ", path, " holds ", value.size(),
                                                   " bytes; a secret holds at most 64 KiB"));
  }
  return value;
}

absl::StatusOr<int> PrintSecrets(const std::vector<v1::Secret>& secrets, OutputFormat format) {
  if (format != OutputFormat::kTable) {
    v1::ListSecretsResponse response;
    for (const v1::Secret& s : secrets) *response.add_secrets() = s;
    TC_ASSIGN_OR_RETURN(std::string text, MessageToFormat(response, format));
    std::cout << text << std::flush;
    return kExitOk;
  }
  Table table({"PROJECT", "NAME", "BYTES", "UPDATED"});
  const int64_t now = WallNowMs();
  for (const v1::Secret& s : secrets) {
    table.AddRow({s.project(), s.name(), absl::StrCat(s.size_bytes()),
                  FormatAge(now - TimestampToMs(s.update_time())) + " ago"});
  }
  std::cout << table.Render() << std::flush;
  return kExitOk;
}

absl::StatusOr<int> RunSecret(const ParsedArgs& args, Client& client) {
  TC_ASSIGN_OR_RETURN(OutputFormat format, ParseOutputFormat(args.Get("output")));
  const std::string& action = args.args()[0];
  if (action != "set" && action != "list" && action != "delete") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown secret action \"", action, "\"; use secret set, secret list or secret delete"));
  }
  const std::string project = args.Get("project");
  if (project.empty()) return absl::InvalidArgumentError("--project is required");
  const bool has_value = args.IsSet("from-file") || args.IsSet("from-literal");
  if (action == "list") {
    if (args.args().size() != 1 || has_value) {
      return absl::InvalidArgumentError("secret list takes only --project (and -o)");
    }
    v1::ListSecretsRequest request;
    request.set_project(project);
    v1::ListSecretsResponse response;
    grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
      return client.secrets().ListSecrets(context, request, &response);
    });
    if (!status.ok()) return client.ToStatus(status);
    if (response.secrets().empty() && format == OutputFormat::kTable) {
      std::cerr << "Project " << project << " has no secrets." << std::endl;
      return kExitOk;
    }
    return PrintSecrets({response.secrets().begin(), response.secrets().end()}, format);
  }
  if (args.args().size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("secret ", action, " needs the secret's NAME"));
  }
  const std::string& name = args.args()[1];
  v1::Secret secret;
  grpc::ClientContext context;
  Client::PrepareUnary(&context);
  grpc::Status status;
  if (action == "set") {
    v1::SetSecretRequest request;
    request.set_project(project);
    request.set_name(name);
    TC_ASSIGN_OR_RETURN(*request.mutable_value(), SecretValue(args));
    status = client.secrets().SetSecret(&context, request, &secret);
  } else {
    if (has_value) return absl::InvalidArgumentError("secret delete takes no value");
    v1::DeleteSecretRequest request;
    request.set_project(project);
    request.set_name(name);
    status = client.secrets().DeleteSecret(&context, request, &secret);
  }
  if (!status.ok()) return client.ToStatus(status);
  if (format != OutputFormat::kTable) return PrintSecrets({secret}, format);
  std::cout << "secret " << name << " of project " << project
            << (action == "set" ? absl::StrCat(" set (", secret.size_bytes(), " bytes)")
                                : std::string(" deleted"))
            << std::endl;
  return kExitOk;
}

}  // namespace

Command SecretCommand() {
  CommandSpec spec{
      "secret",
      "set|list|delete [NAME]",
      "Keep a project's secrets in trainctld (set), list their names (list), delete one",
      "A job's pools use them by name: workerPools[].secretRefs: {WANDB_API_KEY: wandb-token}\n"
      "sets WANDB_API_KEY in every replica of the pool to the secret's value, read at each\n"
      "launch. trainctld keeps values encrypted and never returns one: list shows names, sizes\n"
      "and update times. Admins and the project's members may use this command.\n"
      "\n"
      "  trainctl secret set wandb-token --project team-a --from-file ~/.wandb-key\n"
      "  trainctl secret list --project team-a",
      {{"project", 0, FlagSpec::Kind::kValue, "PROJECT", "", "The project (required)"},
       {"from-file", 0, FlagSpec::Kind::kValue, "FILE", "", "set: the value is FILE's content"},
       {"from-literal", 0, FlagSpec::Kind::kValue, "VALUE", "",
        "set: the value (visible in the shell's history and ps; prefer --from-file)"},
       OutputFlag()},
      1,
      2};
  return {std::move(spec), &RunSecret};
}

}  // namespace trainctl::cli
