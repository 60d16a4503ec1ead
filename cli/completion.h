// Shell completion for trainctl: `trainctl completion bash|zsh` prints a script generated from
// the CLI's own command and flag specs (common/flags.h), so that a new command or flag completes
// without anyone editing a script. The Debian package installs both, generated at build time.
//
//   source <(trainctl completion bash)     # bash, for this shell
//   trainctl completion zsh > "${fpath[1]}/_trainctl"
//
// The scripts complete command names, the subcommands a command's usage spells out
// ("describe|cordon NODE": describe, cordon), each command's flags and the global ones, and the
// values of flags whose values are a fixed set (-o: table, json, yaml), files or directories.
// They complete no server-side names (job ids, nodes): that would need a call to the server.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"

namespace trainctl::cli {

// What the value of a flag completes to.
struct ValueCompletion {
  enum class Kind {
    kNone,   // the flag takes no value (a bool flag)
    kText,   // free text: nothing to offer
    kWords,  // one of `words`
    kFiles,  // a file name
    kDirs,   // a directory name
  };
  Kind kind = Kind::kText;
  std::vector<std::string> words;
};

// How `flag`'s value completes: the formats its help names for -o/--output, the job states for
// --state, the roles for --role, the queueing strategies for --strategy, files for a FILE value,
// directories for a DIR value, free text otherwise.
ValueCompletion CompleteFlagValue(const FlagSpec& flag);

// The fixed words of `command`'s positional arguments, one list per position, read from the
// leading words of its usage (CommandSpec::args) up to the first placeholder: "token
// create|list|revoke [ID]" gives {{"token"}, {"create", "list", "revoke"}}, "get|set PROJECT"
// gives {{"get", "set"}}, "ID" and "-f FILE" give none.
std::vector<std::vector<std::string>> PositionalWords(const CommandSpec& command);

// The spec of `trainctl completion SHELL`.
CommandSpec CompletionCommandSpec();

// The completion script for `shell` ("bash" or "zsh") of a trainctl whose global flags are
// `globals` and whose commands are `commands` (those of `trainctl --help`, help and completion
// included). INVALID_ARGUMENT naming the shells for any other shell.
absl::StatusOr<std::string> CompletionScript(absl::string_view shell,
                                             const std::vector<FlagSpec>& globals,
                                             const std::vector<CommandSpec>& commands);

}  // namespace trainctl::cli
