// Command-line parsing shared by trainctl's programs: `PROGRAM [global flags] COMMAND [args and
// flags]`.
//
// Flags may come before or after positional arguments, in the forms `--name value`,
// `--name=value`, `-n value` and `-nvalue`; a bool flag takes no value (`--follow`) unless given
// with `=` (`--follow=false`). `--` ends the flags; a lone `-` is a positional argument. Global
// flags are accepted anywhere; a command's own flags only after the command name.
//
//   ParsedArgs parsed;
//   absl::Status status = ParseArgs({"get", "j-1", "-o", "json"}, globals, commands, &parsed);
//   parsed.command == "get"; parsed.args == {"j-1"}; parsed.Get("output") == "json"
//
// Pure functions; thread-compatible.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace trainctl {

struct FlagSpec {
  enum class Kind {
    kBool,   // present or not; "--name=false" to turn off
    kValue,  // one value; the last one given wins
    kList,   // repeatable; every value is kept in order
  };
  std::string name;     // long name, without "--"
  char short_name = 0;  // single-letter alias, or 0 for none
  Kind kind = Kind::kValue;
  std::string value_name;     // placeholder in usage text, e.g. "FORMAT"
  std::string default_value;  // what Get() returns when the flag is absent; shown in usage
  std::string help;           // one line
};

struct CommandSpec {
  std::string name;     // "get"
  std::string args;     // positional arguments in usage text, e.g. "ID"
  std::string summary;  // one line, for the command list
  std::string details;  // optional paragraph for the command's own help
  std::vector<FlagSpec> flags;
  int min_args = 0;  // positional arguments required
  int max_args = 0;  // at most this many
};

// The result of ParseArgs: the command, its positional arguments and the flags seen.
class ParsedArgs {
 public:
  // The command name, or empty when none was given.
  const std::string& command() const { return command_; }
  const std::vector<std::string>& args() const { return args_; }

  // Whether the flag (by long name) appeared at all.
  bool IsSet(const std::string& name) const { return values_.count(name) > 0; }
  // The last value given, else the flag's default ("" for an unknown name).
  std::string Get(const std::string& name) const;
  // Every value given, in order; empty when absent.
  std::vector<std::string> GetAll(const std::string& name) const;
  // For bool flags: true when given and not turned off with =false.
  bool GetBool(const std::string& name) const { return Get(name) == "true"; }

 private:
  friend absl::Status ParseArgs(const std::vector<std::string>&, const std::vector<FlagSpec>&,
                                const std::vector<CommandSpec>&, ParsedArgs*);

  std::string command_;
  std::vector<std::string> args_;
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, std::string> defaults_;
};

// Parses `argv` (without the program name). On error (unknown flag or command, missing value),
// returns INVALID_ARGUMENT; `*out` then still holds what was parsed so far, including the
// command when it was seen, so the caller can point at the right help.
// Positional argument counts are not checked here (so that `get --help` works): see CheckArgs.
absl::Status ParseArgs(const std::vector<std::string>& argv, const std::vector<FlagSpec>& globals,
                       const std::vector<CommandSpec>& commands, ParsedArgs* out);

// INVALID_ARGUMENT when the number of positional arguments does not fit `command`.
absl::Status CheckArgs(const ParsedArgs& parsed, const CommandSpec& command);

// The command named `name`, or nullptr.
const CommandSpec* FindCommand(const std::vector<CommandSpec>& commands, absl::string_view name);

// The flags as a table for help text, one row a flag: "  -o, --output FORMAT   Format (default
// table)", the help of every row starting in one column.
std::string FormatFlags(const std::vector<FlagSpec>& flags);

}  // namespace trainctl
