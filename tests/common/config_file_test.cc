// Config files (common/config_file.h): keys, value shapes, precedence of flags, errors that name
// the file, line and key, the printed form, and reload diffs.
#include "common/config_file.h"

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "tests/common/config_testing.h"

namespace trainctl {
namespace {

using ::trainctl::testing::TempConfigFile;

using Kind = FlagSpec::Kind;

const std::vector<FlagSpec>& Specs() {
  static const std::vector<FlagSpec> specs = {
      {"config", 0, Kind::kValue, "FILE", "", ""},
      {"log-level", 0, Kind::kValue, "LEVEL", "", ""},
      {"heartbeat-interval", 0, Kind::kValue, "D", "", ""},
      {"roots", 0, Kind::kValue, "DIR,...", "", ""},
      {"labels", 0, Kind::kValue, "k=v,...", "", ""},
      {"tag", 0, Kind::kList, "T", "", ""},
      {"insecure", 0, Kind::kBool, "", "", ""},
      {"check-db", 0, Kind::kBool, "", "", ""},
  };
  return specs;
}

const std::set<std::string> kNotKeys = {"config", "check-db"};

TEST_CASE("a config file's keys become flags, in each value shape", "[config_file]") {
  TempConfigFile f(
      "# comment\n"
      "log-level: debug\n"
      "heartbeat-interval: 2s\n"
      "roots: [/a, /b]\n"
      "labels: {rack: r1, zone: z}\n"
      "tag: [x, y]\n"
      "insecure: yes\n");
  absl::StatusOr<ConfigFile> file = ReadConfigFile(f.path(), Specs(), kNotKeys);
  REQUIRE(file.ok());
  CHECK(file->args == std::vector<std::string>{"--log-level=debug", "--heartbeat-interval=2s",
                                               "--roots=/a,/b", "--labels=rack=r1,zone=z",
                                               "--tag=x", "--tag=y", "--insecure=true"});
  CHECK(file->lines.at("log-level") == 2);
  CHECK(file->lines.at("insecure") == 7);
}

TEST_CASE("an empty config file sets nothing", "[config_file]") {
  TempConfigFile f("# nothing yet\n");
  absl::StatusOr<ConfigFile> file = ReadConfigFile(f.path(), Specs(), kNotKeys);
  REQUIRE(file.ok());
  CHECK(file->args.empty());
}

TEST_CASE("a bad config file is an error naming the file, line and key", "[config_file]") {
  struct Case {
    std::string text;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"log-level: debug\nlog-levle: info\n",
            ":2: log-levle: unknown key (did you mean log-level?)"},
           {"bogus: 1\n", ":1: bogus: unknown key; the keys are the flags"},
           {"check-db: true\n", ":1: check-db: is a command-line action"},
           {"config: /x\n", ":1: config: is a command-line action"},
           {"log-level:\n", ":1: log-level: has no value"},
           {"insecure: maybe\n", ":1: insecure: must be true or false"},
           {"roots: [[a]]\n", ":1: roots: a list may hold only single values"},
           {"labels: {a: [b]}\n", ":1: labels: a mapping may hold only key: value pairs"},
           {"log-level: a\nlog-level: b\n", ":2: log-level: is set twice (first on line 1)"},
           {"- a\n- b\n", ": must be a mapping of flag names to values"},
           {"log-level: [a\n", ": not valid YAML"},
       }) {
    INFO(c.text);
    TempConfigFile f(c.text);
    absl::StatusOr<ConfigFile> file = ReadConfigFile(f.path(), Specs(), kNotKeys);
    REQUIRE_FALSE(file.ok());
    CHECK(file.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StartsWith(file.status().message(), f.path()));
    CHECK_THAT(std::string(file.status().message()), Catch::Contains(c.want));
  }
}

TEST_CASE("a missing config file is NOT_FOUND naming it", "[config_file]") {
  absl::StatusOr<ConfigFile> file = ReadConfigFile("/nonexistent/x.yaml", Specs(), kNotKeys);
  REQUIRE(file.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(file.status().message()), Catch::Contains("/nonexistent/x.yaml"));
}

TEST_CASE("flags given on the command line override the file's", "[config_file]") {
  TempConfigFile f("log-level: debug\ntag: [a, b]\nheartbeat-interval: 2s\n");
  const std::vector<std::string> argv = {"--config", f.path(), "--tag", "c", "--log-level=warn"};
  ParsedArgs cmdline;
  REQUIRE(ParseArgs(argv, Specs(), {}, &cmdline).ok());
  absl::StatusOr<ConfiguredArgs> configured =
      WithConfigFile(cmdline, argv, Specs(), kNotKeys, "config");
  REQUIRE(configured.ok());
  CHECK(configured->parsed.Get("log-level") == "warn");
  // A repeatable flag on the command line replaces the file's list, not adds to it.
  CHECK(configured->parsed.GetAll("tag") == std::vector<std::string>{"c"});
  CHECK(configured->parsed.Get("heartbeat-interval") == "2s");
}

TEST_CASE("errors about a value from the file name the file, line and key", "[config_file]") {
  TempConfigFile f("log-level: debug\nheartbeat-interval: soon\n");
  const std::vector<std::string> argv = {"--config", f.path()};
  ParsedArgs cmdline;
  REQUIRE(ParseArgs(argv, Specs(), {}, &cmdline).ok());
  absl::StatusOr<ConfiguredArgs> configured =
      WithConfigFile(cmdline, argv, Specs(), kNotKeys, "config");
  REQUIRE(configured.ok());
  const absl::Status from_file = configured->Attribute(
      absl::InvalidArgumentError("--heartbeat-interval must be a duration, got \"soon\""));
  CHECK(from_file.message() ==
        f.path() + ":2: heartbeat-interval: --heartbeat-interval must be a duration, got \"soon\"");
  // An error about a flag the file does not set stays as it is.
  const absl::Status other = absl::InvalidArgumentError("--roots: bad");
  CHECK(configured->Attribute(other) == other);
}

TEST_CASE("the printed configuration reads back as the same values", "[config_file]") {
  const std::vector<std::pair<std::string, std::string>> entries = {
      {"log-level", "info"},  {"roots", "*_SECRET*,*_TOKEN*"},
      {"labels", "a: b # c"}, {"heartbeat-interval", ""},
      {"tag", "-x"},
  };
  const std::string text = FormatConfig(entries, "header line\nsecond");
  CHECK(absl::StartsWith(text, "# header line\n# second\n"));
  CHECK_THAT(text, Catch::Contains("# heartbeat-interval:  (not set)"));
  TempConfigFile f(text);
  absl::StatusOr<ConfigFile> file = ReadConfigFile(f.path(), Specs(), kNotKeys);
  REQUIRE(file.ok());
  CHECK(file->args == std::vector<std::string>{"--log-level=info", "--roots=*_SECRET*,*_TOKEN*",
                                               "--labels=a: b # c", "--tag=-x"});
}

TEST_CASE("a reload's diff lists each changed key and whether it applies", "[config_file]") {
  const std::vector<ConfigChange> changes =
      DiffConfig({{"log-level", "info"}, {"listen", "a:1"}, {"quota", ""}},
                 {{"log-level", "debug"}, {"listen", "a:2"}, {"quota", ""}},
                 [](const std::string& key) { return key == "log-level"; });
  REQUIRE(changes.size() == 2);
  CHECK(changes[0].key == "log-level");
  CHECK(changes[0].before == "info");
  CHECK(changes[0].after == "debug");
  CHECK(changes[0].applies);
  CHECK(changes[1].key == "listen");
  CHECK_FALSE(changes[1].applies);
}

}  // namespace
}  // namespace trainctl
