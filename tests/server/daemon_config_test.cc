// trainctld's config file: --config under the flags, errors that name the file, --print-config,
// and what SIGHUP may change.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "server/daemon_flags.h"
#include "tests/common/config_testing.h"

namespace trainctl::server {
namespace {

using ::trainctl::testing::TempConfigFile;

TEST_CASE("trainctld reads its settings from --config, and flags override them", "[config]") {
  TempConfigFile f(
      "data-dir: /var/lib/trainctl\n"
      "listen: 127.0.0.1:7171\n"
      "heartbeat-interval: 1s\n"
      "checkpoint-allowed-roots: [/mnt/a, /mnt/b]\n"
      "default-quota-gpus: 8\n"
      "log-level: debug\n");
  absl::StatusOr<DaemonFlags> flags =
      ParseDaemonFlags({"--config", f.path(), "--log-level", "warn"});
  REQUIRE(flags.ok());
  CHECK(flags->config_path == f.path());
  CHECK(flags->data_dir == "/var/lib/trainctl");
  CHECK(flags->listen == "127.0.0.1:7171");
  CHECK(flags->heartbeat_ms == 1000);
  CHECK(flags->checkpoint_allowed_roots == std::vector<std::string>{"/mnt/a", "/mnt/b"});
  CHECK(flags->default_quota.gpus() == 8);
  CHECK(flags->log_level == "warn");
}

TEST_CASE("a bad trainctld config file stops it with the file, line, key and reason", "[config]") {
  struct Case {
    std::string text;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"data-dir: /d\nheartbeat-interval: soon\n",
            ":2: heartbeat-interval: --heartbeat-interval must be a duration between 100ms and "
            "60s"},
           {"data-dir: /d\nlog-level: chatty\n", ":2: log-level: --log-level must be one of"},
           {"data-dir: /d\nlisten-port: 7070\n", ":2: listen-port: unknown key"},
           {"data-dir: /d\nport-range: 1-2\n", ":2: port-range: --port-range 1-2"},
           {"data-dir: /d\ncheck-db: true\n", ":2: check-db: is a command-line action"},
       }) {
    INFO(c.text);
    TempConfigFile f(c.text);
    absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags({"--config", f.path()});
    REQUIRE_FALSE(flags.ok());
    CHECK(flags.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(flags.status().message()), Catch::StartsWith(f.path()));
    CHECK_THAT(std::string(flags.status().message()), Catch::Contains(c.want));
  }
  // The same bad value given as a flag is the flag's error, whatever the file says.
  TempConfigFile f("data-dir: /d\nheartbeat-interval: 2s\n");
  absl::StatusOr<DaemonFlags> flags =
      ParseDaemonFlags({"--config", f.path(), "--heartbeat-interval", "soon"});
  REQUIRE_FALSE(flags.ok());
  CHECK_THAT(std::string(flags.status().message()), Catch::StartsWith("--heartbeat-interval"));
  // A missing file is named.
  flags = ParseDaemonFlags({"--config", "/nonexistent/trainctld.yaml"});
  REQUIRE_FALSE(flags.ok());
  CHECK_THAT(std::string(flags.status().message()),
             Catch::Contains("cannot read config file /nonexistent/trainctld.yaml"));
}

TEST_CASE("trainctld --print-config prints every setting, and reads back as the same", "[config]") {
  absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags(
      {"--data-dir", "/d", "--print-config", "--flap-window", "90m", "--default-quota-cpu", "2.5",
       "--secret-env-pattern", "*_PASS*", "--job-retention", "0", "--settle-window", "1500ms"});
  REQUIRE(flags.ok());
  CHECK(flags->print_config);
  const std::string text = DaemonConfigText(*flags);
  CHECK_THAT(text, Catch::Contains("\nflap-window: 90m\n"));
  CHECK_THAT(text, Catch::Contains("\nsettle-window: 1500ms\n"));
  CHECK_THAT(text, Catch::Contains("\nsecret-env-pattern: \"*_PASS*\"\n"));
  CHECK_THAT(text, Catch::Contains("# default-quota-gpus:  (not set)"));
  TempConfigFile f(text);
  absl::StatusOr<DaemonFlags> again = ParseDaemonFlags({"--config", f.path()});
  REQUIRE(again.ok());
  CHECK(DaemonConfigEntries(*again) == DaemonConfigEntries(*flags));
}

TEST_CASE("trainctld --print-config never shows a password of the store URI", "[config]") {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"postgres://tc:s3cret@db.example:5432/trainctl?sslmode=require",
       "postgres://tc:<redacted>@db.example:5432/trainctl?sslmode=require"},
      {"postgresql://tc@db/trainctl?password=s3cret&sslmode=require",
       "postgresql://tc@db/trainctl?password=<redacted>&sslmode=require"},
      {"postgres://tc@db/trainctl", "postgres://tc@db/trainctl"},
      {"postgresql:///trainctl?host=/run/postgresql",
       "postgresql:///trainctl?host=/run/postgresql"},
  };
  for (const auto& [uri, shown] : rows) {
    INFO(uri);
    absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags({"--data-dir", "/d", "--store", uri});
    REQUIRE(flags.ok());
    CHECK(flags->store == uri);  // the daemon itself uses the real one
    const std::string text = DaemonConfigText(*flags);
    CHECK_THAT(text, !Catch::Contains("s3cret"));
    CHECK_THAT(text, Catch::Contains(shown));
  }
}

TEST_CASE("every trainctld flag that is a setting has a config key", "[config]") {
  absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags({"--data-dir", "/d"});
  REQUIRE(flags.ok());
  std::set<std::string> keys;
  for (const auto& [key, value] : DaemonConfigEntries(*flags)) keys.insert(key);
  // Every "--name" of the help text is a key, but for the actions of one run.
  const std::set<std::string> actions = {"config", "print-config", "check-db", "help", "version"};
  const std::string usage = DaemonUsage();
  CHECK(::trainctl::testing::FlagsOfUsage(usage, actions) == keys);
}

TEST_CASE("SIGHUP applies log-level and the default quota, the rest at a restart", "[config]") {
  CHECK(DaemonKeyReloads("log-level"));
  CHECK(DaemonKeyReloads("default-quota-gpus"));
  CHECK(DaemonKeyReloads("default-quota-max-running-jobs"));
  CHECK_FALSE(DaemonKeyReloads("listen"));
  CHECK_FALSE(DaemonKeyReloads("data-dir"));
  CHECK_FALSE(DaemonKeyReloads("heartbeat-interval"));
}

}  // namespace
}  // namespace trainctl::server
