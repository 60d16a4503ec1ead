// `trainctl completion bash|zsh`: the scripts name every command and flag that `trainctl --help`
// and each `trainctl COMMAND --help` list, the shells accept them (bash -n, zsh -n when zsh is
// installed), and the bash script, run the way bash runs it on TAB, offers the right words.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/cli/fake_server.h"

namespace trainctl::cli {
namespace {

// Runs `command` with /bin/sh; its stdout and stderr together, and its exit status.
Result Shell(const std::string& command) { return Fixture::RunShell(command + " 2>&1"); }

// The script of `shell`, written to a file of its own; its path.
std::string WriteScript(const std::string& shell) {
  Result script = Fixture::RunBinary("completion " + shell);
  INFO(script.err);
  REQUIRE(script.exit_status == 0);
  const std::string path = absl::StrCat("/tmp/trainctl_completion_test_", getpid(), ".", shell);
  std::ofstream(path) << script.out;
  return path;
}

// The command names of `trainctl --help`.
std::vector<std::string> HelpCommands() {
  Result help = Fixture::RunBinary("--help");
  REQUIRE(help.exit_status == 0);
  std::vector<std::string> commands;
  bool in_list = false;
  for (absl::string_view line : absl::StrSplit(help.out, '\n')) {
    if (line == "Commands:") {
      in_list = true;
    } else if (line.empty()) {
      in_list = false;
    } else if (in_list) {
      commands.push_back(std::string(line.substr(2, line.find(' ', 2) - 2)));
    }
  }
  return commands;
}

// Every flag spelling (--long, -s) that `help` lists.
std::set<std::string> HelpFlags(const std::string& help) {
  std::set<std::string> flags;
  static const std::regex kFlag("(^|[ ,])(--[a-z0-9-]+|-[a-zA-Z])\\b");
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (!absl::StartsWith(line, "  -") && !absl::StartsWith(line, "      --")) continue;
    const std::string text(line.substr(0, line.find("   ", 6)));  // the flag column alone
    for (std::sregex_iterator it(text.begin(), text.end(), kFlag), end; it != end; ++it) {
      flags.insert((*it)[2]);
    }
  }
  return flags;
}

// Whether `word` stands in `script` as a word of its own, as the scripts write flags ("get -o",
// '-o+[...]', '*--state=[...]'): "--limit" must not pass for being the start of "--limit-x".
bool ContainsWord(const std::string& script, const std::string& word) {
  for (size_t at = script.find(word); at != std::string::npos; at = script.find(word, at + 1)) {
    const size_t end = at + word.size();
    if (at > 0 && std::string(" '\"(*").find(script[at - 1]) != std::string::npos &&
        end < script.size() && std::string(" =+[\"')\n").find(script[end]) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST_CASE("the completion scripts name every command and flag of trainctl's help",
          "[binary][completion]") {
  const std::vector<std::string> commands = HelpCommands();
  REQUIRE(commands.size() > 15);
  CHECK(std::find(commands.begin(), commands.end(), "completion") != commands.end());
  for (const char* shell : {"bash", "zsh"}) {
    INFO(shell);
    Result script = Fixture::RunBinary(absl::StrCat("completion ", shell));
    REQUIRE(script.exit_status == 0);
    for (const std::string& command : commands) {
      INFO(command);
      CHECK_THAT(script.out, Catch::Contains(command));
      Result help = Fixture::RunBinary(command + " --help");
      REQUIRE(help.exit_status == 0);
      const std::set<std::string> flags = HelpFlags(help.out);
      CHECK(flags.count("--help") == 1);
      for (const std::string& flag : flags) {
        INFO(flag);
        CHECK(ContainsWord(script.out, flag));
      }
    }
  }
}

TEST_CASE("bash -n accepts the bash script, zsh -n the zsh script", "[binary][completion]") {
  const std::string bash = WriteScript("bash");
  Result checked = Shell("bash -n " + bash);
  INFO(checked.out);
  CHECK(checked.exit_status == 0);
  std::remove(bash.c_str());

  if (Shell("command -v zsh").exit_status != 0) {
    WARN("zsh is not installed: the zsh script's syntax is not checked");
    return;
  }
  const std::string zsh = WriteScript("zsh");
  Result zsh_checked = Shell("zsh -n " + zsh);
  INFO(zsh_checked.out);
  CHECK(zsh_checked.exit_status == 0);
  // Loaded as a completion function it defines _trainctl and registers it with compdef.
  Result loaded = Shell(absl::StrCat("zsh -f -c 'autoload -Uz compinit && compinit -u -D && ",
                                     "source ", zsh, " && whence -w _trainctl'"));
  INFO(loaded.out);
  CHECK(loaded.exit_status == 0);
  CHECK_THAT(loaded.out, Catch::Contains("_trainctl: function"));
  std::remove(zsh.c_str());
}

TEST_CASE("the bash script offers commands, subcommands, flags and flag values",
          "[binary][completion]") {
  const std::string script = WriteScript("bash");
  // Completes the last word of `line` as bash does on TAB; the words offered, sorted.
  auto complete = [&script](const std::string& line) {
    const std::string run =
        absl::StrCat("bash -c 'source ", script, " && COMP_WORDS=(", line,
                     ") && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _trainctl && ",
                     "printf \"%s\\n\" \"${COMPREPLY[@]}\" | sort | tr \"\\n\" \" \"'");
    Result result = Shell(run);
    INFO(result.out);
    REQUIRE(result.exit_status == 0);
    return result.out;
  };
  CHECK_THAT(complete("trainctl \"\""), Catch::Contains("completion ") &&
                                            Catch::Contains("submit ") && Catch::Contains("wait "));
  CHECK(complete("trainctl --server 127.0.0.1:7070 li") == "list ");
  CHECK(complete("trainctl get j-1 -o \"\"") == "json table yaml ");
  CHECK(complete("trainctl nodes --output \"\"") == "json table wide yaml ");
  CHECK(complete("trainctl list --state=ru") == "--state=running ");
  CHECK(complete("trainctl node \"\"") ==
        "cordon delete describe drain maintenance revoke uncordon ");
  CHECK(complete("trainctl admin token \"\"") == "create list revoke ");
  CHECK(complete("trainctl completion \"\"") == "bash zsh ");
  CHECK(complete("trainctl help no") == "node nodes ");
  CHECK(complete("trainctl logs --f") == "--follow ");
  CHECK_THAT(complete("trainctl wait j-1 --"), Catch::Contains("--timeout ") &&
                                                   Catch::Contains("--server ") &&
                                                   !Catch::Contains("--follow"));
  std::remove(script.c_str());
}

}  // namespace
}  // namespace trainctl::cli
