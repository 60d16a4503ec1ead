// trainctl: the command-line client of the trainctl scheduler.
//
//   trainctl [--server HOST:PORT[,HOST:PORT...]] COMMAND [ARGS] [FLAGS]
//
// Parses the command line, dispatches to one command, and maps the result to an exit status
// (see commands.h). Errors go to stderr as "error: CODE: message".
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/usage.h"
#include "cli/user_config.h"
#include "common/leader_hint.h"
#include "common/pem_file.h"
#include "common/version.h"

namespace trainctl::cli {
namespace {

std::string Header() {
  return absl::StrCat("trainctl ", kVersion,
                      " - submit and manage ML training jobs on a trainctl cluster");
}

std::vector<FlagSpec> GlobalFlags() {
  return {
      {"server", 0, FlagSpec::Kind::kValue, "HOST:PORT[,HOST:PORT...]", "",
       absl::StrCat("Server address (default: $TRAINCTL_SERVER, else the config file's server, "
                    "else ",
                    kDefaultServer,
                    "). Several, comma-separated: trainctld replicas sharing one database; "
                    "trainctl asks them in turn for the one that leads, follows the leader a "
                    "standby names, and runs the command there")},
      {"ca", 0, FlagSpec::Kind::kValue, "FILE", "",
       "CA certificate (PEM) the server's certificate must chain to; talks TLS to the server "
       "(default: $TRAINCTL_CA, else the config file's ca; none: plaintext, for a server on "
       "loopback)"},
      {"token", 0, FlagSpec::Kind::kValue, "TOKEN", "",
       "Bearer token for a server with authentication (default: $TRAINCTL_TOKEN, else the "
       "config file's token); sent only over TLS"},
      {"token-file", 0, FlagSpec::Kind::kValue, "FILE", "",
       "Read the bearer token from the first line of FILE, e.g. trainctld's DATA_DIR/admin.token "
       "(default: $TRAINCTL_TOKEN_FILE, else the config file's token-file)"},
      {"help", 'h', FlagSpec::Kind::kBool, "", "", "Show help for trainctl or a command"},
      {"version", 0, FlagSpec::Kind::kBool, "", "", "Print the version and exit"},
  };
}

int Fail(const absl::Status& status, const std::string& command) {
  std::cerr << "error: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
            << std::endl;
  if (status.code() == absl::StatusCode::kInvalidArgument && command != "-") {
    std::cerr << "Run 'trainctl " << (command.empty() ? "" : command + " ") << "--help' for usage."
              << std::endl;
  }
  return kExitError;
}

int Main(int argc, char** argv) {
  const std::vector<Command> commands = {
      SubmitCommand(),   GetCommand(),     DescribeCommand(), ListCommand(),   WaitCommand(),
      LogsCommand(),     CancelCommand(),  ResizeCommand(),   HoldCommand(),   ReleaseCommand(),
      UpdateCommand(),   RequeueCommand(), DeleteCommand(),   QueueCommand(),  QuotaCommand(),
      ProjectsCommand(), NodesCommand(),   NodeCommand(),     EventsCommand(), ProgressCommand(),
      AdminCommand(),    WhoAmICommand(),  VersionCommand(),  SecretCommand(), UsageCommand(),
      StacksCommand()};
  const std::vector<FlagSpec> globals = GlobalFlags();
  std::vector<CommandSpec> specs;
  for (const Command& c : commands) specs.push_back(c.spec);
  specs.push_back({"help", "[COMMAND]", "Show help for trainctl or a command", "", {}, 0, 1});
  specs.push_back(CompletionCommandSpec());

  ParsedArgs parsed;
  absl::Status status =
      ParseArgs(std::vector<std::string>(argv + 1, argv + argc), globals, specs, &parsed);
  if (!status.ok()) return Fail(status, parsed.command());
  if (parsed.GetBool("version")) {
    std::cout << "trainctl " << VersionText() << std::endl;
    return kExitOk;
  }
  std::string help_topic = parsed.command();
  const bool help = parsed.GetBool("help") || parsed.command() == "help";
  if (parsed.command() == "help") help_topic = parsed.args().empty() ? "" : parsed.args()[0];
  if (help && help_topic.empty()) {
    std::cout << FormatUsage(Header(), globals, specs);
    return kExitOk;
  }
  const CommandSpec* spec = FindCommand(specs, help_topic);
  if (help) {
    if (spec == nullptr) {
      return Fail(absl::InvalidArgumentError("unknown command \"" + help_topic + "\""), "");
    }
    std::cout << FormatCommandUsage(*spec, globals);
    return kExitOk;
  }
  if (spec == nullptr) {
    std::cerr << FormatUsage(Header(), globals, specs);
    return kExitError;
  }
  status = CheckArgs(parsed, *spec);
  if (!status.ok()) return Fail(status, parsed.command());
  if (parsed.command() == "completion") {
    absl::StatusOr<std::string> script = CompletionScript(parsed.args()[0], globals, specs);
    if (!script.ok()) return Fail(script.status(), parsed.command());
    std::cout << *script;
    return kExitOk;
  }

  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection(parsed, globals, [](const char* name) { return std::getenv(name); });
  if (!settings.ok()) return Fail(settings.status(), "-");
  std::string ca_pem;
  if (!settings->ca.empty()) {
    absl::StatusOr<std::string> pem = ReadPemFile("--ca", settings->ca);
    if (!pem.ok()) return Fail(pem.status(), "-");
    ca_pem = *std::move(pem);
  }
  absl::StatusOr<std::string> token = ResolveToken(settings->token, settings->token_file, nullptr);
  if (!token.ok()) return Fail(token.status(), "-");
  // One address is a gRPC target, taken as it is; several must each be HOST:PORT.
  const std::string server = ResolveServer(settings->server, nullptr);
  absl::StatusOr<std::vector<std::string>> servers = std::vector<std::string>{server};
  if (server.find(',') != std::string::npos) {
    servers = ParseAddressList(
        server, settings->server_source.empty() ? "--server" : settings->server_source);
    if (!servers.ok()) return Fail(servers.status(), "-");
  }
  Client client(*std::move(servers), ca_pem, *token);
  for (const Command& c : commands) {
    if (c.spec.name != parsed.command()) continue;
    // With several servers, the command runs on the one that leads (version finds it itself,
    // after printing its own line).
    if (absl::Status found = c.spec.name == "version" ? absl::OkStatus() : client.FindLeader();
        !found.ok()) {
      return Fail(found, "-");
    }
    absl::StatusOr<int> result = c.run(parsed, client);
    // Errors after the command line was accepted are not usage errors: no help hint.
    if (!result.ok()) return Fail(result.status(), "-");
    return *result;
  }
  return kExitError;  // not reached: every spec but help and completion has a command
}

}  // namespace
}  // namespace trainctl::cli

int main(int argc, char** argv) { return trainctl::cli::Main(argc, argv); }
