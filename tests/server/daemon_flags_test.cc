// trainctld's flags: defaults, every flag, every check's message, and the --help text.
#include "server/daemon_flags.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "server/data_dir.h"

namespace trainctl::server {
namespace {

using Args = std::vector<std::string>;

Args With(Args extra) {
  Args args = {"--data-dir", "/d"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST_CASE("trainctld flags have their defaults", "[daemon_flags]") {
  // An empty value ("--flap-window=") leaves the default too.
  for (const Args& args :
       {With({}), With({"--heartbeat-interval=", "--node-lost-timeout=", "--flap-threshold=",
                        "--flap-window=", "--checkpoint-root=", "--port-range="})}) {
    INFO(args.size());
    absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags(args);
    REQUIRE(flags.ok());
    CHECK_FALSE(flags->help);
    CHECK_FALSE(flags->version);
    CHECK(flags->data_dir == "/d");
    CHECK(flags->listen == "127.0.0.1:7070");
    CHECK(flags->http_listen == "127.0.0.1:7080");
    CHECK(flags->http_max_streams == 64);
    CHECK(flags->checkpoint_root == "/d-checkpoints");
    CHECK(flags->heartbeat_ms == 2000);
    CHECK(flags->node_lost_timeout_ms == 15000);
    CHECK(flags->flap_threshold == 3);
    CHECK(flags->flap_window_ms == 3'600'000);
    CHECK(flags->log_level == "info");
    CHECK(flags->log_format == "text");
    CHECK(flags->port_range == sched::PortRange{20000, 32767});
    CHECK(flags->max_request_bytes == 4 << 20);
    CHECK(flags->max_agent_streams_per_peer == 64);
    CHECK(flags->max_watches_per_peer == 256);
    CHECK(flags->secret_env_patterns == "*_SECRET*,*_TOKEN*,*_PASSWORD*,*_KEY");
    CHECK(flags->job_retention_ms == 90 * 86'400'000LL);
    CHECK(flags->finished_job_cache_ms == 10 * 60'000);
    CHECK_FALSE(flags->default_quota.has_gpus());
    CHECK_FALSE(flags->default_quota.has_cpu());
    CHECK_FALSE(flags->default_quota.has_memory_mb());
    CHECK_FALSE(flags->default_quota.has_max_running_jobs());
  }
}

TEST_CASE("the default checkpoint root lies beside the data dir, not in it", "[daemon_flags]") {
  // Replicas run as their project's uid and cannot enter the 0700 data dir.
  CHECK(DefaultCheckpointRoot("/var/lib/trainctl") == "/var/lib/trainctl-checkpoints");
  CHECK(DefaultCheckpointRoot("/var/lib/trainctl/") == "/var/lib/trainctl-checkpoints");
  CHECK(DefaultCheckpointRoot("/srv/./tc/../trainctl") == "/srv/trainctl-checkpoints");
  absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags({"--data-dir", "/srv/tc/"});
  REQUIRE(flags.ok());
  CHECK(flags->checkpoint_root == "/srv/tc-checkpoints");
}

TEST_CASE("every trainctld flag sets its field", "[daemon_flags]") {
  absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags({"--data-dir=/var/lib/tc",
                                                        "--listen",
                                                        "0.0.0.0:0",
                                                        "--insecure-allow-plaintext",
                                                        "--checkpoint-root",
                                                        "/shared/ckpt",
                                                        "--heartbeat-interval",
                                                        "500ms",
                                                        "--node-lost-timeout=1m",
                                                        "--flap-threshold",
                                                        "0",
                                                        "--flap-window",
                                                        "168h",
                                                        "--log-level",
                                                        "debug",
                                                        "--log-format",
                                                        "json",
                                                        "--port-range",
                                                        "40000-40999",
                                                        "--default-quota-gpus",
                                                        "8",
                                                        "--default-quota-cpu=0.5",
                                                        "--default-quota-memory-mb",
                                                        "65536",
                                                        "--default-quota-max-running-jobs",
                                                        "0"});
  REQUIRE(flags.ok());
  CHECK(flags->data_dir == "/var/lib/tc");
  CHECK(flags->listen == "0.0.0.0:0");
  CHECK(flags->insecure_allow_plaintext);
  CHECK(flags->checkpoint_root == "/shared/ckpt");
  CHECK(flags->heartbeat_ms == 500);
  CHECK(flags->node_lost_timeout_ms == 60'000);
  CHECK(flags->flap_threshold == 0);
  CHECK(flags->flap_window_ms == 168 * 3'600'000LL);
  CHECK(flags->log_level == "debug");
  CHECK(flags->log_format == "json");
  CHECK(flags->port_range == sched::PortRange{40000, 40999});
  CHECK(flags->default_quota.gpus() == 8);
  CHECK(flags->default_quota.cpu() == 0.5);
  CHECK(flags->default_quota.memory_mb() == 65536);
  CHECK(flags->default_quota.has_max_running_jobs());
  CHECK(flags->default_quota.max_running_jobs() == 0);
  // The bounds are allowed; the last value given wins.
  flags = ParseDaemonFlags(
      With({"--heartbeat-interval", "100ms", "--node-lost-timeout", "1h", "--flap-threshold", "100",
            "--flap-window", "1s", "--flap-window", "2s", "--port-range=1024-1087"}));
  REQUIRE(flags.ok());
  CHECK(flags->port_range == sched::PortRange{1024, 1087});  // 64 ports from the lowest allowed
  CHECK(flags->heartbeat_ms == 100);
  CHECK(flags->node_lost_timeout_ms == 3'600'000);
  CHECK(flags->flap_threshold == 100);
  CHECK(flags->flap_window_ms == 2000);
  flags = ParseDaemonFlags(With({"--secret-env-pattern", "API_*,A-B"}));
  CHECK(flags.status().message() ==
        "--secret-env-pattern: \"A-B\" is not a pattern of letters, digits, '_', '*' and '?' "
        "(comma-separated, or none)");
  flags = ParseDaemonFlags(
      With({"--max-agent-streams-per-peer", "1000", "--max-watches-per-peer", "0"}));
  REQUIRE(flags.ok());
  CHECK(flags->max_agent_streams_per_peer == 1000);
  CHECK(flags->max_watches_per_peer == 0);
  CHECK(ParseDaemonFlags(With({"--max-watches-per-peer", "-1"})).status().message() ==
        "--max-watches-per-peer must be a whole number from 0 to 1000000, got \"-1\"");
  flags = ParseDaemonFlags(With({"--secret-env-pattern", "none"}));
  REQUIRE(flags.ok());
  CHECK(flags->secret_env_patterns == "none");
  flags = ParseDaemonFlags(With({"--max-request-bytes", "2097152"}));
  REQUIRE(flags.ok());
  CHECK(flags->max_request_bytes == 2097152);
  flags = ParseDaemonFlags(With({"--max-request-bytes", "67108864"}));
  REQUIRE(flags.ok());
  CHECK(flags->max_request_bytes == 67108864);
  flags = ParseDaemonFlags(With({"--port-range", "65472-65535"}));  // 64 up to the highest
  REQUIRE(flags.ok());
  CHECK(flags->port_range == sched::PortRange{65472, 65535});
  flags = ParseDaemonFlags(With({"--job-retention", "30d12h"}));
  REQUIRE(flags.ok());
  CHECK(flags->job_retention_ms == (30 * 24 + 12) * 3'600'000LL);
  flags = ParseDaemonFlags(With({"--job-retention", "0"}));
  REQUIRE(flags.ok());
  CHECK(flags->job_retention_ms == 0);
  CHECK(flags->usage_retention_ms == 730 * 86'400'000LL);  // the default: two years
  flags = ParseDaemonFlags(With({"--usage-retention", "365d"}));
  REQUIRE(flags.ok());
  CHECK(flags->usage_retention_ms == 365 * 86'400'000LL);
  flags = ParseDaemonFlags(With({"--finished-job-cache", "0s"}));
  REQUIRE(flags.ok());
  CHECK(flags->finished_job_cache_ms == 0);
  flags = ParseDaemonFlags(With({"--finished-job-cache", "1h30m"}));
  REQUIRE(flags.ok());
  CHECK(flags->finished_job_cache_ms == 90 * 60'000);
  CHECK(flags->finished_job_cache_jobs == 10'000);
  flags = ParseDaemonFlags(With({"--finished-job-cache-jobs", "0"}));
  REQUIRE(flags.ok());
  CHECK(flags->finished_job_cache_jobs == 0);
  CHECK(ParseDaemonFlags(With({}))->store.empty());  // the SQLite file in --data-dir
  for (const char* uri : {"postgres://tc@db1/trainctl", "postgresql:///trainctl?host=/run/pg"}) {
    flags = ParseDaemonFlags(With({"--store", uri}));
    REQUIRE(flags.ok());
    CHECK(flags->store == uri);
  }
  CHECK(flags->lease_duration_ms == 5000);
  CHECK(flags->advertise_address.empty());
  flags = ParseDaemonFlags(
      With({"--store", "postgres://tc@db/tc", "--lease-duration", "2s", "--advertise-address",
            "sched-a.example:7070", "--advertise-http-address", "[::1]:7080"}));
  REQUIRE(flags.ok());
  CHECK(flags->lease_duration_ms == 2000);
  CHECK(flags->advertise_address == "sched-a.example:7070");
  CHECK(flags->advertise_http_address == "[::1]:7080");
  CHECK(ParseDaemonFlags(With({}))->http_allowed_hosts.empty());
  flags = ParseDaemonFlags(
      With({"--http-allowed-hosts", "Trainctl.Example.com,10.0.0.5, [2001:db8::7],sched_b"}));
  REQUIRE(flags.ok());
  CHECK(flags->http_allowed_hosts ==
        std::vector<std::string>{"trainctl.example.com", "10.0.0.5", "[2001:db8::7]", "sched_b"});
  flags = ParseDaemonFlags(With({"--http-allowed-hosts", "*"}));
  REQUIRE(flags.ok());
  CHECK(flags->http_allowed_hosts == std::vector<std::string>{"*"});
}

TEST_CASE("a store is a PostgreSQL URI, and --check-db is for the SQLite file alone",
          "[daemon_flags]") {
  CHECK(ParseDaemonFlags(With({"--store", "/var/lib/tc/other.db"})).status().message() ==
        "--store takes a PostgreSQL connection URI, postgres://USER@HOST/DB (leave it out for "
        "the SQLite file in --data-dir)");
  CHECK(absl::StartsWith(
      ParseDaemonFlags(With({"--store", "postgres://tc@db1/tc", "--check-db"})).status().message(),
      "--check-db checks the SQLite file in --data-dir"));
}

TEST_CASE("a bad trainctld command line is an error that says what to give", "[daemon_flags]") {
  struct Row {
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {{}, "--data-dir is required"},
      {{"--data-dir="}, "--data-dir is required"},
      {{"--bogus"}, "unknown flag --bogus"},
      {With({"--bogus=1"}), "unknown flag --bogus"},
      {With({"stray"}), "unknown flag stray"},
      {With({"-x"}), "unknown flag -x"},
      {With({"--help=maybe"}), "unknown flag --help"},
      {With({"--listen"}), "--listen needs a value"},
      {With({"--fair-share", "yes"}), "--fair-share must be on or off, got \"yes\""},
      {With({"--fair-share-half-life", "10m"}),
       "--fair-share-half-life must be a duration between 1h and 3650d, e.g. 7d, got \"10m\""},
      {With({"--reservation-after", "forever"}),
       "--reservation-after must be a duration between 0s and 30d, e.g. 10m, or off, got "
       "\"forever\""},
      {With({"--fair-share-resource-weights", "gpu=1,disk=2"}),
       "--fair-share-resource-weights must be gpu=W,cpu=W,memory=W with each W from 0 to 1000, "
       "not all 0, got \"gpu=1,disk=2\""},
      {With({"--fair-share-resource-weights", "gpu=0,cpu=0,memory=0"}),
       "--fair-share-resource-weights must be gpu=W,cpu=W,memory=W with each W from 0 to 1000, "
       "not all 0, got \"gpu=0,cpu=0,memory=0\""},
      {With({"--usage-retention", "10m"}),
       "--usage-retention must be 0 (keep all usage) or at least 1h, got \"10m\""},
      {With({"--job-retention", "500ms"}),
       "--job-retention must be 0 (keep every job) or at least 1s, got \"500ms\""},
      {With({"--job-retention", "3651d"}),
       "--job-retention must be a duration of 0 (keep every job) or 1s to 3650d, e.g. 90d, got "
       "\"3651d\""},
      {With({"--job-retention", "forever"}),
       "--job-retention must be a duration of 0 (keep every job) or 1s to 3650d, e.g. 90d, got "
       "\"forever\""},
      {With({"--finished-job-cache", "31d"}),
       "--finished-job-cache must be a duration between 0s and 30d, e.g. 10m, got \"31d\""},
      {With({"--finished-job-cache-jobs", "-1"}),
       "--finished-job-cache-jobs must be a whole number from 0 to 10000000, got \"-1\""},
      {With({"--http-listen", "7080"}),
       "--http-listen must be HOST:PORT (port 0..65535) or off, got \"7080\""},
      {With({"--http-listen", "127.0.0.1:99999"}),
       "--http-listen must be HOST:PORT (port 0..65535) or off, got \"127.0.0.1:99999\""},
      {With({"--http-listen", "0.0.0.0:7080"}),
       "--http-listen 0.0.0.0:7080 is reachable from other hosts, and plaintext HTTP would let "
       "anyone who reaches it run any command on every node: serve HTTPS with "
       "--tls-cert/--tls-key/--agent-ca, or accept the risk with --insecure-allow-plaintext"},
      {With({"--http-max-streams", "0"}),
       "--http-max-streams must be a whole number from 1 to 4096, got \"0\""},
      {With({"--http-allowed-hosts", "trainctl.example.com:443"}),
       "--http-allowed-hosts must be host names or addresses without a port ([::1] for IPv6), or "
       "*, "
       "separated by commas, got \"trainctl.example.com:443\""},
      {With({"--http-allowed-hosts", "a,http://b"}),
       "--http-allowed-hosts must be host names or addresses without a port ([::1] for IPv6), or "
       "*, "
       "separated by commas, got \"http://b\""},
      {With({"--store", "postgres://tc@db/tc", "--lease-duration", "500ms"}),
       "--lease-duration must be a duration between 1s and 60s, e.g. 5s, got \"500ms\""},
      {With({"--store", "postgres://tc@db/tc", "--advertise-address", "sched-a"}),
       "--advertise-address must be HOST:PORT (port 1..65535), got \"sched-a\""},
      {With({"--store", "postgres://tc@db/tc", "--advertise-http-address", "a:0"}),
       "--advertise-http-address must be HOST:PORT (port 1..65535), got \"a:0\""},
      {With({"--advertise-address", "sched-a:7070"}),
       "--advertise-address needs --store postgres://...: only trainctld sharing a PostgreSQL "
       "store lead and stand by (the SQLite store has one trainctld)"},
      {With({"--http-max-streams", "5000"}),
       "--http-max-streams must be a whole number from 1 to 4096, got \"5000\""},
      {{"--data-dir"}, "--data-dir needs a value"},
      {With({"--default-quota-cpu="}), "--default-quota-cpu needs a value"},
      {With({"--heartbeat-interval", "x"}),
       "--heartbeat-interval must be a duration between 100ms and 60s, e.g. 2s, got \"x\""},
      {With({"--heartbeat-interval", "99ms"}),
       "--heartbeat-interval must be a duration between 100ms and 60s, e.g. 2s, got \"99ms\""},
      {With({"--heartbeat-interval", "61s", "--node-lost-timeout", "1h"}),
       "--heartbeat-interval must be a duration between 100ms and 60s, e.g. 2s, got \"61s\""},
      {With({"--max-request-bytes", "2097151"}),
       "--max-request-bytes must be a whole number from 2097152 (2 MiB: the largest job spec must "
       "fit) to 67108864 (64 MiB), got \"2097151\""},
      {With({"--max-request-bytes", "4M"}),
       "--max-request-bytes must be a whole number from 2097152 (2 MiB: the largest job spec must "
       "fit) to 67108864 (64 MiB), got \"4M\""},
      {With({"--node-lost-timeout", "x"}),
       "--node-lost-timeout must be a duration between 1s and 1h, e.g. 15s, got \"x\""},
      {With({"--node-lost-timeout", "2h"}),
       "--node-lost-timeout must be a duration between 1s and 1h, e.g. 15s, got \"2h\""},
      {With({"--heartbeat-interval", "10s", "--node-lost-timeout", "20s"}),
       "--node-lost-timeout (20000ms) must be at least 3 heartbeat intervals "
       "(--heartbeat-interval 10000ms), or healthy nodes would be declared lost"},
      {With({"--heartbeat-interval", "6s"}),
       "--node-lost-timeout (15000ms) must be at least 3 heartbeat intervals "
       "(--heartbeat-interval 6000ms), or healthy nodes would be declared lost"},
      {With({"--flap-threshold", "101"}),
       "--flap-threshold must be a whole number from 0 to 100, got \"101\""},
      {With({"--flap-threshold", "-1"}),
       "--flap-threshold must be a whole number from 0 to 100, got \"-1\""},
      {With({"--flap-window", "0"}),
       "--flap-window must be a duration between 1s and 168h, e.g. 1h, got \"0\""},
      {With({"--flap-window", "169h"}),
       "--flap-window must be a duration between 1s and 168h, e.g. 1h, got \"169h\""},
      {With({"--port-range"}), "--port-range needs a value"},
      {With({"--port-range", "20000"}),
       "--port-range must be two ports LO-HI, e.g. 20000-32767, got \"20000\""},
      {With({"--port-range", "20000-x"}),
       "--port-range must be two ports LO-HI, e.g. 20000-32767, got \"20000-x\""},
      {With({"--port-range", "20000-30000-40000"}),
       "--port-range must be two ports LO-HI, e.g. 20000-32767, got \"20000-30000-40000\""},
      {With({"--port-range", "-1-30000"}),
       "--port-range must be two ports LO-HI, e.g. 20000-32767, got \"-1-30000\""},
      {With({"--port-range", "1023-2000"}),
       "--port-range 1023-2000: ports must be within 1024..65535"},
      {With({"--port-range", "60000-65536"}),
       "--port-range 60000-65536: ports must be within 1024..65535"},
      {With({"--port-range", "30000-20000"}),
       "--port-range 30000-20000: the first port must be below the last"},
      {With({"--port-range", "30000-30000"}),
       "--port-range 30000-30000: the first port must be below the last"},
      {With({"--port-range", "30000-30062"}),
       "--port-range 30000-30062: the range must hold at least 64 ports, not 63"},
      {With({"--default-quota-gpus", "x"}),
       "--default-quota-gpus must be a whole number >= 0, got \"x\""},
      {With({"--default-quota-gpus", "-1"}),
       "--default-quota-gpus must be a whole number >= 0, got \"-1\""},
      {With({"--default-quota-max-running-jobs", "3000000000"}),
       "--default-quota-max-running-jobs must be a whole number >= 0, got \"3000000000\""},
      {With({"--default-quota-memory-mb", "1.5"}),
       "--default-quota-memory-mb must be a whole number >= 0, got \"1.5\""},
      {With({"--default-quota-cpu", "-1"}),
       "--default-quota-cpu must be a non-negative number of cores (e.g. 8 or 0.5), got \"-1\""},
      {With({"--default-quota-cpu", "inf"}),
       "--default-quota-cpu must be a non-negative number of cores (e.g. 8 or 0.5), got \"inf\""},
  };
  for (const Row& row : rows) {
    INFO(row.message);
    absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags(row.args);
    REQUIRE_FALSE(flags.ok());
    CHECK(absl::IsInvalidArgument(flags.status()));
    CHECK(flags.status().message() == row.message);
  }
}

TEST_CASE("trainctld's --help and --version win over what follows them", "[daemon_flags]") {
  for (const Args& args : {Args{"--help"}, Args{"-h"}, Args{"--help", "--bogus"},
                           Args{"--data-dir", "/d", "--help", "--flap-threshold"}}) {
    INFO(args[0]);
    absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags(args);
    REQUIRE(flags.ok());
    CHECK(flags->help);
  }
  absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags({"--version", "--flap-threshold=x"});
  REQUIRE(flags.ok());
  CHECK(flags->version);
  CHECK_FALSE(flags->help);
  CHECK(ParseDaemonFlags({"--bogus", "--help"}).status().message() == "unknown flag --bogus");
}

TEST_CASE("checkpoint roots are absolute directories", "[daemon_flags]") {
  absl::StatusOr<DaemonFlags> flags =
      ParseDaemonFlags({"--data-dir", "/d", "--checkpoint-allowed-roots", "/ckpt,/mnt/shared"});
  REQUIRE(flags.ok());
  CHECK(flags->checkpoint_allowed_roots == std::vector<std::string>{"/ckpt", "/mnt/shared"});
  CHECK(ParseDaemonFlags({"--data-dir", "/d"})->checkpoint_allowed_roots.empty());
  CHECK(ParseDaemonFlags({"--data-dir", "/d", "--checkpoint-allowed-roots", "/ok,rel"})
            .status()
            .message() == "--checkpoint-allowed-roots: \"rel\" is not an absolute directory");
}

TEST_CASE("trainctld's fair share: on, 7d, every resource weighing 1, --reservation-after 10m",
          "[daemon_flags]") {
  absl::StatusOr<DaemonFlags> defaults = ParseDaemonFlags({"--data-dir=/d"});
  REQUIRE(defaults.ok());
  CHECK(defaults->fair_share);
  CHECK(defaults->fair_share_half_life_ms == 7 * 86'400'000LL);
  CHECK(defaults->fair_share_gpu_weight == 1);
  absl::StatusOr<DaemonFlags> set =
      ParseDaemonFlags({"--data-dir=/d", "--fair-share=off", "--fair-share-half-life", "2d",
                        "--fair-share-resource-weights", "cpu=0.25,memory=0"});
  REQUIRE(set.ok());
  CHECK_FALSE(set->fair_share);
  CHECK(set->fair_share_half_life_ms == 2 * 86'400'000LL);
  CHECK(set->fair_share_gpu_weight == 1);
  CHECK(set->fair_share_cpu_weight == 0.25);
  CHECK(set->fair_share_memory_weight == 0);

  CHECK(defaults->reservation_after_ms == 600'000);
  CHECK(ParseDaemonFlags({"--data-dir=/d", "--reservation-after=off"})->reservation_after_ms == -1);
  CHECK(ParseDaemonFlags({"--data-dir=/d", "--reservation-after=30s"})->reservation_after_ms ==
        30'000);
}

TEST_CASE("trainctld --replica-uid-range is FIRST-LAST, 65536-99999 by default", "[daemon_flags]") {
  absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags({"--data-dir", "/d"});
  REQUIRE(flags.ok());
  CHECK(flags->replica_uid_range.first == 65536);
  CHECK(flags->replica_uid_range.last == 99999);
  flags = ParseDaemonFlags({"--data-dir", "/d", "--replica-uid-range", "200000-299999"});
  REQUIRE(flags.ok());
  CHECK(flags->replica_uid_range.ToString() == "200000-299999");
  CHECK(ParseDaemonFlags({"--data-dir", "/d", "--replica-uid-range", "0-10"}).status().message() ==
        "--replica-uid-range: expected FIRST-LAST, two uids with 1000 <= FIRST <= LAST <= "
        "2147483646 (e.g. 65536-99999), got \"0-10\"");
}

TEST_CASE("a listen address off loopback needs TLS or the explicit escape hatch",
          "[daemon_flags]") {
  auto message = [](Args args) { return std::string(ParseDaemonFlags(args).status().message()); };
  for (const char* listen : {"0.0.0.0:7070", "[::]:7070", "10.1.2.3:7070", "sched.example:7070"}) {
    INFO(listen);
    const std::string m = message({"--data-dir", "/d", "--listen", listen});
    CHECK(absl::StrContains(m, "--tls-cert"));
    CHECK(absl::StrContains(m, "--insecure-allow-plaintext"));
    CHECK(ParseDaemonFlags({"--data-dir", "/d", "--listen", listen, "--insecure-allow-plaintext"})
              .ok());
  }
  for (const char* listen : {"127.0.0.1:0", "localhost:7070", "[::1]:7070"}) {
    INFO(listen);
    absl::StatusOr<DaemonFlags> f = ParseDaemonFlags({"--data-dir", "/d", "--listen", listen});
    REQUIRE(f.ok());
    CHECK_FALSE(f->tls());
  }
  absl::StatusOr<DaemonFlags> tls =
      ParseDaemonFlags({"--data-dir", "/d", "--listen", "0.0.0.0:7070", "--tls-cert", "/p/s.crt",
                        "--tls-key", "/p/s.key", "--agent-ca", "/p/ca.crt"});
  REQUIRE(tls.ok());
  CHECK(tls->tls());
  CHECK(tls->tls_cert == "/p/s.crt");
  CHECK(tls->tls_key == "/p/s.key");
  CHECK(tls->agent_ca == "/p/ca.crt");
  CHECK(message({"--data-dir", "/d", "--tls-cert", "/c"}) ==
        "--tls-cert and --tls-key go together: the certificate and its private key");
  CHECK(absl::StartsWith(message({"--data-dir", "/d", "--tls-cert", "/c", "--tls-key", "/k"}),
                         "--tls-cert needs --agent-ca"));
  CHECK(message({"--data-dir", "/d", "--agent-ca", "/ca"}) ==
        "--agent-ca needs --tls-cert and --tls-key");
  CHECK(message({"--data-dir", "/d", "--tls-cert", "/c", "--tls-key", "/k", "--agent-ca", "/ca",
                 "--insecure-allow-plaintext"}) ==
        "--insecure-allow-plaintext contradicts --tls-cert: choose one");
}

TEST_CASE("trainctld's usage lists every flag with its default", "[daemon_flags]") {
  const std::string usage = DaemonUsage();
  CHECK_THAT(usage, Catch::StartsWith("Usage: trainctld --data-dir DIR [flags]\n"));
  for (const char* flag : {"--data-dir DIR",
                           "--listen HOST:PORT",
                           "--checkpoint-root DIR",
                           "--checkpoint-allowed-roots DIR,...",
                           "--heartbeat-interval D",
                           "--node-lost-timeout D",
                           "--flap-threshold N",
                           "--flap-window D",
                           "--port-range LO-HI",
                           "--log-level LEVEL",
                           "--log-format FORMAT",
                           "--max-request-bytes N",
                           "--secret-env-pattern GLOB,...",
                           "--max-agent-streams-per-peer N",
                           "--max-watches-per-peer N",
                           "--job-retention D",
                           "--usage-retention D",
                           "--lease-duration D",
                           "--advertise-address HOST:PORT",
                           "--advertise-http-address HOST:PORT",
                           "--http-allowed-hosts NAME,...",
                           "-h, --help",
                           "--version",
                           "--default-quota-gpus N",
                           "--default-quota-cpu N",
                           "--default-quota-memory-mb N",
                           "--default-quota-max-running-jobs N"}) {
    CHECK_THAT(usage, Catch::Contains(flag));
  }
  for (const char* default_text :
       {"(required)", "127.0.0.1:7070;", "(default DIR-checkpoints beside", "(default 2s)",
        "(default 15s;", "(default 3;", "(default 1h)", "20000-32767;", "(default info)",
        "unlimited", "(default 90d;"}) {
    CHECK_THAT(usage, Catch::Contains(default_text));
  }
  for (absl::string_view line : absl::StrSplit(usage, '\n')) {
    INFO(line);
    CHECK(line.size() <= 100);
  }
}

}  // namespace
}  // namespace trainctl::server
