#include "agents/agent_flags.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using Args = std::vector<std::string>;

Args Required() {
  return {"--scheduler", "127.0.0.1:7070", "--node", "node-1", "--work-dir", "/w"};
}

Args With(Args extra) {
  Args args = Required();
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST_CASE("flags parse with their defaults", "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(Required());
  REQUIRE(flags.ok());
  CHECK(flags->scheduler == "127.0.0.1:7070");
  CHECK(flags->node == "node-1");
  CHECK(flags->work_dir == "/w");
  CHECK(flags->address.empty());
  CHECK_FALSE(flags->cpus);
  CHECK_FALSE(flags->memory_mb);
  CHECK_FALSE(flags->gpus);
  CHECK(flags->reserve_memory_mb == 0);
  CHECK(flags->labels.empty());
  CHECK(flags->pass_env == std::vector<std::string>{"PATH", "LANG", "HOME"});
  CHECK(flags->log_level == "info");
  CHECK(flags->pids_max == 32768);
  CHECK(flags->cpu_policy == CpuPolicy::kNone);

  flags =
      ParseAgentFlags(With({"--cpus=7.5", "--memory-mb", "2048", "--gpus", "0",
                            "--reserve-memory-mb=512", "--reserve-cpu", "0.5", "--labels",
                            "zone=a,tier=gpu", "--address", "10.0.0.1", "--log-level", "debug"}));
  REQUIRE(flags.ok());
  CHECK(*flags->cpus == 7.5);
  CHECK(*flags->memory_mb == 2048);
  CHECK(*flags->gpus == 0);
  CHECK(flags->reserve_memory_mb == 512);
  CHECK(flags->reserve_cpu == 0.5);
  CHECK(flags->labels == std::map<std::string, std::string>{{"tier", "gpu"}, {"zone", "a"}});
  CHECK(flags->address == "10.0.0.1");
  CHECK(flags->log_level == "debug");
  CHECK(ParseAgentFlags({"--help"})->help);

  flags = ParseAgentFlags(With({"--pids-max", "0", "--cpu-policy=static"}));
  REQUIRE(flags.ok());
  CHECK(flags->pids_max == 0);
  CHECK(flags->cpu_policy == CpuPolicy::kStatic);
  CHECK(ParseAgentFlags(With({"--cpu-policy", "none"}))->cpu_policy == CpuPolicy::kNone);
}

TEST_CASE("a bad flag is an error that names it", "[agent_flags]") {
  struct Row {
    Args args;
    const char* names;
  };
  const Row rows[] = {
      {{"--node", "n", "--work-dir", "/w"}, "--scheduler"},
      {{"--scheduler", "s:1", "--work-dir", "/w"}, "--node"},
      {{"--scheduler", "s:1", "--node", "n"}, "--work-dir"},
      {With({"--cpus", "0"}), "--cpus"},
      {With({"--cpus", "many"}), "--cpus"},
      {With({"--memory-mb", "-5"}), "--memory-mb"},
      {With({"--gpus", "1.5"}), "--gpus"},
      {With({"--reserve-memory-mb", "x"}), "--reserve-memory-mb"},
      {With({"--labels", "novalue"}), "--labels"},
      {With({"--pass-env", "PATH,BAD-NAME"}), "--pass-env"},
      {With({"--labels", "a=1,a=2"}), "--labels"},
      {With({"--labels", "=1"}), "--labels"},
      {With({"--bogus", "1"}), "--bogus"},
      {With({"--gpus"}), "--gpus"},
      {With({"--pids-max", "-1"}), "--pids-max"},
      {With({"--pids-max", "lots"}), "--pids-max"},
      {With({"--cpu-policy", "dynamic"}), "--cpu-policy"},
      {With({"--node", "Node_1"}), "--node"},
      {With({"--node", "-node"}), "--node"},
      {With({"--node", std::string(64, 'a')}), "--node"},
  };
  for (const Row& row : rows) {
    absl::StatusOr<AgentFlags> flags = ParseAgentFlags(row.args);
    INFO(row.names);
    REQUIRE_FALSE(flags.ok());
    CHECK(absl::IsInvalidArgument(flags.status()));
    CHECK(absl::StrContains(flags.status().message(), row.names));
  }
}

TEST_CASE("a scheduler off loopback needs TLS or the explicit escape hatch", "[agent_flags]") {
  const Args remote = {"--scheduler", "sched:7070", "--node", "node-1", "--work-dir", "/w"};
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(remote);
  REQUIRE_FALSE(flags.ok());
  CHECK(absl::StrContains(flags.status().message(), "--tls-ca"));
  CHECK(absl::StrContains(flags.status().message(), "--insecure-allow-plaintext"));
  CHECK(absl::StrContains(flags.status().message(), "pki issue-agent DIR node-1"));

  Args plain = remote;
  plain.push_back("--insecure-allow-plaintext");
  flags = ParseAgentFlags(plain);
  REQUIRE(flags.ok());
  CHECK(flags->insecure_allow_plaintext);

  Args tls = remote;
  for (const char* f :
       {"--tls-ca", "/p/ca.crt", "--tls-cert", "/p/n.crt", "--tls-key", "/p/n.key"}) {
    tls.push_back(f);
  }
  flags = ParseAgentFlags(tls);
  REQUIRE(flags.ok());
  CHECK(flags->tls_ca == "/p/ca.crt");
  CHECK(flags->tls_cert == "/p/n.crt");
  CHECK(flags->tls_key == "/p/n.key");

  Args partial = remote;
  for (const char* f : {"--tls-ca", "/p/ca.crt"}) partial.push_back(f);
  CHECK(absl::StartsWith(ParseAgentFlags(partial).status().message(),
                         "--tls-ca, --tls-cert and --tls-key go together"));
  tls.push_back("--insecure-allow-plaintext");
  CHECK(ParseAgentFlags(tls).status().message() ==
        "--insecure-allow-plaintext contradicts --tls-cert");
}

TEST_CASE("run-as flags: the project map, the default user and root's permission",
          "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(Required());
  REQUIRE(flags.ok());
  CHECK(flags->run_as.by_project.empty());
  CHECK(flags->run_as.default_user.empty());  // each project's own uid
  CHECK(flags->run_as.project_uid_groups.empty());
  CHECK_FALSE(flags->run_as.allow_root);

  flags = ParseAgentFlags(With({"--run-as", "team-a=alice,team-b=svc-b", "--default-run-as-user",
                                "trainer", "--allow-root-replicas"}));
  REQUIRE(flags.ok());
  CHECK(flags->run_as.by_project ==
        std::map<std::string, std::string>{{"team-a", "alice"}, {"team-b", "svc-b"}});
  CHECK(flags->run_as.default_user == "trainer");
  CHECK(flags->run_as.allow_root);
  flags = ParseAgentFlags(With({"--project-uid-groups", "datasets,video"}));
  REQUIRE(flags.ok());
  CHECK(flags->run_as.project_uid_groups == std::vector<std::string>{"datasets", "video"});
  CHECK(ParseAgentFlags(With({"--project-uid-groups", "data sets"})).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(ParseAgentFlags(With({"--allow-root-replicas=false"}))->run_as.allow_root);

  CHECK(ParseAgentFlags(With({"--run-as", "team-a"})).status().message() ==
        "--run-as must be project=user pairs separated by commas (a project name, a user name "
        "of letters, digits, '.', '_' and '-'), got \"team-a\"");
  CHECK(ParseAgentFlags(With({"--run-as", "a=x,a=y"})).status().message() ==
        "--run-as: project \"a\" is given twice");
  CHECK(ParseAgentFlags(With({"--default-run-as-user", "bad user"})).status().message() ==
        "--default-run-as-user must be a user name of letters, digits, '.', '_' and '-', got "
        "\"bad user\"");
}

TEST_CASE("the exit report delay hook takes an exit status and a duration", "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(Required());
  REQUIRE(flags.ok());
  CHECK(flags->delay_exit_status == -1);  // off
  CHECK(flags->exit_report_delay == absl::ZeroDuration());

  struct Row {
    const char* text;
    int status;  // -1: rejected
    absl::Duration delay;
  };
  const Row rows[] = {
      {"134:2s", 134, absl::Seconds(2)},
      {"1:500ms", 1, absl::Milliseconds(500)},
      {"0:1m", 0, absl::Minutes(1)},  // a success can be held back too
      {"255:1.5s", 255, absl::Milliseconds(1500)},
      {"134", -1, {}},
      {"134:", -1, {}},
      {":2s", -1, {}},
      {"abort:2s", -1, {}},
      {"256:2s", -1, {}},
      {"-1:2s", -1, {}},
      {"134:0", -1, {}},  // no delay is no hook
      {"134:soon", -1, {}},
      {"134:2s:3s", -1, {}},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    flags = ParseAgentFlags(With({"--inject-exit-report-delay", row.text}));
    if (row.status < 0) {
      REQUIRE_FALSE(flags.ok());
      CHECK(flags.status().message() ==
            absl::StrCat("--inject-exit-report-delay must be CODE:DURATION with CODE 0..255, "
                         "such as 134:2s, got \"",
                         row.text, "\""));
      continue;
    }
    REQUIRE(flags.ok());
    CHECK(flags->delay_exit_status == row.status);
    CHECK(flags->exit_report_delay == row.delay);
  }
}

TEST_CASE("node names are DNS labels", "[agent_flags]") {
  CHECK(ValidateNodeName("a").ok());
  CHECK(ValidateNodeName("gpu-node-07").ok());
  CHECK(ValidateNodeName(std::string(63, 'a')).ok());
  CHECK_FALSE(ValidateNodeName("").ok());
  CHECK_FALSE(ValidateNodeName("node-").ok());
  CHECK_FALSE(ValidateNodeName("node.example").ok());
}

TEST_CASE("host check flags set the check thresholds (R20)", "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(Required());
  REQUIRE(flags.ok());
  CHECK_FALSE(flags->check);
  CHECK(flags->checks.host.root.path == "/");
  CHECK(flags->checks.host.root.min_free_gb == 32);
  CHECK(flags->checks.host.shm.path == "/dev/shm");
  CHECK(flags->checks.host.shm.min_free_gb == 1);
  CHECK(flags->checks.host.cache.path == "/w");
  CHECK(flags->checks.host.cache.min_free_gb == 32);
  CHECK_FALSE(flags->checks.host.infiniband);

  flags = ParseAgentFlags(
      With({"--check-disk-root-gb", "100", "--check-disk-shm-gb=0.5", "--check-disk-cache-gb", "0",
            "--check-disk-root-path", "/data", "--check-disk-shm-path", "/shm", "--infiniband",
            "--check-nofile", "65536", "--check-memlock-kib=1"}));
  REQUIRE(flags.ok());
  CHECK(flags->checks.host.root.min_free_gb == 100);
  CHECK(flags->checks.host.root.path == "/data");
  CHECK(flags->checks.host.shm.min_free_gb == 0.5);
  CHECK(flags->checks.host.shm.path == "/shm");
  CHECK(flags->checks.host.cache.min_free_gb == 0);
  CHECK(flags->checks.host.infiniband);
  CHECK(flags->checks.host.min_nofile == 65536);
  CHECK(flags->checks.host.min_memlock_kib == 1);
  CHECK(ParseAgentFlags(With({"--infiniband=false"}))->checks.host.infiniband == false);

  flags =
      ParseAgentFlags({"--check", "--work-dir", "/w", "--gpus-needed", "2", "--hostnames", "a,b"});
  REQUIRE(flags.ok());
  CHECK(flags->check);
  CHECK(flags->check_request.gpus_needed == 2);
  CHECK(flags->check_request.hostnames == std::vector<std::string>{"a", "b"});

  CHECK_FALSE(ParseAgentFlags({"--check"}).ok());
  CHECK_FALSE(ParseAgentFlags(With({"--gpus-needed", "1"})).ok());
  CHECK_FALSE(ParseAgentFlags(With({"--check-disk-root-gb", "-1"})).ok());
  CHECK_FALSE(ParseAgentFlags(With({"--infiniband=maybe"})).ok());
}

TEST_CASE("the replica stop mode needs only the work dir, and the shim and state dir are optional",
          "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags =
      ParseAgentFlags({"--stop-replicas", "--work-dir", "/w", "--stop-grace", "20s"});
  REQUIRE(flags.ok());
  CHECK(flags->stop_replicas);
  CHECK(flags->stop_grace == absl::Seconds(20));
  CHECK(ParseAgentFlags({"--stop-replicas", "--work-dir", "/w"})->stop_grace == absl::Seconds(10));
  CHECK(ParseAgentFlags({"--stop-replicas", "--work-dir", "/w", "--stop-grace", "0"}).ok());
  CHECK(ParseAgentFlags({"--stop-replicas"}).status().message() == "--work-dir is required");
  CHECK(ParseAgentFlags({"--stop-replicas", "--check", "--work-dir", "/w"})
            .status()
            .message()
            .find("cannot be combined") != std::string::npos);
  CHECK(ParseAgentFlags(With({"--stop-grace", "5s"})).status().message() ==
        "--stop-grace is only valid with --stop-replicas");
  flags = ParseAgentFlags(With({"--shim", "/opt/shim", "--state-dir", "/run/trainctl-agent"}));
  REQUIRE(flags.ok());
  CHECK(flags->shim == "/opt/shim");
  CHECK(flags->state_dir == "/run/trainctl-agent");
  CHECK(ParseAgentFlags(Required())->state_dir.empty());
  flags = ParseAgentFlags(With({"--maintenance-file", "/run/maintenance.json"}));
  REQUIRE(flags.ok());
  CHECK(flags->maintenance_file == "/run/maintenance.json");
  CHECK(ParseAgentFlags(Required())->maintenance_file.empty());
}

TEST_CASE("health check flags (R14, R15)", "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(Required());
  REQUIRE(flags.ok());
  CHECK(flags->checks.preflight);
  CHECK(flags->checks.health_check_interval == absl::Seconds(60));
  CHECK(flags->checks.health_check_program.empty());
  CHECK(flags->checks.health_check_timeout == absl::Seconds(30));
  CHECK(flags->checks.startup_script.empty());
  CHECK(flags->checks.startup_script_timeout == absl::Minutes(5));

  flags = ParseAgentFlags(
      With({"--preflight=false", "--health-check-interval", "500ms", "--health-check-program",
            "/etc/health.sh", "--health-check-timeout=1m30s", "--startup-script", "/etc/startup.sh",
            "--startup-script-timeout", "1h"}));
  REQUIRE(flags.ok());
  CHECK_FALSE(flags->checks.preflight);
  CHECK(flags->checks.health_check_interval == absl::Milliseconds(500));
  CHECK(flags->checks.health_check_program == "/etc/health.sh");
  CHECK(flags->checks.health_check_timeout == absl::Seconds(90));
  CHECK(flags->checks.startup_script == "/etc/startup.sh");
  CHECK(flags->checks.startup_script_timeout == absl::Hours(1));
  CHECK(ParseAgentFlags(With({"--preflight"}))->checks.preflight);
  CHECK(ParseAgentFlags(With({"--health-check-interval", "0"}))->checks.health_check_interval ==
        absl::ZeroDuration());
  CHECK(ParseAgentFlags(With({"--health-check-interval", "5m"}))->checks.health_check_interval ==
        absl::Minutes(5));

  struct Row {
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {With({"--health-check-interval", "x"}),
       "--health-check-interval must be a duration like 30s, or 0 for off, got \"x\""},
      {With({"--health-check-interval", "-5s"}), "--health-check-interval must be a duration"},
      {With({"--health-check-timeout", "0"}),
       "--health-check-timeout must be a duration like 30s, got \"0\""},
      {With({"--startup-script-timeout", "soon"}),
       "--startup-script-timeout must be a duration like 30s, got \"soon\""},
      {With({"--preflight=maybe"}), "--preflight must be true or false"},
      {With({"--startup-script"}), "--startup-script: missing value"},
  };
  for (const Row& row : rows) {
    absl::StatusOr<AgentFlags> bad = ParseAgentFlags(row.args);
    INFO(row.message);
    REQUIRE_FALSE(bad.ok());
    CHECK(absl::StrContains(bad.status().message(), row.message));
  }
}

TEST_CASE("check programs must be executable files", "[agent_flags]") {
  AgentFlags flags;
  CHECK(ResolvePrograms(&flags).ok());  // None given.
  flags.checks.health_check_program = "/bin/true";
  REQUIRE(ResolvePrograms(&flags).ok());
  CHECK(flags.checks.health_check_program.front() == '/');
  flags.checks.startup_script = "/no/such/script";
  absl::Status missing = ResolvePrograms(&flags);
  CHECK(absl::StrContains(missing.message(), "--startup-script: cannot find \"/no/such/script\""));
  testing::TempDir dir;
  flags.checks.startup_script = dir.path() + "/plain.sh";
  std::ofstream(flags.checks.startup_script) << "#!/bin/sh\n";
  chmod(flags.checks.startup_script.c_str(), 0644);
  absl::Status plain = ResolvePrograms(&flags);
  CHECK(absl::StrContains(plain.message(), "--startup-script: \"" + flags.checks.startup_script +
                                               "\" is not an executable file"));
  flags.checks.startup_script.clear();
  flags.checks.health_check_program = "/";
  CHECK(absl::StrContains(ResolvePrograms(&flags).message(), "--health-check-program"));
}

TEST_CASE("log flags: the format and the cap of replica logs", "[agent_flags]") {
  absl::StatusOr<AgentFlags> defaults = ParseAgentFlags(Required());
  REQUIRE(defaults.ok());
  CHECK(defaults->log_format == "text");
  CHECK(defaults->max_log_bytes == int64_t{1024} << 20);
  absl::StatusOr<AgentFlags> set =
      ParseAgentFlags(With({"--log-format", "json", "--max-log-mb", "0.5"}));
  REQUIRE(set.ok());
  CHECK(set->log_format == "json");
  CHECK(set->max_log_bytes == 512 * 1024);
  absl::StatusOr<AgentFlags> off = ParseAgentFlags(With({"--max-log-mb", "0"}));
  REQUIRE(off.ok());
  CHECK(off->max_log_bytes == 0);
  for (const char* bad : {"0.01", "-1", "lots", "nan"}) {
    absl::StatusOr<AgentFlags> refused = ParseAgentFlags(With({"--max-log-mb", bad}));
    CHECK(absl::IsInvalidArgument(refused.status()));
    CHECK_THAT(
        std::string(refused.status().message()),
        Catch::StartsWith("--max-log-mb must be 0 (no cap) or a number of MiB of at least 0.0625"));
  }
}

TEST_CASE("the usage lists every flag", "[agent_flags]") {
  for (const char* flag : {"--scheduler",
                           "--node",
                           "--work-dir",
                           "--address",
                           "--cpus",
                           "--memory-mb",
                           "--gpus",
                           "--reserve-memory-mb",
                           "--reserve-cpu",
                           "--labels",
                           "--pids-max",
                           "--cpu-policy",
                           "--log-level",
                           "--log-format",
                           "--max-log-mb",
                           "--help",
                           "--stop-replicas",
                           "--stop-grace",
                           "--shim",
                           "--state-dir",
                           "--maintenance-file",
                           "--check",
                           "--gpus-needed",
                           "--hostnames",
                           "--check-disk-root-gb",
                           "--check-disk-shm-gb",
                           "--check-disk-cache-gb",
                           "--check-disk-root-path",
                           "--check-disk-shm-path",
                           "--infiniband",
                           "--check-memlock-kib",
                           "--check-nofile",
                           "--check-stack-kib",
                           "--check-nproc",
                           "--preflight",
                           "--health-check-interval",
                           "--health-check-program",
                           "--health-check-timeout",
                           "--startup-script",
                           "--startup-script-timeout",
                           "--inject-launch-failures",
                           "--inject-exit-report-delay",
                           "--run-as",
                           "--default-run-as-user",
                           "--project-uid-groups",
                           "--allow-root-replicas"}) {
    CHECK(absl::StrContains(AgentUsage(), flag));
  }
  for (const char* default_text : {"(default: 60s)", "(default: 30s)", "(default: 5m)",
                                   "(default: true)", "(default: 32768)", "(default: none)"}) {
    CHECK(absl::StrContains(AgentUsage(), default_text));
  }
}

TEST_CASE("command line errors keep the agent's words", "[agent_flags]") {
  auto error_of = [](const Args& args) {
    return std::string(ParseAgentFlags(args).status().message());
  };
  CHECK(error_of(With({"--bogus=1"})) == "unknown flag \"--bogus\" (see --help)");
  CHECK(error_of(With({"-x"})) == "unknown flag \"-x\" (see --help)");
  CHECK(error_of(With({"stray"})) == "unexpected argument \"stray\" (see --help)");
  CHECK(error_of(With({"--gpus"})) == "--gpus: missing value");
  CHECK(error_of(With({"--check=maybe"})) == "--check must be true or false, got \"maybe\"");
  // --help wins over what follows it, not over what came before.
  CHECK(ParseAgentFlags({"-h"})->help);
  CHECK(ParseAgentFlags({"--help", "--bogus"})->help);
  CHECK_FALSE(ParseAgentFlags({"--bogus", "--help"}).ok());
  for (absl::string_view line : absl::StrSplit(AgentUsage(), '\n')) {
    INFO(line);
    CHECK(line.size() <= 100);
  }
}

TEST_CASE("the metrics address (--metrics-listen) is HOST:PORT, and off by default",
          "[agent_flags]") {
  CHECK(ParseAgentFlags(Required())->metrics_listen.empty());
  CHECK(ParseAgentFlags(With({"--metrics-listen", "127.0.0.1:9108"}))->metrics_listen ==
        "127.0.0.1:9108");
  CHECK(ParseAgentFlags(With({"--metrics-listen", "[::1]:0"}))->metrics_listen == "[::1]:0");
  for (const char* bad : {"9108", ":9108", "host:", "host:http", "host:65536", "host:-1"}) {
    INFO(bad);
    absl::StatusOr<AgentFlags> flags = ParseAgentFlags(With({"--metrics-listen", bad}));
    REQUIRE_FALSE(flags.ok());
    CHECK(
        flags.status().message() ==
        absl::StrCat("--metrics-listen must be HOST:PORT, e.g. 127.0.0.1:9108, got \"", bad, "\""));
  }
  CHECK(absl::StrContains(AgentUsage(), "--metrics-listen HOST:PORT"));
}

TEST_CASE("several scheduler addresses, and the heartbeat ack timeout", "[agent_flags]") {
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(With({}));
  REQUIRE(flags.ok());
  CHECK_FALSE(flags->heartbeat_ack_timeout.has_value());  // the default: from the interval

  // Loopback addresses need no TLS; one off loopback does.
  flags = ParseAgentFlags(With({"--scheduler", "127.0.0.1:7070,localhost:7071"}));
  REQUIRE(flags.ok());
  CHECK(flags->scheduler == "127.0.0.1:7070,localhost:7071");
  flags = ParseAgentFlags(With({"--scheduler", "127.0.0.1:7070,sched-b:7070"}));
  REQUIRE_FALSE(flags.ok());
  CHECK(absl::StrContains(flags.status().message(), "is another host: talk TLS"));

  flags = ParseAgentFlags(With({"--heartbeat-ack-timeout", "10s"}));
  REQUIRE(flags.ok());
  CHECK(flags->heartbeat_ack_timeout == absl::Seconds(10));
  flags = ParseAgentFlags(With({"--heartbeat-ack-timeout", "0"}));
  REQUIRE(flags.ok());
  CHECK(flags->heartbeat_ack_timeout == absl::ZeroDuration());
  for (const char* bad : {"500ms", "soon", "-1s"}) {
    INFO(bad);
    flags = ParseAgentFlags(With({"--heartbeat-ack-timeout", bad}));
    REQUIRE_FALSE(flags.ok());
    CHECK(flags.status().message() ==
          absl::StrCat("--heartbeat-ack-timeout must be a duration of at least 1s such as 10s, "
                       "or 0 for never, got \"",
                       bad, "\""));
  }
  CHECK(absl::StrContains(AgentUsage(), "--heartbeat-ack-timeout"));
}

}  // namespace
}  // namespace trainctl::agent
