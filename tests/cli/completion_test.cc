// The pieces of the shell completion scripts (cli/completion.h): which words a command's usage
// fixes, what each flag's value completes to (and that the CLI accepts every word offered), and
// the shells CompletionScript knows. The scripts themselves run in completion_binary_test.cc.
#include "cli/completion.h"

#include <catch2/catch.hpp>

#include "cli/output.h"
#include "cli/quota_flags.h"
#include "cli/states.h"
#include "cli/token_view.h"
#include "tests/common/example_specs.h"

namespace trainctl::cli {
namespace {

using Words = std::vector<std::vector<std::string>>;

CommandSpec WithArgs(const std::string& args) { return {"c", args, "C", "", {}, 0, 3}; }

TEST_CASE("PositionalWords reads the fixed words of a usage up to the first placeholder",
          "[completion]") {
  CHECK(PositionalWords(WithArgs("describe|cordon|uncordon NODE")) ==
        Words{{"describe", "cordon", "uncordon"}});
  CHECK(PositionalWords(WithArgs("token create|list|revoke [ID]")) ==
        Words{{"token"}, {"create", "list", "revoke"}});
  CHECK(PositionalWords(WithArgs("get|set PROJECT")) == Words{{"get", "set"}});
  CHECK(PositionalWords(WithArgs("bash|zsh")) == Words{{"bash", "zsh"}});
  CHECK(PositionalWords(WithArgs("ID")).empty());
  CHECK(PositionalWords(WithArgs("[JOB_ID]")).empty());
  CHECK(PositionalWords(WithArgs("-f FILE")).empty());
  CHECK(PositionalWords(WithArgs("")).empty());
}

FlagSpec Flag(const std::string& name, const std::string& value_name, const std::string& help,
              FlagSpec::Kind kind = FlagSpec::Kind::kValue) {
  return {name, 0, kind, value_name, "", help};
}

TEST_CASE("output flags complete to the formats their help names, each of which the CLI parses",
          "[completion]") {
  ValueCompletion get = CompleteFlagValue(Flag("output", "FORMAT",
                                               "Output format: table, json "
                                               "or yaml (json: the proto's)"));
  CHECK(get.kind == ValueCompletion::Kind::kWords);
  CHECK(get.words == std::vector<std::string>{"table", "json", "yaml"});
  for (const std::string& w : get.words) CHECK(ParseOutputFormat(w).ok());

  ValueCompletion nodes =
      CompleteFlagValue(Flag("output", "FORMAT", "Output format: table, wide, json or yaml"));
  CHECK(nodes.words == std::vector<std::string>{"table", "wide", "json", "yaml"});
}

TEST_CASE("state, role and strategy flags complete to words the CLI accepts", "[completion]") {
  ValueCompletion states = CompleteFlagValue(Flag("state", "STATE", "Only jobs in this state"));
  CHECK(states.words == std::vector<std::string>{"queued", "pending", "running", "succeeded",
                                                 "failed", "cancelling", "cancelled"});
  CHECK(ParseJobStates(states.words).ok());

  ValueCompletion roles = CompleteFlagValue(Flag("role", "ROLE", "admin, operator, ..."));
  CHECK(roles.words == std::vector<std::string>{"admin", "operator", "member", "viewer"});
  for (const std::string& w : roles.words) CHECK(ParseRole(w).ok());

  std::vector<FlagSpec> quota_flags = QuotaSetFlags();
  const FlagSpec* strategy = nullptr;
  for (const FlagSpec& f : quota_flags) {
    if (f.name == "strategy") strategy = &f;
  }
  REQUIRE(strategy != nullptr);
  ValueCompletion strategies = CompleteFlagValue(*strategy);
  CHECK(strategies.words == std::vector<std::string>{"strict", "best-effort"});
  for (const std::string& w : strategies.words) {
    INFO(w);
    ParsedArgs args;
    REQUIRE(ParseArgs({"--strategy", w}, quota_flags, {}, &args).ok());
    v1::Quota quota;
    CHECK(OverlayQuotaFlags(args, &quota).ok());
  }
  for (const FlagSpec& f : quota_flags) {
    if (f.name != "reclaim" && f.name != "preempt-within-project") continue;
    ValueCompletion policies = CompleteFlagValue(f);
    CHECK(policies.words.size() == (f.name == "reclaim" ? 3u : 2u));
    for (const std::string& w : policies.words) {
      INFO(f.name << " " << w);
      ParsedArgs args;
      REQUIRE(ParseArgs({"--" + f.name, w}, quota_flags, {}, &args).ok());
      v1::Quota quota;
      CHECK(OverlayQuotaFlags(args, &quota).ok());
    }
  }
}

TEST_CASE("FILE values complete to files, DIR values to directories, bool flags take none",
          "[completion]") {
  CHECK(CompleteFlagValue(Flag("ca", "FILE", "CA")).kind == ValueCompletion::Kind::kFiles);
  CHECK(CompleteFlagValue(Flag("root", "DIR", "Root")).kind == ValueCompletion::Kind::kDirs);
  CHECK(CompleteFlagValue(Flag("follow", "", "Follow", FlagSpec::Kind::kBool)).kind ==
        ValueCompletion::Kind::kNone);
  CHECK(CompleteFlagValue(Flag("replica", "NAME", "Replica")).kind == ValueCompletion::Kind::kText);
}

TEST_CASE("CompletionScript knows bash and zsh and refuses other shells", "[completion]") {
  using testing::kCommands;
  using testing::kGlobals;
  absl::StatusOr<std::string> bash = CompletionScript("bash", kGlobals, kCommands);
  REQUIRE(bash.ok());
  CHECK_THAT(*bash, Catch::Contains("complete -F _trainctl trainctl\n"));
  absl::StatusOr<std::string> zsh = CompletionScript("zsh", kGlobals, kCommands);
  REQUIRE(zsh.ok());
  CHECK_THAT(*zsh, Catch::StartsWith("#compdef trainctl\n"));

  absl::StatusOr<std::string> fish = CompletionScript("fish", kGlobals, kCommands);
  CHECK(fish.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(fish.status().message() == "completion: unknown shell \"fish\"; use bash or zsh");

  std::vector<CommandSpec> odd = kCommands;
  odd.push_back({"say$(reboot)", "", "Odd", "", {}, 0, 0});
  absl::StatusOr<std::string> refused = CompletionScript("bash", kGlobals, odd);
  CHECK(refused.status().code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("\"say$(reboot)\""));
}

}  // namespace
}  // namespace trainctl::cli
