// trainctld's command line: its flags, their defaults and checks, and the --help text.
//
//   absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags({"--data-dir", "/var/lib/trainctl"});
//   if (!flags.ok()) {
//     std::cerr << "trainctld: " << flags.status().message() << "\n(see trainctld --help)\n";
//     return 2;
//   }
//
// Parsing prints nothing and never exits: every error is INVALID_ARGUMENT with a message that
// names the flag and says what it takes. Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/port_pool.h"
#include "scheduler/project_uids.h"
#include "server/secret_env.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

// --max-request-bytes bounds: the largest job spec (1 MiB) and its launch must fit, and a log
// chunk is read to fit too.
inline constexpr int64_t kMinRequestBytes = int64_t{2} << 20;
inline constexpr int64_t kMaxRequestBytes = int64_t{64} << 20;

struct DaemonFlags {
  // -h/--help or --version was given: the caller prints DaemonUsage() or the version. Nothing
  // else is checked, and errors in the arguments after it are ignored.
  bool help = false;
  bool version = false;
  // --config FILE: the file the settings were read from, if any (SIGHUP re-reads it).
  std::string config_path;
  // --print-config: the caller prints DaemonConfigText and exits.
  bool print_config = false;
  // --check-db: check DATA_DIR/trainctl.db (SQLite's integrity_check) and exit.
  bool check_db = false;
  // Required.
  std::string data_dir;
  // --store: a PostgreSQL connection URI (postgres:// or postgresql://); "": the SQLite file
  // DATA_DIR/trainctl.db.
  std::string store;
  // With --store: the leader lease (1s..60s), and the addresses standbys name for this trainctld
  // while it leads ("": derived from --listen and --http-listen).
  int64_t lease_duration_ms = 5000;
  std::string advertise_address;
  std::string advertise_http_address;
  // Port 0 picks a free port.
  std::string listen = "127.0.0.1:7070";
  // The REST API and web console; port 0 picks a free port; "off": none.
  std::string http_listen = "127.0.0.1:7080";
  // Long-lived HTTP streams (watch, log follow) at once: 1..4096.
  int64_t http_max_streams = 64;
  // Host names the REST port serves beside its own (server/rest/request_guard.h), lower case;
  // "*": any.
  std::vector<std::string> http_allowed_hosts;
  // DefaultCheckpointRoot(data_dir) (server/data_dir.h) unless given.
  std::string checkpoint_root;
  // Absolute; empty: the checkpoint root alone (CoreOptions::checkpoint_allowed_roots).
  std::vector<std::string> checkpoint_allowed_roots;
  // Where projects' replica uids come from (CoreOptions::replica_uid_range).
  sched::UidRange replica_uid_range;
  // 100ms to 60s.
  int64_t heartbeat_ms = 2000;
  // 1s to 1h, and at least 3 heartbeat intervals.
  int64_t node_lost_timeout_ms = 15000;
  // 0 to 100; 0 turns flap detection off.
  int32_t flap_threshold = 3;
  // 1s to 168h.
  int64_t flap_window_ms = 3'600'000;
  std::string log_level = "info";
  // --log-format: "text" or "json" (common/logging.h).
  std::string log_format = "text";
  // 0s to 60s: CoreOptions::settle_window_ms.
  int64_t settle_window_ms = 3000;
  // 0s to 10s: CoreOptions::skew_tolerance_ms.
  int64_t skew_tolerance_ms = 1000;
  // --fair-share on|off, --fair-share-half-life (1h to 3650d), --fair-share-resource-weights
  // gpu=W,cpu=W,memory=W (each 0 to 1000, not all 0): CoreOptions::fair_share.
  bool fair_share = true;
  int64_t fair_share_half_life_ms = 7 * 86'400'000LL;
  double fair_share_gpu_weight = 1;
  double fair_share_cpu_weight = 1;
  double fair_share_memory_weight = 1;
  // --reservation-after D|off (0s..30d; default 10m): CoreOptions::reservation_after; -1: off.
  int64_t reservation_after_ms = 600'000;
  // --straggler-ratio (0.05..0.95) and --straggler-window (1s..24h): CoreOptions::stragglers.
  double straggler_ratio = 0.7;
  int64_t straggler_window_ms = 300'000;
  // --gang-check-timeout (1s..1h): CoreOptions::fabric_check_timeout.
  int64_t gang_check_timeout_ms = 60'000;
  // Terminal jobs that ended longer ago are deleted: 0 (never), or 1s to 3650d.
  int64_t job_retention_ms = 90 * 86'400'000LL;
  // Hourly usage rows older than this are deleted: 0 (never), or 1h to 3650d.
  int64_t usage_retention_ms = 730 * 86'400'000LL;
  // Terminal jobs leave memory this long after their last change: 0s to 30d.
  int64_t finished_job_cache_ms = 10 * 60'000;
  // And at most this many of them.
  int64_t finished_job_cache_jobs = 10'000;
  // Every node's port pool: the ports replicas get (their own, and the primary's rendezvous
  // port). 1024..65535, LO < HI, at least 64 ports.
  sched::PortRange port_range;
  // CoreOptions::default_quota; unset limits are unlimited.
  v1::Quota default_quota;
  // PEM files; all three or none. With them, gRPC is TLS and agents authenticate with client
  // certificates signed by agent_ca.
  std::string tls_cert;
  std::string tls_key;
  std::string agent_ca;
  // Plaintext on a non-loopback listen address (refused without it).
  bool insecure_allow_plaintext = false;
  // The largest message trainctld accepts, from users and agents alike: kMinRequestBytes to
  // kMaxRequestBytes.
  int64_t max_request_bytes = int64_t{4} << 20;
  // Streams one host may hold at once; 0: unlimited.
  int64_t max_agent_streams_per_peer = 64;
  int64_t max_watches_per_peer = 256;
  // Nodes of names trainctld does not know one host may register per hour; 0: unlimited.
  int64_t max_new_nodes_per_peer = 16;
  // Env names that are secrets in every job (SecretRedactor::Parse); checked by the parser.
  std::string secret_env_patterns = kDefaultSecretEnvPatterns;
  // The key project secrets are sealed with; "": DATA_DIR/secrets.key with SQLite, and no
  // project secrets with PostgreSQL.
  std::string secret_key_file;
  // The largest working directory upload, in MiB: 1..10240.
  int64_t max_workdir_mb = 100;
  // trainctld's copy of the replicas' logs: where with SQLite ("": DATA_DIR/logs), and its cap.
  std::string log_dir;
  double log_store_max_gb = 10;

  bool tls() const { return !tls_cert.empty(); }
};

// Parses the arguments after the program name, and the config file of --config under them.
// INVALID_ARGUMENT for an unknown flag or key, a missing or malformed value, or a missing
// --data-dir; an error about a value from the file names the file, its line and the key.
absl::StatusOr<DaemonFlags> ParseDaemonFlags(const std::vector<std::string>& args);

// Every setting as (config key, value): what --print-config prints, and what a reload compares.
// An unset optional value is "".
// A password in the store URI shows as "<redacted>".
std::vector<std::pair<std::string, std::string>> DaemonConfigEntries(const DaemonFlags& flags);

// DaemonConfigEntries as a config file trainctld accepts.
std::string DaemonConfigText(const DaemonFlags& flags);

// Whether a change of `key` applies to a running trainctld at SIGHUP (the rest at the next start).
bool DaemonKeyReloads(const std::string& key);

// The --help text: every flag with its default and meaning.
std::string DaemonUsage();

}  // namespace trainctl::server
