// Where trainctl finds its server and credentials: each setting from its flag, else its
// TRAINCTL_* variable, else the user's config file, else the default.
//
//   # ~/.config/trainctl/config.yaml ($XDG_CONFIG_HOME/trainctl/config.yaml; $TRAINCTL_CONFIG
//   # names another file)
//   server: sched.example.com:7070
//   ca: /etc/trainctl/ca.crt
//   token-file: ~/.config/trainctl/token
//
// | setting    | flag         | variable            | config key   |
// |------------|--------------|---------------------|--------------|
// | server     | --server     | TRAINCTL_SERVER     | server       |
// | CA         | --ca         | TRAINCTL_CA         | ca           |
// | token      | --token      | TRAINCTL_TOKEN      | token        |
// | token file | --token-file | TRAINCTL_TOKEN_FILE | token-file   |
//
// A token and a token file from one source go together into ResolveToken (both is an error);
// a source that gives either shadows the later ones. A leading "~/" in a path from the file is
// the user's home. The default file may be missing; a file named by $TRAINCTL_CONFIG must exist.
//
// Pure but for reading the file; thread-compatible.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/flags.h"

namespace trainctl::cli {

// Reads one environment variable; nullptr when unset.
using GetEnv = std::function<const char*(const char*)>;

struct ConnectionSettings {
  // HOST:PORT, or several (comma-separated: trainctld replicas, one leading; client.h).
  std::string server;
  // Where `server` came from, for errors: "--server", "TRAINCTL_SERVER" or "server in FILE";
  // "" when no source gives one.
  std::string server_source;
  std::string ca;
  std::string token;
  std::string token_file;
  // The config file read, or "" when none was.
  std::string config_path;
};

// The user's config file: $TRAINCTL_CONFIG, else $XDG_CONFIG_HOME/trainctl/config.yaml, else
// $HOME/.config/trainctl/config.yaml; "" when none of them is set.
std::string UserConfigPath(const GetEnv& env);

// The settings of `parsed` (the command line, parsed against `globals`), `env` and the config
// file. INVALID_ARGUMENT naming the file, its line and the key for a bad file; NOT_FOUND for a
// $TRAINCTL_CONFIG that does not exist. `server` is empty when no source gives one.
absl::StatusOr<ConnectionSettings> ResolveConnection(const ParsedArgs& parsed,
                                                     const std::vector<FlagSpec>& globals,
                                                     const GetEnv& env);

}  // namespace trainctl::cli
