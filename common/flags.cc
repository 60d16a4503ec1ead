#include "common/flags.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

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

std::string FlagName(const FlagSpec& flag) { return absl::StrCat("--", flag.name); }

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
  *out = ParsedArgs();
  for (const FlagSpec& f : globals) out->defaults_[f.name] = f.default_value;
  const size_t command_index = FindCommandIndex(argv, globals, commands);
  const CommandSpec* command = nullptr;
  if (command_index < argv.size()) {
    command = FindCommand(commands, argv[command_index]);
    out->command_ = command->name;
    for (const FlagSpec& f : command->flags) out->defaults_[f.name] = f.default_value;
  }
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (i == command_index) continue;
    if (flags_done || !IsFlag(arg)) {
      if (command == nullptr || i < command_index) {
        return absl::InvalidArgumentError(absl::StrCat("unknown command \"", arg, "\""));
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
    if (flag == nullptr) {
      std::string where =
          command != nullptr ? absl::StrCat(" for \"", command->name, "\"") : std::string();
      return absl::InvalidArgumentError(absl::StrCat("unknown flag \"", arg, "\"", where));
    }
    std::string value = std::move(t.value);
    if (flag->kind == FlagSpec::Kind::kBool) {
      const std::string v = absl::AsciiStrToLower(value);
      if (!t.has_value || v == "true" || v == "1") {
        value = "true";
      } else if (v == "false" || v == "0") {
        value = "false";
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("flag ", FlagName(*flag), " takes true or false, got \"", value, "\""));
      }
    } else if (!t.has_value) {
      if (i + 1 >= argv.size() || i + 1 == command_index) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag ", FlagName(*flag), " needs a value (", flag->value_name, ")"));
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
  std::vector<std::pair<std::string, std::string>> rows;
  size_t width = 0;
  for (const FlagSpec& f : flags) {
    std::string left = f.short_name != 0 ? absl::StrCat("-", std::string(1, f.short_name), ", ")
                                         : std::string("    ");
    absl::StrAppend(&left, "--", f.name);
    if (f.kind != FlagSpec::Kind::kBool) absl::StrAppend(&left, " ", f.value_name);
    std::string right = f.help;
    if (!f.default_value.empty()) absl::StrAppend(&right, " (default ", f.default_value, ")");
    if (f.kind == FlagSpec::Kind::kList) absl::StrAppend(&right, " [repeatable]");
    width = std::max(width, left.size());
    rows.emplace_back(std::move(left), std::move(right));
  }
  std::string out;
  for (const auto& [left, right] : rows) {
    absl::StrAppend(&out, "  ", left, std::string(width - left.size() + 3, ' '), right, "\n");
  }
  return out;
}

}  // namespace trainctl
