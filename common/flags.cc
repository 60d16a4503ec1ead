#include "common/flags.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/flag_values.h"

namespace trainctl {
namespace {

const FlagSpec* LookUp(const std::vector<FlagSpec>& globals, const CommandSpec* command,
                       absl::string_view long_name, char short_name) {
  auto matches = [&](const FlagSpec& f) {
    return long_name.empty() ? (short_name != 0 && f.short_name == short_name)
                             : f.name == long_name;
  };
  if (command != nullptr) {
    for (const FlagSpec& f : command->flags) {
      if (matches(f)) return &f;
    }
  }
  for (const FlagSpec& f : globals) {
    if (matches(f)) return &f;
  }
  return nullptr;
}

bool IsFlag(const std::string& arg) { return arg.size() >= 2 && arg[0] == '-'; }

// A flag argument split up: "--name=value", "--name", "-xvalue", "-x=value" or "-x".
struct FlagToken {
  absl::string_view long_name;  // empty for a short flag
  char short_name = 0;
  std::string value;
  bool has_value = false;
};

// REQUIRES: IsFlag(arg).
FlagToken SplitFlag(const std::string& arg) {
  FlagToken t;
  if (absl::StartsWith(arg, "--")) {
    t.long_name = absl::string_view(arg).substr(2);
    size_t eq = t.long_name.find('=');
    if (eq != absl::string_view::npos) {
      t.value = std::string(t.long_name.substr(eq + 1));
      t.has_value = true;
      t.long_name = t.long_name.substr(0, eq);
    }
  } else {
    t.short_name = arg[1];
    if (arg.size() > 2) {
      t.value = arg.substr(arg[2] == '=' ? 3 : 2);
      t.has_value = true;
    }
  }
  return t;
}

// Where the command name is: the first argument that names a command and is not a flag or the
// value of a global flag. Command flags may come before it (`trainctl -o json get ID`).
// Returns argv.size() when there is none.
size_t FindCommandIndex(const std::vector<std::string>& argv, const std::vector<FlagSpec>& globals,
                        const std::vector<CommandSpec>& commands) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      return i + 1 < argv.size() && FindCommand(commands, argv[i + 1]) != nullptr ? i + 1
                                                                                  : argv.size();
    }
    if (IsFlag(arg)) {
      FlagToken t = SplitFlag(arg);
      const FlagSpec* flag = LookUp(globals, nullptr, t.long_name, t.short_name);
      if (flag != nullptr && flag->kind != FlagSpec::Kind::kBool && !t.has_value) ++i;
      continue;
    }
    if (FindCommand(commands, arg) != nullptr) return i;
  }
  return argv.size();
}

ArgsError MakeError(ArgsError::Kind kind, const std::string& arg, const FlagSpec* flag = nullptr,
                    std::string value = "") {
  return ArgsError{kind, arg, flag != nullptr ? *flag : FlagSpec(), std::move(value)};
}

// ParseArgs's message for `error`, in trainctl's words. `command`: the command, or nullptr.
std::string Describe(const ArgsError& error, const CommandSpec* command) {
  using Kind = ArgsError::Kind;
  switch (error.kind) {
    case Kind::kUnknownCommand:
      return absl::StrCat("unknown command \"", error.arg, "\"");
    case Kind::kUnexpectedArgument:
      return absl::StrCat("unexpected argument \"", error.arg, "\"");
    case Kind::kUnknownFlag:
      return absl::StrCat("unknown flag \"", error.arg, "\"",
                          command != nullptr ? absl::StrCat(" for \"", command->name, "\"") : "");
    case Kind::kMissingValue:
      return absl::StrCat("flag --", error.flag.name, " needs a value (", error.flag.value_name,
                          ")");
    case Kind::kBadBool:
      return std::string(
          BadFlagValue(absl::StrCat("--", error.flag.name), "true or false", error.value)
              .message());
    case Kind::kNone:
      break;
  }
  return "";
}

// Help text is laid out in two columns: "  FLAG   HELP". A flag wider than kMaxFlagWidth stands on
// a line of its own, so that one long name does not push every row's help to the right.
constexpr size_t kMaxFlagWidth = 28;
// Where FormatFlagGroups wraps the help.
constexpr size_t kLineWidth = 100;

struct FlagRow {
  std::string flag;  // "-o, --output FORMAT"
  std::string help;  // "Format (default table)"
};

std::vector<FlagRow> MakeRows(const std::vector<FlagSpec>& flags) {
  std::vector<FlagRow> rows;
  for (const FlagSpec& f : flags) {
    FlagRow row;
    row.flag = f.short_name != 0 ? absl::StrCat("-", std::string(1, f.short_name), ", ")
                                 : std::string("    ");
    absl::StrAppend(&row.flag, "--", f.name);
    if (f.kind != FlagSpec::Kind::kBool) absl::StrAppend(&row.flag, " ", f.value_name);
    row.help = f.help;
    if (!f.default_value.empty()) absl::StrAppend(&row.help, " (default ", f.default_value, ")");
    if (f.kind == FlagSpec::Kind::kList) absl::StrAppend(&row.help, " [repeatable]");
    rows.push_back(std::move(row));
  }
  return rows;
}

// The width of the flag column: that of the widest flag that fits kMaxFlagWidth.
size_t FlagWidth(const std::vector<FlagRow>& rows) {
  size_t width = 0;
  for (const FlagRow& row : rows) {
    if (row.flag.size() <= kMaxFlagWidth) width = std::max(width, row.flag.size());
  }
  return width;
}

// `text` broken at spaces into lines of at most `width` characters; a longer word stands alone.
std::vector<std::string> Wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty() || lines.empty()) lines.push_back(std::move(line));
  return lines;
}

// `rows` with their help starting `width` + 5 columns in; `wrap`: wrapped to kLineWidth.
std::string FormatRows(const std::vector<FlagRow>& rows, size_t width, bool wrap) {
  const std::string indent(width + 5, ' ');
  std::string out;
  for (const FlagRow& row : rows) {
    std::vector<std::string> help =
        wrap ? Wrap(row.help, kLineWidth - indent.size()) : std::vector<std::string>{row.help};
    size_t next = 0;
    if (row.flag.size() > width) {
      absl::StrAppend(&out, "  ", row.flag, "\n");
    } else {
      absl::StrAppend(&out, "  ", row.flag, std::string(width - row.flag.size() + 3, ' '),
                      help[next++], "\n");
    }
    for (; next < help.size(); ++next) absl::StrAppend(&out, indent, help[next], "\n");
  }
  return out;
}

}  // namespace

std::string ParsedArgs::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end() && !it->second.empty()) return it->second.back();
  auto d = defaults_.find(name);
  return d == defaults_.end() ? std::string() : d->second;
}

std::vector<std::string> ParsedArgs::GetAll(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>() : it->second;
}

absl::Status ParseArgs(const std::vector<std::string>& argv, const std::vector<FlagSpec>& globals,
                       const std::vector<CommandSpec>& commands, ParsedArgs* out) {
  using ErrorKind = ArgsError::Kind;
  *out = ParsedArgs();
  for (const FlagSpec& f : globals) out->defaults_[f.name] = f.default_value;
  const size_t command_index = FindCommandIndex(argv, globals, commands);
  const CommandSpec* command = nullptr;
  if (command_index < argv.size()) {
    command = FindCommand(commands, argv[command_index]);
    out->command_ = command->name;
    for (const FlagSpec& f : command->flags) out->defaults_[f.name] = f.default_value;
  }
  auto reject = [&](ArgsError error) {
    absl::Status status = absl::InvalidArgumentError(Describe(error, command));
    out->error_ = std::move(error);
    return status;
  };
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (i == command_index) continue;
    if (flags_done || !IsFlag(arg)) {
      if (commands.empty()) return reject(MakeError(ErrorKind::kUnexpectedArgument, arg));
      if (command == nullptr || i < command_index) {
        return reject(MakeError(ErrorKind::kUnknownCommand, arg));
      }
      out->args_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    FlagToken t = SplitFlag(arg);
    const FlagSpec* flag = LookUp(globals, command, t.long_name, t.short_name);
    // Short bool flags do not bundle: "-fx" is not "-f -x".
    if (flag != nullptr && flag->kind == FlagSpec::Kind::kBool && t.short_name != 0 &&
        t.has_value && arg[2] != '=') {
      flag = nullptr;
    }
    if (flag == nullptr) return reject(MakeError(ErrorKind::kUnknownFlag, arg));
    std::string value = std::move(t.value);
    if (flag->kind == FlagSpec::Kind::kBool) {
      const std::string v = absl::AsciiStrToLower(value);
      if (!t.has_value || v == "true" || v == "1") {
        value = "true";
      } else if (v == "false" || v == "0") {
        value = "false";
      } else {
        return reject(MakeError(ErrorKind::kBadBool, arg, flag, value));
      }
    } else if (!t.has_value) {
      if (i + 1 >= argv.size() || i + 1 == command_index) {
        return reject(MakeError(ErrorKind::kMissingValue, arg, flag));
      }
      value = argv[++i];
    }
    out->values_[flag->name].push_back(std::move(value));
  }
  return absl::OkStatus();
}

absl::Status CheckArgs(const ParsedArgs& parsed, const CommandSpec& command) {
  const int n = static_cast<int>(parsed.args().size());
  if (n < command.min_args) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", command.name, "\" needs ", command.args.empty() ? "arguments" : command.args));
  }
  if (n > command.max_args) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"",
                                                   parsed.args()[command.max_args], "\" for \"",
                                                   command.name, "\""));
  }
  return absl::OkStatus();
}

const CommandSpec* FindCommand(const std::vector<CommandSpec>& commands, absl::string_view name) {
  for (const CommandSpec& c : commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string FormatFlags(const std::vector<FlagSpec>& flags) {
  std::vector<FlagRow> rows = MakeRows(flags);
  return FormatRows(rows, FlagWidth(rows), /*wrap=*/false);
}

std::vector<FlagSpec> AllFlags(const std::vector<FlagGroup>& groups) {
  std::vector<FlagSpec> flags;
  for (const FlagGroup& g : groups) flags.insert(flags.end(), g.flags.begin(), g.flags.end());
  return flags;
}

std::string FormatFlagGroups(const std::vector<FlagGroup>& groups) {
  const size_t width = FlagWidth(MakeRows(AllFlags(groups)));
  std::string out;
  for (const FlagGroup& g : groups) {
    absl::StrAppend(&out, out.empty() ? "" : "\n", g.heading, "\n",
                    FormatRows(MakeRows(g.flags), width, /*wrap=*/true));
  }
  return out;
}

}  // namespace trainctl
