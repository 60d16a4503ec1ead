#include "common/flags.h"

#include <catch2/catch.hpp>

#include "tests/common/example_specs.h"

namespace trainctl {
namespace {

using Kind = FlagSpec::Kind;

using testing::kCommands;
using testing::kGlobals;

ParsedArgs Parse(const std::vector<std::string>& argv) {
  ParsedArgs parsed;
  absl::Status status = ParseArgs(argv, kGlobals, kCommands, &parsed);
  INFO(status.ToString());
  REQUIRE(status.ok());
  return parsed;
}

std::string ErrorOf(const std::vector<std::string>& argv) {
  ParsedArgs parsed;
  absl::Status status = ParseArgs(argv, kGlobals, kCommands, &parsed);
  REQUIRE(status.code() == absl::StatusCode::kInvalidArgument);
  return std::string(status.message());
}

TEST_CASE("ParseArgs accepts flags before and after positional arguments", "[flags]") {
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {"logs", "j-1", "-f", "--restart", "2"},
           {"logs", "-f", "--restart=2", "j-1"},
           {"--server", "h:1", "logs", "--restart", "2", "j-1", "--follow"},
           {"-f", "logs", "--restart", "2", "j-1"},  // command flags before the command
       }) {
    INFO(argv[0] << " " << argv[1] << " " << argv[2]);
    ParsedArgs p = Parse(argv);
    CHECK(p.command() == "logs");
    CHECK(p.args() == std::vector<std::string>{"j-1"});
    CHECK(p.GetBool("follow"));
    CHECK(p.Get("restart") == "2");
  }
}

TEST_CASE("ParseArgs gives defaults, the last value and every list value", "[flags]") {
  ParsedArgs p = Parse({"list"});
  CHECK(p.Get("limit") == "100");
  CHECK(p.Get("output") == "table");
  CHECK_FALSE(p.IsSet("limit"));
  CHECK(p.Get("server").empty());
  CHECK(p.GetAll("state").empty());

  p = Parse({"list", "--state", "running", "--state=queued,failed", "-ojson", "--limit", "5",
             "--limit", "7", "--server=a:1"});
  CHECK(p.GetAll("state") == std::vector<std::string>{"running", "queued,failed"});
  CHECK(p.Get("output") == "json");
  CHECK(p.Get("limit") == "7");
  CHECK(p.Get("server") == "a:1");
}

TEST_CASE("ParseArgs gives one short name a meaning per command", "[flags]") {
  ParsedArgs submit = Parse({"submit", "-f", "-"});
  CHECK(submit.Get("filename") == "-");
  CHECK(submit.args().empty());
  ParsedArgs logs = Parse({"logs", "-f", "j-1"});
  CHECK(logs.GetBool("follow"));
  CHECK(logs.args() == std::vector<std::string>{"j-1"});
}

TEST_CASE("ParseArgs takes values that look like flags and stops at --", "[flags]") {
  ParsedArgs p = Parse({"logs", "--restart", "-1", "--", "-weird-id"});
  CHECK(p.Get("restart") == "-1");
  CHECK(p.args() == std::vector<std::string>{"-weird-id"});
  p = Parse({"logs", "j", "--follow=false"});
  CHECK(p.IsSet("follow"));
  CHECK_FALSE(p.GetBool("follow"));
}

TEST_CASE("ParseArgs reports usage errors", "[flags]") {
  struct Case {
    std::vector<std::string> argv;
    const char* error;
  };
  const Case cases[] = {
      {{"frobnicate"}, "unknown command \"frobnicate\""},
      {{"list", "--bogus"}, "unknown flag \"--bogus\" for \"list\""},
      {{"--bogus"}, "unknown flag \"--bogus\""},
      {{"list", "--limit"}, "flag --limit needs a value (N)"},
      {{"-o", "list"}, "flag --output needs a value (FORMAT)"},
      {{"logs", "--follow=maybe"}, "--follow must be true or false, got \"maybe\""},
      {{"logs", "-fx"}, "unknown flag \"-fx\" for \"logs\""},
      {{"stray", "list"}, "unknown command \"stray\""},
  };
  for (const Case& c : cases) {
    INFO(c.argv[0]);
    CHECK(ErrorOf(c.argv) == c.error);
  }
  // The command is known even when a later flag is wrong, to point at its help.
  ParsedArgs parsed;
  CHECK_FALSE(ParseArgs({"list", "--bogus"}, kGlobals, kCommands, &parsed).ok());
  CHECK(parsed.command() == "list");
}

TEST_CASE("ParseArgs leaves an empty command when there is none", "[flags]") {
  ParsedArgs p = Parse({"--help"});
  CHECK(p.command().empty());
  CHECK(p.GetBool("help"));
  p = Parse({});
  CHECK(p.command().empty());
}

TEST_CASE("CheckArgs counts positional arguments", "[flags]") {
  const CommandSpec& logs = kCommands[2];
  CHECK(CheckArgs(Parse({"logs", "j-1"}), logs).ok());
  CHECK(CheckArgs(Parse({"logs"}), logs).message() == "\"logs\" needs ID");
  CHECK(CheckArgs(Parse({"logs", "a", "b"}), logs).message() ==
        "unexpected argument \"b\" for \"logs\"");
}

TEST_CASE("ParseArgs says what it rejected, for programs that word their own messages", "[flags]") {
  using ErrorKind = ArgsError::Kind;
  struct Case {
    std::vector<std::string> argv;
    ErrorKind kind;
    const char* arg;
    const char* flag;
    const char* value;
  };
  const Case cases[] = {
      {{"list"}, ErrorKind::kNone, "", "", ""},
      {{"frobnicate"}, ErrorKind::kUnknownCommand, "frobnicate", "", ""},
      {{"list", "--bogus=1"}, ErrorKind::kUnknownFlag, "--bogus=1", "", ""},
      {{"list", "--limit"}, ErrorKind::kMissingValue, "--limit", "limit", ""},
      {{"-o", "list"}, ErrorKind::kMissingValue, "-o", "output", ""},
      {{"logs", "--follow=maybe"}, ErrorKind::kBadBool, "--follow=maybe", "follow", "maybe"},
  };
  for (const Case& c : cases) {
    INFO(c.argv.back());
    ParsedArgs parsed;
    CHECK(ParseArgs(c.argv, kGlobals, kCommands, &parsed).ok() == (c.kind == ErrorKind::kNone));
    CHECK(parsed.error().kind == c.kind);
    CHECK(parsed.error().arg == c.arg);
    CHECK(parsed.error().flag.name == c.flag);
    CHECK(parsed.error().value == c.value);
  }
}

TEST_CASE("ParseArgs without commands takes flags only", "[flags]") {
  ParsedArgs parsed;
  REQUIRE(ParseArgs({"--server", "a:1", "-h"}, kGlobals, {}, &parsed).ok());
  CHECK(parsed.command().empty());
  CHECK(parsed.Get("server") == "a:1");
  CHECK(parsed.GetBool("help"));

  struct Case {
    std::vector<std::string> argv;
    const char* error;
  };
  const Case cases[] = {
      {{"stray"}, "unexpected argument \"stray\""},
      {{"--server=a:1", "--", "-x"}, "unexpected argument \"-x\""},
      {{"--bogus"}, "unknown flag \"--bogus\""},
      {{"--server"}, "flag --server needs a value (HOST:PORT)"},
  };
  for (const Case& c : cases) {
    INFO(c.argv[0]);
    CHECK(ParseArgs(c.argv, kGlobals, {}, &parsed).message() == c.error);
  }
  CHECK(parsed.error().kind == ArgsError::Kind::kMissingValue);
}

TEST_CASE("FormatFlags puts a flag too wide for the column on a line of its own", "[flags]") {
  const std::vector<FlagSpec> flags = {
      {"inject-launch-failures", 0, Kind::kValue, "N", "0", "Fail launches"},
      {"cpus", 0, Kind::kValue, "N", "", "CPU cores"},
  };
  CHECK(FormatFlags(flags) == "      --inject-launch-failures N\n" + std::string(17, ' ') +
                                  "Fail launches (default 0)\n"
                                  "      --cpus N   CPU cores\n");
}

TEST_CASE("FormatFlagGroups aligns every group alike and wraps the help", "[flags]") {
  const std::vector<FlagGroup> groups = {
      {"Required:", {{"work-dir", 0, Kind::kValue, "DIR", "", "Where jobs run"}}},
      {"Optional:",
       {{"log-level", 0, Kind::kValue, "LEVEL", "info", "How much to log"},
        {"help", 'h', Kind::kBool, "", "", std::string(45, 'x') + " " + std::string(40, 'y')}}},
  };
  CHECK(AllFlags(groups).size() == 3);
  CHECK(FormatFlagGroups(groups) ==
        "Required:\n"
        "      --work-dir DIR      Where jobs run\n"
        "\n"
        "Optional:\n"
        "      --log-level LEVEL   How much to log (default info)\n"
        "  -h, --help              " +
            std::string(45, 'x') + "\n" + std::string(26, ' ') + std::string(40, 'y') + "\n");
}

}  // namespace
}  // namespace trainctl
