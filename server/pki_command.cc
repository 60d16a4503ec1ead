#include "server/pki_command.h"

#include <iostream>

#include "absl/strings/str_split.h"
#include "server/pki.h"

namespace trainctl::server {
namespace {

constexpr char kUsage[] =
    "Usage:\n"
    "  trainctld pki init DIR [--hosts NAME,IP,...]\n"
    "      Creates a cluster CA in DIR (ca.crt, ca.key) and the scheduler's certificate\n"
    "      (server.crt, server.key) for the names and addresses clients and agents connect to\n"
    "      (default: localhost, 127.0.0.1, ::1 and this host's name). Refuses a DIR that\n"
    "      already holds a CA.\n"
    "  trainctld pki issue-agent DIR NODE\n"
    "      Writes DIR/agents/NODE.crt and NODE.key: the client certificate of the agent of\n"
    "      node NODE (its common name). Again for a node: a new certificate (rotation, or a\n"
    "      host whose certificate was revoked).\n"
    "  trainctld pki issue-server DIR [--hosts NAME,IP,...]\n"
    "      Writes server.crt and server.key again (rotation, or new names).\n\n"
    "Keys are ECDSA P-256 and 0600; certificates last 825 days, the CA 3650. Copy ca.crt to\n"
    "every host; the keys never leave the host that uses them.\n";

int Usage(const std::string& error) {
  std::cerr << "trainctld pki: " << error << "\n\n" << kUsage;
  return 2;
}

int Report(const absl::Status& status) {
  if (!status.ok()) {
    std::cerr << "trainctld pki: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

// DIR and --hosts for init and issue-server; false (after printing why) on a usage error.
bool ParseHostsArgs(const std::vector<std::string>& args, std::string* dir,
                    std::vector<std::string>* hosts, int* code) {
  for (size_t i = 1; i < args.size(); ++i) {
    std::string value;
    if (args[i] == "--hosts" && i + 1 < args.size()) {
      value = args[++i];
    } else if (args[i].rfind("--hosts=", 0) == 0) {
      value = args[i].substr(8);
    } else if (!args[i].empty() && args[i][0] == '-') {
      *code = Usage("unknown flag " + args[i]);
      return false;
    } else if (dir->empty()) {
      *dir = args[i];
      continue;
    } else {
      *code = Usage("unexpected argument " + args[i]);
      return false;
    }
    for (absl::string_view h : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      hosts->emplace_back(h);
    }
    if (hosts->empty()) {
      *code = Usage("--hosts needs at least one name or address");
      return false;
    }
  }
  if (dir->empty()) {
    *code = Usage(args[0] + " needs DIR");
    return false;
  }
  return true;
}

}  // namespace

int RunPkiCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string& command = args[0];
  if (command == "init" || command == "issue-server") {
    std::string dir;
    std::vector<std::string> hosts;
    int code = 0;
    if (!ParseHostsArgs(args, &dir, &hosts, &code)) return code;
    if (command == "init") {
      if (int rc = Report(InitPki(dir, {hosts})); rc != 0) return rc;
      std::cout << "wrote " << dir << "/ca.crt, ca.key, server.crt and server.key\n"
                << "next: trainctld --tls-cert " << dir << "/server.crt --tls-key " << dir
                << "/server.key --agent-ca " << dir << "/ca.crt ...\n"
                << "      trainctld pki issue-agent " << dir << " NODE   (once per agent host)\n";
      return 0;
    }
    if (int rc = Report(IssueServerCertificate(dir, hosts)); rc != 0) return rc;
    std::cout << "wrote " << dir << "/server.crt and server.key; restart trainctld to serve them\n";
    return 0;
  }
  if (command == "issue-agent") {
    if (args.size() != 3 || args[1].empty() || args[1][0] == '-' || args[2].empty() ||
        args[2][0] == '-') {
      return Usage("issue-agent takes DIR and NODE");
    }
    if (int rc = Report(IssueAgentCertificate(args[1], args[2])); rc != 0) return rc;
    const std::string prefix = args[1] + "/agents/" + args[2];
    std::cout << "wrote " << prefix << ".crt and " << prefix << ".key\n"
              << "next, on that host: trainctl-agent --node " << args[2] << " --tls-cert " << prefix
              << ".crt --tls-key " << prefix << ".key --tls-ca " << args[1] << "/ca.crt ...\n";
    return 0;
  }
  return Usage("unknown pki command '" + command + "'");
}

}  // namespace trainctl::server
