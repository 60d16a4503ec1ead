// Config files for trainctld, trainctl-agent and trainctl: YAML mappings whose keys are the
// program's long flag names, without "--".
//
//   # /etc/trainctl/trainctld.yaml
//   data-dir: /var/lib/trainctl
//   heartbeat-interval: 2s
//   checkpoint-allowed-roots: [/mnt/ckpt, /scratch]   # a list flag: "a,b"
//   insecure-allow-plaintext: false
//
// A value is a scalar; a sequence of scalars stands for the comma-separated list a flag takes
// ("a,b"), and a mapping of scalars for its "k=v,k=v" form (labels: {rack: r1}). A flag that may
// be repeated takes a sequence, one value per repetition. The file's entries become arguments
// ("--key=value") that go before the command line's, and a flag given on the command line drops
// the file's entry for it: flags override the file. So one parser checks both, and
// AttributeToFile turns its message about a flag that came from the file into one that names the
// file, the line and the key.
//
// Pure functions but for reading the file; thread-compatible.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/flags.h"

namespace trainctl {

struct ConfigFile {
  std::string path;
  // One "--key=value" per value, in the file's order.
  std::vector<std::string> args;
  // Each key's line in the file (1-based).
  std::map<std::string, int> lines;
};

// Reads `path`. `flags` are the program's flags; those named in `not_keys` (--help, --config,
// actions such as --check-db) cannot be set by a file. INVALID_ARGUMENT naming the file, the line
// and the key for an unknown key, a value of the wrong shape, or YAML that does not parse;
// NOT_FOUND or PERMISSION_DENIED naming the file when it cannot be read. An empty file sets
// nothing.
absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path,
                                          const std::vector<FlagSpec>& flags,
                                          const std::set<std::string>& not_keys);

// The arguments a parser sees: the file's, less those of flags `given` on the command line, then
// the command line's `argv`.
std::vector<std::string> MergeConfigArgs(const ConfigFile& file, const std::set<std::string>& given,
                                         const std::vector<std::string>& argv);

// The long names of the flags that `parsed` saw.
std::set<std::string> FlagsGiven(const ParsedArgs& parsed, const std::vector<FlagSpec>& flags);

// A parser's error that starts with "--KEY", where KEY came from the file (and not the command
// line), becomes "FILE:LINE: KEY: <the error>"; any other error is returned as it is.
absl::Status AttributeToFile(const absl::Status& error, const ConfigFile& file,
                             const std::set<std::string>& given);

// A program's arguments with its config file, if the command line named one.
struct ConfiguredArgs {
  ParsedArgs parsed;               // the file's entries, then the command line's
  std::optional<ConfigFile> file;  // none without the config flag
  std::set<std::string> given;     // flags given on the command line

  // AttributeToFile with this file; `error` as it is without one.
  absl::Status Attribute(const absl::Status& error) const;
};

// `cmdline` is `argv` parsed against `flags` (successfully). When it sets `config_flag`, reads
// that file and parses the merge of both; else the command line alone.
absl::StatusOr<ConfiguredArgs> WithConfigFile(const ParsedArgs& cmdline,
                                              const std::vector<std::string>& argv,
                                              const std::vector<FlagSpec>& flags,
                                              const std::set<std::string>& not_keys,
                                              const std::string& config_flag);

// The effective configuration as a config file the program accepts: one "key: value" line per
// entry, in order, values quoted where YAML needs it. `header` lines are written first as
// comments.
std::string FormatConfig(const std::vector<std::pair<std::string, std::string>>& entries,
                         const std::string& header);

// One setting that differs between two configurations (a reload's before and after).
struct ConfigChange {
  std::string key;
  std::string before;  // "" when it was not set
  std::string after;
  bool applies = false;  // the running program takes it now; else at its next start
};

// The entries of `after` whose value differs from `before`'s (both as from the program's
// *ConfigEntries, same keys in the same order); `applies` from `reloads(key)`.
std::vector<ConfigChange> DiffConfig(const std::vector<std::pair<std::string, std::string>>& before,
                                     const std::vector<std::pair<std::string, std::string>>& after,
                                     const std::function<bool(const std::string&)>& reloads);

// Logs a reload of `path` by `program`: each change, and whether it applied or waits for a
// restart; or that nothing changed.
void LogConfigChanges(const std::string& program, const std::string& path,
                      const std::vector<ConfigChange>& changes);

}  // namespace trainctl
