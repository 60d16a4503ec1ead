// Command-line parsing shared by trainctl, trainctl-agent and trainctld:
// `PROGRAM [global flags] [COMMAND [args and flags]]`.
//
// Flags may come before or after positional arguments, in the forms `--name value`,
// `--name=value`, `-n value` and `-nvalue`; a bool flag takes no value (`--follow`) unless given
// with `=` (`--follow=false`). `--` ends the flags; a lone `-` is a positional argument. Global
// flags are accepted anywhere; a command's own flags only after the command name. A program
// without commands (the daemons) passes none, and then accepts no positional argument.
//
//   ParsedArgs parsed;
//   absl::Status status = ParseArgs({"get", "j-1", "-o", "json"}, globals, commands, &parsed);
//   parsed.command() == "get"; parsed.args() == {"j-1"}; parsed.Get("output") == "json"
//
// The same specs lay out help text: FormatFlags for one table of flags, FormatFlagGroups for a
// program that lists its flags under headings.
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
  std::string help;           // one sentence or a few; usage text lays it out
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

// What ParseArgs rejected, as data, for a program that words its own messages.
struct ArgsError {
  enum class Kind {
    kNone,                // nothing was rejected
    kUnknownCommand,      // `arg` is a positional argument before any command
    kUnexpectedArgument,  // `arg` is a positional argument and the program has no commands
    kUnknownFlag,         // `arg` is no flag of the command (if any) nor a global one
    kMissingValue,        // `flag` takes a value and none follows
    kBadBool,             // `flag` takes true or false (or 1 or 0), and was given `value`
  };
  Kind kind = Kind::kNone;
  std::string arg;    // the argument at fault as given: "stray", "--bogus=1", "-fx", "--limit"
  FlagSpec flag;      // kMissingValue, kBadBool: the flag's spec
  std::string value;  // kBadBool: the value given
};

// The result of ParseArgs: the command, its positional arguments and the flags seen.
class ParsedArgs {
 public:
  // The command name, or empty when none was given.
  const std::string& command() const { return command_; }
  const std::vector<std::string>& args() const { return args_; }
  // After ParseArgs failed: what it rejected. Kind::kNone after it succeeded.
  const ArgsError& error() const { return error_; }

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
  ArgsError error_;
};

// Parses `argv` (without the program name). On error (unknown flag or command, unexpected
// argument, missing value, a bool flag given neither true nor false), returns INVALID_ARGUMENT
// with a message in trainctl's words (`unknown flag "--bogus" for "list"`); `*out` then still
// holds what was parsed so far, including the command when it was seen, so the caller can point
// at the right help, and out->error() says what was rejected.
// Positional argument counts are not checked here (so that `get --help` works): see CheckArgs.
absl::Status ParseArgs(const std::vector<std::string>& argv, const std::vector<FlagSpec>& globals,
                       const std::vector<CommandSpec>& commands, ParsedArgs* out);

// INVALID_ARGUMENT when the number of positional arguments does not fit `command`.
absl::Status CheckArgs(const ParsedArgs& parsed, const CommandSpec& command);

// The command named `name`, or nullptr.
const CommandSpec* FindCommand(const std::vector<CommandSpec>& commands, absl::string_view name);

// The flags as a table for help text, one row a flag: "  -o, --output FORMAT   Format (default
// table)", the help of every row starting in one column. The help is not wrapped; a flag wider
// than 28 characters stands on a line of its own, its help on the next.
std::string FormatFlags(const std::vector<FlagSpec>& flags);

// Flags listed under one heading of a help text.
struct FlagGroup {
  std::string heading;  // a line of its own above the flags, e.g. "Required:"
  std::vector<FlagSpec> flags;
};

// Every flag of `groups`, in order: what ParseArgs takes.
std::vector<FlagSpec> AllFlags(const std::vector<FlagGroup>& groups);

// Each group's heading and flag table, a blank line between groups. Rows are laid out as in
// FormatFlags, in one column for all the groups, and the help is wrapped to fit 100 columns.
std::string FormatFlagGroups(const std::vector<FlagGroup>& groups);

}  // namespace trainctl
