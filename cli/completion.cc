#include "cli/completion.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

// The names of an enum's values as the CLI accepts them: lower case, without `prefix`, without
// the UNSPECIFIED value.
std::vector<std::string> EnumWords(const google::protobuf::EnumDescriptor* descriptor,
                                   absl::string_view prefix) {
  std::vector<std::string> words;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    absl::string_view name = absl::StripPrefix(descriptor->value(i)->name(), prefix);
    if (name == "UNSPECIFIED") continue;
    words.push_back(absl::AsciiStrToLower(name));
  }
  return words;
}

// The spellings of a flag: "-o --output", or "--output" without a short name.
std::vector<std::string> Spellings(const FlagSpec& flag) {
  std::vector<std::string> out;
  if (flag.short_name != 0) out.push_back(std::string("-") + flag.short_name);
  out.push_back("--" + flag.name);
  return out;
}

// Whether `word` can stand unquoted in either shell's script: command, flag and value names.
bool IsPlainWord(absl::string_view word) {
  if (word.empty()) return false;
  for (char c : word) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

// INTERNAL when a name the scripts would carry unquoted is not a plain word.
absl::Status CheckNames(const std::vector<FlagSpec>& globals,
                        const std::vector<CommandSpec>& commands) {
  std::vector<std::string> names;
  auto add_flags = [&names](const std::vector<FlagSpec>& flags) {
    for (const FlagSpec& f : flags) {
      names.push_back(f.name);
      for (const std::string& w : CompleteFlagValue(f).words) names.push_back(w);
    }
  };
  add_flags(globals);
  for (const CommandSpec& c : commands) {
    names.push_back(c.name);
    add_flags(c.flags);
    for (const std::vector<std::string>& level : PositionalWords(c)) {
      names.insert(names.end(), level.begin(), level.end());
    }
  }
  for (const std::string& name : names) {
    if (!IsPlainWord(name)) {
      return absl::InternalError(absl::StrCat("cannot complete \"", name,
                                              "\": a command, flag or value name must be letters, "
                                              "digits, '-', '_' or '.'"));
    }
  }
  return absl::OkStatus();
}

// What a command's positional argument at `position` completes to: its fixed words, or the
// command names for `help [COMMAND]`.
std::vector<std::vector<std::string>> PositionalLevels(const CommandSpec& command,
                                                       const std::vector<CommandSpec>& commands) {
  if (command.args == "[COMMAND]" || command.args == "COMMAND") {
    std::vector<std::string> names;
    for (const CommandSpec& c : commands) names.push_back(c.name);
    return {names};
  }
  return PositionalWords(command);
}

// ---- bash ----

// `case` patterns matching every spelling of `flag` after command `command` ("get -o" | "get
// --output"), or after any command for a global flag (*" --server").
std::string BashPattern(const std::string& command, const FlagSpec& flag) {
  std::vector<std::string> alternatives;
  for (const std::string& s : Spellings(flag)) {
    alternatives.push_back(command.empty() ? absl::StrCat("*\" ", s, "\"")
                                           : absl::StrCat("\"", command, " ", s, "\""));
  }
  return absl::StrJoin(alternatives, " | ");
}

// The statement that fills COMPREPLY with the values of `flag` starting with "$3".
std::string BashValues(const ValueCompletion& values) {
  switch (values.kind) {
    case ValueCompletion::Kind::kWords:
      return absl::StrCat("COMPREPLY=($(compgen -W \"", absl::StrJoin(values.words, " "),
                          "\" -- \"$3\"))");
    case ValueCompletion::Kind::kFiles:
      return "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$3\"))";
    case ValueCompletion::Kind::kDirs:
      return "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$3\"))";
    case ValueCompletion::Kind::kNone:
    case ValueCompletion::Kind::kText:
      break;
  }
  return "COMPREPLY=()";
}

std::string BashScript(const std::vector<FlagSpec>& globals,
                       const std::vector<CommandSpec>& commands) {
  std::string takes_value;  // case arms of _trainctl_takes_value
  std::string values;       // case arms of _trainctl_values
  auto add_value_flags = [&](const std::string& command, const std::vector<FlagSpec>& flags) {
    for (const FlagSpec& f : flags) {
      ValueCompletion v = CompleteFlagValue(f);
      if (v.kind == ValueCompletion::Kind::kNone) continue;
      absl::StrAppend(&takes_value, "    ", BashPattern(command, f), ") return 0 ;;\n");
      absl::StrAppend(&values, "    ", BashPattern(command, f), ") ", BashValues(v), " ;;\n");
    }
  };
  for (const CommandSpec& c : commands) add_value_flags(c.name, c.flags);
  add_value_flags("", globals);

  std::vector<std::string> global_words;
  for (const FlagSpec& f : globals) {
    for (const std::string& s : Spellings(f)) global_words.push_back(s);
  }
  std::string command_flags;  // case arms: a command's own flags
  std::string positionals;    // case arms: "COMMAND POSITION"
  std::vector<std::string> command_names;
  for (const CommandSpec& c : commands) {
    command_names.push_back(c.name);
    std::vector<std::string> words;
    for (const FlagSpec& f : c.flags) {
      for (const std::string& s : Spellings(f)) words.push_back(s);
    }
    if (!words.empty()) {
      absl::StrAppend(&command_flags, "      ", c.name, ") flags+=\" ", absl::StrJoin(words, " "),
                      "\" ;;\n");
    }
    std::vector<std::vector<std::string>> levels = PositionalLevels(c, commands);
    for (size_t i = 0; i < levels.size(); ++i) {
      absl::StrAppend(&positionals, "    \"", c.name, " ", i, "\") COMPREPLY=($(compgen -W \"",
                      absl::StrJoin(levels[i], " "), "\" -- \"$cur\")) ;;\n");
    }
  }

  return absl::StrCat(
      "# bash completion for trainctl, generated by `trainctl completion bash` from its command\n"
      "# and flag specs. The Debian package installs it as\n"
      "# /usr/share/bash-completion/completions/trainctl; for one shell:\n"
      "#   source <(trainctl completion bash)\n"
      "\n"
      "# _trainctl_takes_value COMMAND FLAG: whether FLAG, as typed after COMMAND, takes a value.\n"
      "_trainctl_takes_value() {\n"
      "  case \"$1 $2\" in\n",
      takes_value,
      "  esac\n"
      "  return 1\n"
      "}\n"
      "\n"
      "# _trainctl_values COMMAND FLAG PREFIX: sets COMPREPLY to the values of FLAG that start\n"
      "# with PREFIX.\n"
      "_trainctl_values() {\n"
      "  COMPREPLY=()\n"
      "  case \"$1 $2\" in\n",
      values,
      "  esac\n"
      "}\n"
      "\n"
      "_trainctl() {\n"
      "  local cur words cword\n"
      "  if declare -F _get_comp_words_by_ref >/dev/null; then\n"
      "    # bash-completion's: keeps HOST:PORT and --flag=value in one word.\n"
      "    _get_comp_words_by_ref -n =: cur words cword\n"
      "  else\n"
      "    words=(\"${COMP_WORDS[@]}\") cword=$COMP_CWORD cur=${COMP_WORDS[COMP_CWORD]}\n"
      "  fi\n"
      "  COMPREPLY=()\n"
      "  # The command is the first positional argument; values of flags are not positional.\n"
      "  local cmd=\"\" npos=0 i word skip=0 flags_ended=0\n"
      "  for ((i = 1; i < cword; i++)); do\n"
      "    word=${words[i]}\n"
      "    if ((skip)); then\n"
      "      skip=0\n"
      "      continue\n"
      "    fi\n"
      "    if ((!flags_ended)); then\n"
      "      case \"$word\" in\n"
      "        --) flags_ended=1; continue ;;\n"
      "        -*=*) continue ;;\n"
      "        -?*) _trainctl_takes_value \"$cmd\" \"$word\" && skip=1; continue ;;\n"
      "      esac\n"
      "    fi\n"
      "    if [[ -z $cmd ]]; then cmd=$word; else npos=$((npos + 1)); fi\n"
      "  done\n"
      "  if ((skip)); then\n"
      "    _trainctl_values \"$cmd\" \"${words[cword - 1]}\" \"$cur\"\n"
      "    return 0\n"
      "  fi\n"
      "  if ((!flags_ended)) && [[ $cur == -* ]]; then\n"
      "    if [[ $cur == -*=* ]] && _trainctl_takes_value \"$cmd\" \"${cur%%=*}\"; then\n"
      "      _trainctl_values \"$cmd\" \"${cur%%=*}\" \"${cur#*=}\"\n"
      "      COMPREPLY=(\"${COMPREPLY[@]/#/${cur%%=*}=}\")\n"
      "      return 0\n"
      "    fi\n"
      "    local flags=\"",
      absl::StrJoin(global_words, " "),
      "\"\n"
      "    case \"$cmd\" in\n",
      command_flags,
      "    esac\n"
      "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
      "    return 0\n"
      "  fi\n"
      "  if [[ -z $cmd ]]; then\n"
      "    COMPREPLY=($(compgen -W \"",
      absl::StrJoin(command_names, " "),
      "\" -- \"$cur\"))\n"
      "    return 0\n"
      "  fi\n"
      "  case \"$cmd $npos\" in\n",
      positionals,
      "  esac\n"
      "  return 0\n"
      "}\n"
      "complete -F _trainctl trainctl\n");
}

// ---- zsh ----

// `text` inside a single-quoted word of the script.
std::string ZshQuote(absl::string_view text) { return absl::StrReplaceAll(text, {{"'", "'\\''"}}); }

// A help text as a one-line description inside an _arguments spec's [...] or after the colon of
// a _describe entry: its first line, at most 80 characters, brackets and backslashes escaped.
std::string ZshDescription(absl::string_view help) {
  std::string line(help.substr(0, help.find('\n')));
  if (line.size() > 80) {
    size_t cut = line.rfind(' ', 77);
    line = absl::StrCat(line.substr(0, cut == std::string::npos ? 77 : cut), "...");
  }
  return ZshQuote(absl::StrReplaceAll(line, {{"\\", "\\\\"}, {"[", "\\["}, {"]", "\\]"}}));
}

// The _arguments action of a flag's value.
std::string ZshAction(const ValueCompletion& values) {
  switch (values.kind) {
    case ValueCompletion::Kind::kWords:
      return absl::StrCat("(", absl::StrJoin(values.words, " "), ")");
    case ValueCompletion::Kind::kFiles:
      return "_files";
    case ValueCompletion::Kind::kDirs:
      return "_files -/";
    case ValueCompletion::Kind::kNone:
    case ValueCompletion::Kind::kText:
      break;
  }
  return " ";
}

// The _arguments specs of `flags`, one quoted word each, `indent` spaces before each.
std::string ZshFlagSpecs(const std::vector<FlagSpec>& flags, int indent) {
  std::string out;
  const std::string pad(indent, ' ');
  for (const FlagSpec& f : flags) {
    ValueCompletion v = CompleteFlagValue(f);
    const std::string repeat = f.kind == FlagSpec::Kind::kList ? "*" : "";
    const std::string desc = ZshDescription(f.help);
    std::string value;
    if (v.kind != ValueCompletion::Kind::kNone) {
      std::string message = f.value_name.empty() ? "VALUE" : f.value_name;
      value = absl::StrCat(":", ZshQuote(absl::StrReplaceAll(message, {{":", "\\:"}})), ":",
                           ZshAction(v));
    }
    const bool takes_value = v.kind != ValueCompletion::Kind::kNone;
    if (f.short_name != 0) {
      absl::StrAppend(&out, pad, "'", repeat, "-", std::string(1, f.short_name),
                      takes_value ? "+" : "", "[", desc, "]", value, "'\n");
    }
    absl::StrAppend(&out, pad, "'", repeat, "--", f.name, takes_value ? "=" : "", "[", desc, "]",
                    value, "'\n");
  }
  return out;
}

std::string ZshScript(const std::vector<FlagSpec>& globals,
                      const std::vector<CommandSpec>& commands) {
  std::string command_list;
  std::string command_cases;
  for (const CommandSpec& c : commands) {
    absl::StrAppend(&command_list, "        '", c.name, ":", ZshDescription(c.summary), "'\n");
    std::string positional;
    std::vector<std::vector<std::string>> levels = PositionalLevels(c, commands);
    for (size_t i = 0; i < levels.size(); ++i) {
      absl::StrAppend(&positional, "            '", i + 1, ":", i == 0 ? "subcommand" : "argument",
                      ":(", absl::StrJoin(levels[i], " "), ")'\n");
    }
    if (c.max_args > static_cast<int>(levels.size())) {
      absl::StrAppend(&positional, "            '*: : '\n");
    }
    absl::StrAppend(&command_cases, "        ", c.name,
                    ")\n"
                    "          _arguments -S \"${globals[@]}\" \\\n",
                    ZshFlagSpecs(c.flags, 12), positional,
                    "            && ret=0\n"
                    "          ;;\n");
  }
  // Each spec line ends in " \" inside the _arguments calls.
  auto continue_lines = [](std::string text) {
    return absl::StrReplaceAll(text, {{"'\n", "' \\\n"}});
  };
  return absl::StrCat(
      "#compdef trainctl\n"
      "# zsh completion for trainctl, generated by `trainctl completion zsh` from its command and\n"
      "# flag specs. The Debian package installs it as "
      "/usr/share/zsh/vendor-completions/_trainctl;\n"
      "# elsewhere put it in a directory of $fpath as _trainctl, or for one shell (after "
      "compinit):\n"
      "#   source <(trainctl completion zsh)\n"
      "\n"
      "_trainctl() {\n"
      "  local curcontext=\"$curcontext\" state line ret=1\n"
      "  local -a globals\n"
      "  globals=(\n",
      ZshFlagSpecs(globals, 4),
      "  )\n"
      "  _arguments -C -S \"${globals[@]}\" '1: :->command' '*:: :->args' && ret=0\n"
      "  case $state in\n"
      "    command)\n"
      "      local -a commands\n"
      "      commands=(\n",
      command_list,
      "      )\n"
      "      _describe -t commands 'trainctl command' commands && ret=0\n"
      "      ;;\n"
      "    args)\n"
      "      curcontext=\"${curcontext%:*:*}:trainctl-$words[1]:\"\n"
      "      case $words[1] in\n",
      continue_lines(command_cases),
      "      esac\n"
      "      ;;\n"
      "  esac\n"
      "  return ret\n"
      "}\n"
      "\n"
      "if [[ $funcstack[1] == _trainctl ]]; then\n"
      "  _trainctl \"$@\"\n"
      "else\n"
      "  compdef _trainctl trainctl\n"
      "fi\n");
}

}  // namespace

ValueCompletion CompleteFlagValue(const FlagSpec& flag) {
  ValueCompletion out;
  if (flag.kind == FlagSpec::Kind::kBool) {
    out.kind = ValueCompletion::Kind::kNone;
    return out;
  }
  if (flag.name == "output") {
    // The formats the flag's help names: every command takes table, json and yaml; nodes wide too.
    for (const char* format : {"table", "wide", "json", "yaml"}) {
      for (absl::string_view word : absl::StrSplit(flag.help, absl::ByAnyChar(" ,:;()"))) {
        if (word == format) {
          out.words.push_back(format);
          break;
        }
      }
    }
  } else if (flag.name == "state") {
    out.words = EnumWords(v1::JobState_descriptor(), "JOB_STATE_");
  } else if (flag.name == "role") {
    out.words = EnumWords(v1::Role_descriptor(), "ROLE_");
  } else if (flag.name == "strategy") {
    out.words = {"strict", "best-effort"};  // quota_flags.cc's spellings of the two strategies
  } else if (flag.name == "reclaim") {
    out.words = {"never", "lower-priority", "any"};  // quota_flags.cc's spellings
  } else if (flag.name == "preempt-within-project") {
    out.words = {"never", "lower-priority"};
  } else if (flag.value_name == "FILE") {
    out.kind = ValueCompletion::Kind::kFiles;
    return out;
  } else if (flag.value_name == "DIR") {
    out.kind = ValueCompletion::Kind::kDirs;
    return out;
  }
  out.kind = out.words.empty() ? ValueCompletion::Kind::kText : ValueCompletion::Kind::kWords;
  return out;
}

std::vector<std::vector<std::string>> PositionalWords(const CommandSpec& command) {
  std::vector<std::vector<std::string>> levels;
  for (absl::string_view word : absl::StrSplit(command.args, ' ', absl::SkipEmpty())) {
    // A placeholder (ID, [ID], -f FILE) ends the fixed words.
    if (!absl::ascii_islower(static_cast<unsigned char>(word[0]))) break;
    levels.push_back(absl::StrSplit(word, '|', absl::SkipEmpty()));
  }
  return levels;
}

CommandSpec CompletionCommandSpec() {
  return {"completion",
          "bash|zsh",
          "Print the shell completion script for bash or zsh",
          "The Debian package installs both. For the current shell:\n"
          "  source <(trainctl completion bash)\n"
          "  source <(trainctl completion zsh)      # zsh, after compinit\n"
          "For good: save the bash script as ~/.local/share/bash-completion/completions/trainctl,\n"
          "the zsh one as _trainctl in a directory of $fpath.",
          {},
          1,
          1};
}

absl::StatusOr<std::string> CompletionScript(absl::string_view shell,
                                             const std::vector<FlagSpec>& globals,
                                             const std::vector<CommandSpec>& commands) {
  if (shell != "bash" && shell != "zsh") {
    return absl::InvalidArgumentError(
        absl::StrCat("completion: unknown shell \"", shell, "\"; use bash or zsh"));
  }
  if (absl::Status s = CheckNames(globals, commands); !s.ok()) return s;
  return shell == "bash" ? BashScript(globals, commands) : ZshScript(globals, commands);
}

}  // namespace trainctl::cli
