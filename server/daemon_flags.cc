#include "server/daemon_flags.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/config_file.h"
#include "common/flag_values.h"
#include "common/flags.h"
#include "common/logging.h"
#include "common/net_address.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "server/daemon_flag_table.h"
#include "server/data_dir.h"

namespace trainctl::server {
namespace {

// --fair-share-resource-weights "gpu=1,cpu=0.5,memory=0.25": any of the three, each 0..1000; the
// ones not named keep their value; not all 0.
absl::Status ParseResourceWeights(const std::string& text, DaemonFlags* f) {
  const std::string expected = "gpu=W,cpu=W,memory=W with each W from 0 to 1000, not all 0";
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    double w = 0;
    if (!absl::SimpleAtod(kv.second, &w) || !(w >= 0 && w <= 1000)) {
      return BadFlagValue("--fair-share-resource-weights", expected, text);
    }
    if (kv.first == "gpu") {
      f->fair_share_gpu_weight = w;
    } else if (kv.first == "cpu") {
      f->fair_share_cpu_weight = w;
    } else if (kv.first == "memory") {
      f->fair_share_memory_weight = w;
    } else {
      return BadFlagValue("--fair-share-resource-weights", expected, text);
    }
  }
  if (f->fair_share_gpu_weight + f->fair_share_cpu_weight + f->fair_share_memory_weight <= 0) {
    return BadFlagValue("--fair-share-resource-weights", expected, text);
  }
  return absl::OkStatus();
}

// `uri` with the password of its user part ("postgres://u:PASS@h/db") and of a `password=`
// parameter replaced by "<redacted>", so that --print-config and the SIGHUP log never show it.
std::string RedactUriPassword(const std::string& uri) {
  std::string out = uri;
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = std::min(out.find_first_of("/?", start), out.size());
    const size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at)
        out.replace(colon + 1, at - colon - 1, "<redacted>");
    }
  }
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p)) {
    p += 9;
    const size_t end = std::min(out.find('&', p), out.size());
    out.replace(p, end - p, "<redacted>");
  }
  return out;
}

constexpr const char* kQuotaFlags[] = {"default-quota-gpus", "default-quota-cpu",
                                       "default-quota-memory-mb", "default-quota-max-running-jobs"};

// What the parser rejected, in trainctld's words: a flag that takes no value given one
// ("--help=x") is as unknown as a misspelt one.
absl::Status Reword(const ArgsError& error) {
  if (error.kind == ArgsError::Kind::kMissingValue) {
    return absl::InvalidArgumentError(absl::StrCat("--", error.flag.name, " needs a value"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown flag ", error.arg.substr(0, error.arg.find('='))));
}

// "LO-HI" for --port-range, checked by ValidatePortRange.
absl::StatusOr<sched::PortRange> ParsePortRange(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, '-');
  sched::PortRange range;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &range.lo) ||
      !absl::SimpleAtoi(parts[1], &range.hi)) {
    return BadFlagValue("--port-range", "two ports LO-HI, e.g. 20000-32767", text);
  }
  if (absl::Status valid = sched::ValidatePortRange(range); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--port-range ", text, ": ", valid.message()));
  }
  return range;
}

// Fills the default quota from the --default-quota-* flags that were given.
absl::Status ParseDefaultQuota(const ParsedArgs& parsed, v1::Quota* q) {
  for (const char* name : kQuotaFlags) {
    const std::string text = parsed.Get(name);
    if (text.empty()) continue;
    const std::string flag = absl::StrCat("--", name);
    if (flag == "--default-quota-gpus") {
      TC_ASSIGN_OR_RETURN(int32_t n, ParseWholeNumberFlag<int32_t>(flag, text, 0));
      q->set_gpus(n);
    } else if (flag == "--default-quota-memory-mb") {
      TC_ASSIGN_OR_RETURN(int64_t n, ParseWholeNumberFlag<int64_t>(flag, text, 0));
      q->set_memory_mb(n);
    } else if (flag == "--default-quota-max-running-jobs") {
      TC_ASSIGN_OR_RETURN(int32_t n, ParseWholeNumberFlag<int32_t>(flag, text, 0));
      q->set_max_running_jobs(n);
    } else {
      TC_ASSIGN_OR_RETURN(double cpu,
                          ParseNumberFlag(flag, text, NumberSign::kNonNegative,
                                          "a non-negative number of cores (e.g. 8 or 0.5)"));
      q->set_cpu(cpu);
    }
  }
  return absl::OkStatus();
}

// --tls-cert, --tls-key, --agent-ca and --insecure-allow-plaintext, and the rule that a
// listen address off loopback needs TLS or the explicit escape hatch.
absl::Status ParseTransportSecurity(const ParsedArgs& parsed, DaemonFlags* f) {
  f->tls_cert = parsed.Get("tls-cert");
  f->tls_key = parsed.Get("tls-key");
  f->agent_ca = parsed.Get("agent-ca");
  f->insecure_allow_plaintext = parsed.GetBool("insecure-allow-plaintext");
  if (f->tls_cert.empty() != f->tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key go together: the certificate and its private key");
  }
  const bool tls = !f->tls_cert.empty();
  if (tls && f->agent_ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert needs --agent-ca, the CA that signs agents' certificates (DIR/ca.crt of "
        "`trainctld pki init DIR`), so that only real agents can register nodes");
  }
  if (!tls && !f->agent_ca.empty()) {
    return absl::InvalidArgumentError("--agent-ca needs --tls-cert and --tls-key");
  }
  if (tls && f->insecure_allow_plaintext) {
    return absl::InvalidArgumentError(
        "--insecure-allow-plaintext contradicts --tls-cert: choose one");
  }
  if (!tls && !f->insecure_allow_plaintext && f->http_listen != "off" &&
      !IsLoopbackAddress(f->http_listen)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http-listen ", f->http_listen,
        " is reachable from other hosts, and plaintext HTTP would let anyone who reaches it run "
        "any command on every node: serve HTTPS with --tls-cert/--tls-key/--agent-ca, or accept "
        "the risk with --insecure-allow-plaintext"));
  }
  if (!tls && !f->insecure_allow_plaintext && !IsLoopbackAddress(f->listen)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen ", f->listen,
        " is reachable from other hosts, and plaintext would let anyone who reaches it run any "
        "command on every node: serve TLS with --tls-cert/--tls-key/--agent-ca (made by "
        "`trainctld pki init DIR`), or accept the risk with --insecure-allow-plaintext"));
  }
  return absl::OkStatus();
}

// --http-allowed-hosts: names or addresses without ports, or "*".
absl::StatusOr<std::vector<std::string>> ParseAllowedHosts(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view name : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    const std::string host = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
    const bool v6 = absl::StartsWith(host, "[") && absl::EndsWith(host, "]");
    const char* allowed = v6 ? "[]0123456789abcdef:." : "abcdefghijklmnopqrstuvwxyz0123456789.-_";
    if (host != "*" && (host.empty() || host.find_first_not_of(allowed) != std::string::npos)) {
      return BadFlagValue("--http-allowed-hosts",
                          "host names or addresses without a port ([::1] for IPv6), or *, "
                          "separated by commas",
                          name);
    }
    out.push_back(host);
  }
  return out;
}

// Flags that are actions of one run, not settings: a config file cannot set them.
const std::set<std::string>& NotKeys() {
  static const std::set<std::string> keys = {"config", "print-config", "check-db", "help",
                                             "version"};
  return keys;
}

// --lease-duration and the --advertise-* addresses, which only a PostgreSQL store uses.
absl::Status ParseLeaseFlags(const ParsedArgs& parsed, DaemonFlags& f) {
  for (auto [name, value] :
       {std::pair<const char*, std::string*>{"advertise-address", &f.advertise_address},
        {"advertise-http-address", &f.advertise_http_address}}) {
    if (!parsed.IsSet(name)) continue;
    *value = parsed.Get(name);
    const size_t colon = value->rfind(':');
    int port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(value->substr(colon + 1), &port) || port < 1 || port > 65535) {
      return BadFlagValue(absl::StrCat("--", name), "HOST:PORT (port 1..65535)", *value);
    }
  }
  if (std::string text = parsed.Get("lease-duration"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.lease_duration_ms,
                        ParseDurationFlag("--lease-duration", text, 1000, 60'000,
                                          "a duration between 1s and 60s, e.g. 5s"));
  }
  // --lease-duration has a default that --print-config writes out; an SQLite store ignores it.
  if (f.store.empty()) {
    for (const char* name : {"advertise-address", "advertise-http-address"}) {
      if (!parsed.Get(name).empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", name,
            " needs --store postgres://...: only trainctld sharing a PostgreSQL store lead and "
            "stand by (the SQLite store has one trainctld)"));
      }
    }
  }
  return absl::OkStatus();
}

// The flags once parsed (from the command line, or the merge of a config file and it).
absl::StatusOr<DaemonFlags> FromParsed(const ParsedArgs& parsed) {
  DaemonFlags f;
  f.print_config = parsed.GetBool("print-config");
  for (const char* name : kQuotaFlags) {
    if (parsed.IsSet(name) && parsed.Get(name).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    }
  }
  for (auto [name, value] : {std::pair<const char*, std::string*>{"data-dir", &f.data_dir},
                             {"store", &f.store},
                             {"listen", &f.listen},
                             {"http-listen", &f.http_listen},
                             {"checkpoint-root", &f.checkpoint_root},
                             {"log-level", &f.log_level},
                             {"log-format", &f.log_format}}) {
    if (parsed.IsSet(name)) *value = parsed.Get(name);
  }
  if (f.data_dir.empty()) return absl::InvalidArgumentError("--data-dir is required");
  TC_RETURN_IF_ERROR(CheckLogLevel(f.log_level));
  TC_RETURN_IF_ERROR(CheckLogFormat(f.log_format));
  f.check_db = parsed.GetBool("check-db");
  if (!f.store.empty() && !absl::StartsWith(f.store, "postgres://") &&
      !absl::StartsWith(f.store, "postgresql://")) {
    return absl::InvalidArgumentError(
        "--store takes a PostgreSQL connection URI, postgres://USER@HOST/DB (leave it out for "
        "the SQLite file in --data-dir)");
  }
  if (f.check_db && !f.store.empty()) {
    return absl::InvalidArgumentError(
        "--check-db checks the SQLite file in --data-dir; with --store, use PostgreSQL's own "
        "tools (pg_amcheck)");
  }
  TC_RETURN_IF_ERROR(ParseLeaseFlags(parsed, f));
  if (std::string text = parsed.Get("heartbeat-interval"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.heartbeat_ms,
                        ParseDurationFlag("--heartbeat-interval", text, 100, 60'000,
                                          "a duration between 100ms and 60s, e.g. 2s"));
  }
  if (std::string text = parsed.Get("node-lost-timeout"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.node_lost_timeout_ms,
                        ParseDurationFlag("--node-lost-timeout", text, 1000, 3'600'000,
                                          "a duration between 1s and 1h, e.g. 15s"));
  }
  if (f.node_lost_timeout_ms < 3 * f.heartbeat_ms) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-lost-timeout (", f.node_lost_timeout_ms,
                     "ms) must be at least 3 heartbeat intervals (--heartbeat-interval ",
                     f.heartbeat_ms, "ms), or healthy nodes would be declared lost"));
  }
  if (std::string text = parsed.Get("flap-threshold"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.flap_threshold,
                        ParseWholeNumberFlag<int32_t>("--flap-threshold", text, 0, 100));
  }
  if (std::string text = parsed.Get("flap-window"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.flap_window_ms,
                        ParseDurationFlag("--flap-window", text, 1000, 7 * 86'400'000LL,
                                          "a duration between 1s and 168h, e.g. 1h"));
  }
  if (std::string text = parsed.Get("settle-window"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.settle_window_ms,
                        ParseDurationFlag("--settle-window", text, 0, 60'000,
                                          "a duration between 0s and 60s, e.g. 3s"));
  }
  if (std::string text = parsed.Get("clock-skew-tolerance"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.skew_tolerance_ms,
                        ParseDurationFlag("--clock-skew-tolerance", text, 0, 10'000,
                                          "a duration between 0s and 10s, e.g. 1s"));
  }
  if (std::string text = parsed.Get("fair-share"); !text.empty()) {
    if (text != "on" && text != "off") return BadFlagValue("--fair-share", "on or off", text);
    f.fair_share = text == "on";
  }
  if (std::string text = parsed.Get("fair-share-half-life"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(
        f.fair_share_half_life_ms,
        ParseDurationFlag("--fair-share-half-life", text, 3'600'000, 3650 * 86'400'000LL,
                          "a duration between 1h and 3650d, e.g. 7d"));
  }
  if (std::string text = parsed.Get("fair-share-resource-weights"); !text.empty()) {
    TC_RETURN_IF_ERROR(ParseResourceWeights(text, &f));
  }
  if (std::string text = parsed.Get("reservation-after"); !text.empty()) {
    if (text == "off") {
      f.reservation_after_ms = -1;
    } else {
      TC_ASSIGN_OR_RETURN(f.reservation_after_ms,
                          ParseDurationFlag("--reservation-after", text, 0, 30 * 86'400'000LL,
                                            "a duration between 0s and 30d, e.g. 10m, or off"));
    }
  }
  if (std::string text = parsed.Get("straggler-ratio"); !text.empty()) {
    if (!absl::SimpleAtod(text, &f.straggler_ratio) ||
        !(f.straggler_ratio >= 0.05 && f.straggler_ratio <= 0.95)) {
      return BadFlagValue("--straggler-ratio", "a number between 0.05 and 0.95, e.g. 0.7", text);
    }
  }
  if (std::string text = parsed.Get("straggler-window"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.straggler_window_ms,
                        ParseDurationFlag("--straggler-window", text, 1'000, 86'400'000LL,
                                          "a duration between 1s and 24h, e.g. 5m"));
  }
  if (std::string text = parsed.Get("gang-check-timeout"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.gang_check_timeout_ms,
                        ParseDurationFlag("--gang-check-timeout", text, 1'000, 3'600'000LL,
                                          "a duration between 1s and 1h, e.g. 1m"));
  }
  if (std::string text = parsed.Get("job-retention"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.job_retention_ms,
                        ParseDurationFlag("--job-retention", text, 0, 3650 * 86'400'000LL,
                                          "a duration of 0 (keep every job) or 1s to 3650d, "
                                          "e.g. 90d"));
    if (f.job_retention_ms > 0 && f.job_retention_ms < 1000) {
      return BadFlagValue("--job-retention", "0 (keep every job) or at least 1s", text);
    }
  }
  if (std::string text = parsed.Get("usage-retention"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.usage_retention_ms,
                        ParseDurationFlag("--usage-retention", text, 0, 3650 * 86'400'000LL,
                                          "a duration of 0 (keep all usage) or 1h to 3650d, "
                                          "e.g. 730d"));
    if (f.usage_retention_ms > 0 && f.usage_retention_ms < 3'600'000) {
      return BadFlagValue("--usage-retention", "0 (keep all usage) or at least 1h", text);
    }
  }
  if (std::string text = parsed.Get("finished-job-cache"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.finished_job_cache_ms,
                        ParseDurationFlag("--finished-job-cache", text, 0, 30 * 86'400'000LL,
                                          "a duration between 0s and 30d, e.g. 10m"));
  }
  if (std::string text = parsed.Get("finished-job-cache-jobs"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(
        f.finished_job_cache_jobs,
        ParseWholeNumberFlag<int64_t>("--finished-job-cache-jobs", text, 0, 10'000'000));
  }
  if (std::string text = parsed.Get("max-request-bytes"); !text.empty()) {
    absl::StatusOr<int64_t> n = ParseWholeNumberFlag<int64_t>("--max-request-bytes", text,
                                                              kMinRequestBytes, kMaxRequestBytes);
    if (!n.ok()) {
      return BadFlagValue("--max-request-bytes",
                          absl::StrCat("a whole number from ", kMinRequestBytes,
                                       " (2 MiB: the largest job spec must fit) to ",
                                       kMaxRequestBytes, " (64 MiB)"),
                          text);
    }
    f.max_request_bytes = *n;
  }
  if (std::string text = parsed.Get("max-agent-streams-per-peer"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(
        f.max_agent_streams_per_peer,
        ParseWholeNumberFlag<int64_t>("--max-agent-streams-per-peer", text, 0, 1'000'000));
  }
  if (std::string text = parsed.Get("max-new-nodes-per-peer"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(
        f.max_new_nodes_per_peer,
        ParseWholeNumberFlag<int64_t>("--max-new-nodes-per-peer", text, 0, 1'000'000));
  }
  if (std::string text = parsed.Get("http-max-streams"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.http_max_streams,
                        ParseWholeNumberFlag<int64_t>("--http-max-streams", text, 1, 4096));
  }
  if (std::string text = parsed.Get("http-allowed-hosts"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.http_allowed_hosts, ParseAllowedHosts(text));
  }
  if (f.http_listen != "off") {
    const size_t colon = f.http_listen.rfind(':');
    int port = -1;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(f.http_listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
      return BadFlagValue("--http-listen", "HOST:PORT (port 0..65535) or off", f.http_listen);
    }
  }
  if (std::string text = parsed.Get("max-watches-per-peer"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.max_watches_per_peer, ParseWholeNumberFlag<int64_t>(
                                                    "--max-watches-per-peer", text, 0, 1'000'000));
  }
  if (std::string text = parsed.Get("secret-env-pattern"); !text.empty()) {
    TC_RETURN_IF_ERROR(SecretRedactor::Parse(text).status());
    f.secret_env_patterns = text;
  }
  f.secret_key_file = parsed.Get("secret-key-file");
  if (std::string text = parsed.Get("max-workdir-mb"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.max_workdir_mb,
                        ParseWholeNumberFlag<int64_t>("--max-workdir-mb", text, 1, 10240));
  }
  f.log_dir = parsed.Get("log-dir");
  if (!f.log_dir.empty() && f.log_dir[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-dir must be an absolute directory, got \"", f.log_dir, "\""));
  }
  if (!f.log_dir.empty() && !f.store.empty()) {
    return absl::InvalidArgumentError(
        "--log-dir applies to the SQLite store only: with --store postgres the replicas' logs "
        "are kept in PostgreSQL");
  }
  if (std::string text = parsed.Get("log-store-max-gb"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.log_store_max_gb,
                        ParseNumberFlag("--log-store-max-gb", text, NumberSign::kPositive,
                                        "a positive number of GB (e.g. 10 or 0.5)"));
  }
  if (std::string text = parsed.Get("port-range"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.port_range, ParsePortRange(text));
  }
  if (std::string text = parsed.Get("replica-uid-range"); !text.empty()) {
    TC_ASSIGN_OR_RETURN(f.replica_uid_range, sched::ParseUidRange("--replica-uid-range", text));
  }
  if (std::string text = parsed.Get("checkpoint-allowed-roots"); !text.empty()) {
    for (absl::string_view root : absl::StrSplit(text, ',', absl::SkipEmpty())) {
      if (root.empty() || root[0] != '/') {
        return absl::InvalidArgumentError(absl::StrCat("--checkpoint-allowed-roots: \"", root,
                                                       "\" is not an absolute directory"));
      }
      f.checkpoint_allowed_roots.emplace_back(root);
    }
  }
  TC_RETURN_IF_ERROR(ParseDefaultQuota(parsed, &f.default_quota));
  TC_RETURN_IF_ERROR(ParseTransportSecurity(parsed, &f));
  if (f.checkpoint_root.empty()) f.checkpoint_root = DefaultCheckpointRoot(f.data_dir);
  return f;
}

}  // namespace

absl::StatusOr<DaemonFlags> ParseDaemonFlags(const std::vector<std::string>& args) {
  const std::vector<FlagSpec> specs = AllFlags(DaemonFlagGroups());
  ParsedArgs cmdline;
  absl::Status status = ParseArgs(args, specs, {}, &cmdline);
  // What came before an error was parsed: --help and --version win over what follows them.
  if (cmdline.GetBool("help") || cmdline.GetBool("version")) {
    DaemonFlags f;
    f.help = cmdline.GetBool("help");
    f.version = cmdline.GetBool("version");
    return f;
  }
  if (!status.ok()) return Reword(cmdline.error());
  TC_ASSIGN_OR_RETURN(ConfiguredArgs configured,
                      WithConfigFile(cmdline, args, specs, NotKeys(), "config"));
  absl::StatusOr<DaemonFlags> f = FromParsed(configured.parsed);
  if (!f.ok()) return configured.Attribute(f.status());
  f->config_path = cmdline.Get("config");
  return f;
}

std::vector<std::pair<std::string, std::string>> DaemonConfigEntries(const DaemonFlags& f) {
  const v1::Quota& q = f.default_quota;
  auto opt = [](bool has, const std::string& value) { return has ? value : std::string(); };
  return {
      {"data-dir", f.data_dir},
      {"store", RedactUriPassword(f.store)},
      {"lease-duration", FormatDurationExact(f.lease_duration_ms)},
      {"advertise-address", f.advertise_address},
      {"advertise-http-address", f.advertise_http_address},
      {"listen", f.listen},
      {"http-listen", f.http_listen},
      {"http-max-streams", absl::StrCat(f.http_max_streams)},
      {"http-allowed-hosts", absl::StrJoin(f.http_allowed_hosts, ",")},
      {"checkpoint-root", f.checkpoint_root},
      {"checkpoint-allowed-roots", absl::StrJoin(f.checkpoint_allowed_roots, ",")},
      {"replica-uid-range", f.replica_uid_range.ToString()},
      {"heartbeat-interval", FormatDurationExact(f.heartbeat_ms)},
      {"node-lost-timeout", FormatDurationExact(f.node_lost_timeout_ms)},
      {"flap-threshold", absl::StrCat(f.flap_threshold)},
      {"flap-window", FormatDurationExact(f.flap_window_ms)},
      {"settle-window", FormatDurationExact(f.settle_window_ms)},
      {"clock-skew-tolerance", FormatDurationExact(f.skew_tolerance_ms)},
      {"fair-share", f.fair_share ? "on" : "off"},
      {"fair-share-half-life", FormatDurationExact(f.fair_share_half_life_ms)},
      {"fair-share-resource-weights",
       absl::StrCat("gpu=", f.fair_share_gpu_weight, ",cpu=", f.fair_share_cpu_weight,
                    ",memory=", f.fair_share_memory_weight)},
      {"reservation-after",
       f.reservation_after_ms < 0 ? "off" : FormatDurationExact(f.reservation_after_ms)},
      {"straggler-ratio", absl::StrCat(f.straggler_ratio)},
      {"straggler-window", FormatDurationExact(f.straggler_window_ms)},
      {"gang-check-timeout", FormatDurationExact(f.gang_check_timeout_ms)},
      {"job-retention", FormatDurationExact(f.job_retention_ms)},
      {"usage-retention", FormatDurationExact(f.usage_retention_ms)},
      {"finished-job-cache", FormatDurationExact(f.finished_job_cache_ms)},
      {"finished-job-cache-jobs", absl::StrCat(f.finished_job_cache_jobs)},
      {"port-range", absl::StrCat(f.port_range.lo, "-", f.port_range.hi)},
      {"max-request-bytes", absl::StrCat(f.max_request_bytes)},
      {"max-agent-streams-per-peer", absl::StrCat(f.max_agent_streams_per_peer)},
      {"max-new-nodes-per-peer", absl::StrCat(f.max_new_nodes_per_peer)},
      {"max-watches-per-peer", absl::StrCat(f.max_watches_per_peer)},
      {"secret-env-pattern", f.secret_env_patterns},
      {"secret-key-file", f.secret_key_file},
      {"max-workdir-mb", absl::StrCat(f.max_workdir_mb)},
      {"log-dir", f.log_dir},
      {"log-store-max-gb", absl::StrCat(f.log_store_max_gb)},
      {"log-level", f.log_level},
      {"log-format", f.log_format},
      {"tls-cert", f.tls_cert},
      {"tls-key", f.tls_key},
      {"agent-ca", f.agent_ca},
      {"insecure-allow-plaintext", f.insecure_allow_plaintext ? "true" : "false"},
      {"default-quota-gpus", opt(q.has_gpus(), absl::StrCat(q.gpus()))},
      {"default-quota-cpu", opt(q.has_cpu(), absl::StrCat(q.cpu()))},
      {"default-quota-memory-mb", opt(q.has_memory_mb(), absl::StrCat(q.memory_mb()))},
      {"default-quota-max-running-jobs",
       opt(q.has_max_running_jobs(), absl::StrCat(q.max_running_jobs()))},
  };
}

std::string DaemonConfigText(const DaemonFlags& f) {
  return FormatConfig(
      DaemonConfigEntries(f),
      absl::StrCat("trainctld's effective configuration",
                   f.config_path.empty() ? "" : absl::StrCat(" (", f.config_path, " and flags)"),
                   "\nKeys not set are commented out."));
}

bool DaemonKeyReloads(const std::string& key) {
  return key == "log-level" || absl::StartsWith(key, "default-quota-");
}

std::string DaemonUsage() {
  return absl::StrCat(
      "Usage: trainctld --data-dir DIR [flags]\n\n"
      "The trainctl scheduler: serves the job API, keeps every job in SQLite, places replicas on\n"
      "trainctl-agent nodes and reacts to their exits.\n\n",
      FormatFlagGroups(DaemonFlagGroups()),
      "\nDurations: 500ms, 30s, 5m, 1h, 1h30m, or a number of seconds.\n");
}

}  // namespace trainctl::server
