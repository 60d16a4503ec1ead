// trainctld: the trainctl scheduler daemon. Parses its flags and runs it (server/daemon.h);
// `trainctld pki ...` is the certificate tool (server/pki_command.h).
#include <iostream>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/mutex_mode.h"
#include "common/version.h"
#include "server/daemon.h"
#include "server/daemon_flags.h"
#include "server/data_dir.h"
#include "server/pki_command.h"

int main(int argc, char** argv) {
  using namespace trainctl;
  UseBuildMutexChecks();
  if (argc >= 2 && std::string(argv[1]) == "pki") {
    return server::RunPkiCommand(std::vector<std::string>(argv + 2, argv + argc));
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<server::DaemonFlags> flags = server::ParseDaemonFlags(args);
  if (!flags.ok()) return server::ReportUsageError(std::string(flags.status().message()));
  if (flags->help) {
    std::cout << server::DaemonUsage();
    return 0;
  }
  if (flags->version) {
    std::cout << "trainctld " << VersionText() << "\n";
    return 0;
  }
  if (flags->print_config) {
    std::cout << server::DaemonConfigText(*flags);
    return 0;
  }
  if (absl::Status s = SetupLogging("trainctld", flags->log_level, flags->log_format); !s.ok()) {
    return server::ReportUsageError(std::string(s.message()));
  }
  if (flags->check_db) return server::RunCheckDb(flags->data_dir);
  return server::RunDaemon(args, *flags);
}
