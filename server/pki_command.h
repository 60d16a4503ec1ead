// `trainctld pki ...`: the command line of the PKI (server/pki.h).
//
//   trainctld pki init DIR [--hosts NAME,IP,...]
//   trainctld pki issue-agent DIR NODE
//   trainctld pki issue-server DIR [--hosts NAME,IP,...]
#pragma once

#include <string>
#include <vector>

namespace trainctl::server {

// Runs the subcommand in `args` (the arguments after "pki"); prints what it wrote or why it
// failed. Returns the exit code: 0, 1 on failure, 2 on a usage error.
int RunPkiCommand(const std::vector<std::string>& args);

}  // namespace trainctl::server
