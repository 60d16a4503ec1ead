#include "agents/agent_flags.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <type_traits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/config_file.h"
#include "common/flag_values.h"
#include "common/flags.h"
#include "common/logging.h"
#include "common/names.h"
#include "common/net_address.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::agent {
namespace {

// Stores a parsed flag value in `*out`, or returns why it did not parse.
template <typename T, typename Out>
absl::Status Store(absl::StatusOr<T> value, Out* out) {
  if (!value.ok()) return value.status();
  *out = static_cast<Out>(*std::move(value));
  return absl::OkStatus();
}

// --max-log-mb: 0, or a number of MiB of at least shim::kMinLogLimit bytes.
absl::Status ParseMaxLogMb(absl::string_view flag, absl::string_view text, int64_t* bytes) {
  double mb;
  if (!absl::SimpleAtod(text, &mb) || !std::isfinite(mb) || mb < 0 || mb > (1 << 30) ||
      (mb > 0 && mb * (1 << 20) < shim::kMinLogLimit)) {
    return BadFlagValue(flag, "0 (no cap) or a number of MiB of at least 0.0625", text);
  }
  *bytes = static_cast<int64_t>(mb * (1 << 20));
  return absl::OkStatus();
}

// "500ms", "30s", "5m", "1h", "1h30m", or a bare number of seconds. `allow_zero`: "0" is
// accepted (it turns the thing off).
absl::StatusOr<absl::Duration> ParseAgentDuration(absl::string_view flag, absl::string_view text,
                                                  bool allow_zero) {
  TC_ASSIGN_OR_RETURN(
      int64_t ms,
      ParseDurationFlag(flag, text, allow_zero ? 0 : 1, std::numeric_limits<int64_t>::max(),
                        allow_zero ? "a duration like 30s, or 0 for off" : "a duration like 30s"));
  return absl::Milliseconds(ms);
}

using Kind = FlagSpec::Kind;

// The flags, grouped as --help lists them. Defaults live in AgentFlags (and NodeCheckConfig); the
// help states them.
std::vector<FlagGroup> AgentFlagGroups() {
  return {
      {"Configuration file (its keys are the flags below, without \"--\"):",
       {{"config", 0, Kind::kValue, "FILE", "",
         "read settings from FILE, a YAML mapping such as /etc/trainctl/agent.yaml; flags given "
         "here override it. SIGHUP re-reads it: log-level and the host check thresholds "
         "(--check-*, --infiniband) apply at once, other changes at the next start"},
        {"print-config", 0, Kind::kBool, "", "",
         "print the effective configuration (the file, the flags and the defaults) as a config "
         "file, and exit"}}},
      {"Required:",
       {{"scheduler", 0, Kind::kValue, "HOST:PORT[,HOST:PORT...]", "",
         "address of the scheduler's agent endpoint; several, comma-separated, for trainctld "
         "replicas: the agent tries them in turn and follows the leader a standby names"},
        {"node", 0, Kind::kValue, "NAME", "",
         "unique node name: lowercase letters, digits and '-', at most 63"},
        {"work-dir", 0, Kind::kValue, "DIR", "",
         "where job working directories and logs live; created if missing"}}},
      {"Transport security (a scheduler off loopback needs all three --tls-* flags, made by\n"
       "`trainctld pki init` and `trainctld pki issue-agent DIR NODE`, or\n"
       "--insecure-allow-plaintext):",
       {{"tls-ca", 0, Kind::kValue, "FILE", "",
         "CA certificates (PEM) the scheduler's certificate must chain to"},
        {"tls-cert", 0, Kind::kValue, "FILE", "",
         "this node's client certificate (PEM); its common name must be --node"},
        {"tls-key", 0, Kind::kValue, "FILE", "", "the private key of --tls-cert (PEM)"},
        {"insecure-allow-plaintext", 0, Kind::kBool, "", "",
         "talk plaintext gRPC to a scheduler off loopback: whoever can intercept the traffic or "
         "impersonate the scheduler can run any command on this host"}}},
      {"Optional:",
       {{"address", 0, Kind::kValue, "ADDR", "",
         "address other replicas use to reach this node (default: hostname)"},
        {"cpus", 0, Kind::kValue, "N", "",
         "CPU cores to offer (default: detected from the CPU affinity mask)"},
        {"memory-mb", 0, Kind::kValue, "N", "",
         "memory to offer, in MiB (default: detected, MemTotal)"},
        {"gpus", 0, Kind::kValue, "N", "",
         "GPUs to offer, as N synthetic devices 0..N-1 that are neither probed nor isolated "
         "(default: detected with nvidia-smi, else /dev/nvidia<N>)"},
        {"reserve-cpu", 0, Kind::kValue, "N", "", "CPU cores kept back from trainctl (default: 0)"},
        {"reserve-memory-mb", 0, Kind::kValue, "N", "",
         "memory kept back from trainctl, in MiB (default: 0)"},
        {"heartbeat-ack-timeout", 0, Kind::kValue, "DURATION", "",
         "leave the stream and dial again (the next --scheduler address) when the scheduler "
         "answers no heartbeat for this long; 0: never (default: 3 heartbeat intervals, >= 3s)"},
        {"labels", 0, Kind::kValue, "k=v,k=v", "",
         "node labels for nodeSelector and topology, e.g. topology.rack=r1 (default: none)"},
        {"pass-env", 0, Kind::kValue, "NAME,...", "",
         "the variables of the agent's own environment that replicas inherit; nothing else of it "
         "reaches a job; \"\" for none (a replica without PATH gets a standard one) "
         "(default: PATH,LANG,HOME)"},
        {"run-as", 0, Kind::kValue, "p=u,p=u", "",
         "when the agent runs as root: the user each listed project's replicas run as, over "
         "the runAsUser of the project's quota (default: none)"},
        {"default-run-as-user", 0, Kind::kValue, "USER", "",
         "when the agent runs as root: the user of replicas whose project has neither a --run-as "
         "entry nor a runAsUser, instead of the project's own uid (trainctld "
         "--replica-uid-range); HOME (if passed) becomes the user's home. The agent gives "
         "--work-dir and its jobs/ directory search permission for all (o+x) and each run its "
         "own 0700 directory. An agent that is not root runs replicas as itself "
         "(default: none: each project's own uid)"},
        {"project-uid-groups", 0, Kind::kValue, "GROUP,...", "",
         "supplementary groups of replicas under their project's own uid, e.g. a shared "
         "dataset directory's; each must exist on this host (default: none)"},
        {"allow-root-replicas", 0, Kind::kBool, "", "",
         "let a replica run as root (uid 0) when --run-as, the quota's runAsUser or "
         "--default-run-as-user says so; without it such a launch fails (default: false)"},
        {"pids-max", 0, Kind::kValue, "N", "",
         "pids.max of each replica's cgroup: its processes and threads; 0 for no limit "
         "(default: 32768)"},
        {"job-tmpfs-size", 0, Kind::kValue, "SIZE", "",
         "when the agent runs as root: the replicas of each job on this host share a private "
         "/tmp and /dev/shm, one tmpfs of this size (a percentage of the host's memory, or a size "
         "such as 64g) removed when the job's last replica here ended; its pages count against "
         "the memory of the replica that wrote them; 0: the host's /tmp and /dev/shm "
         "(default: 50%)"},
        {"cpu-policy", 0, Kind::kValue, "POLICY", "",
         "none: replicas share the CPUs, each held to its cpu request by a CFS quota; static: a "
         "replica asking for a whole number of CPUs gets that many to itself (cpuset), the rest "
         "share what remains; the lowest --reserve-cpu CPUs (rounded up, at least 1) always stay "
         "shared (default: none)"},
        {"log-level", 0, Kind::kValue, "LEVEL", "",
         "trace, debug, info, warn, error, critical or off (default: info)"},
        {"metrics-listen", 0, Kind::kValue, "HOST:PORT", "",
         "serve Prometheus metrics as GET /metrics on this address, plain HTTP without "
         "authentication: keep it on loopback or a management network; port 0 picks a free one "
         "(default: off)"},
        {"log-format", 0, Kind::kValue, "FORMAT", "",
         "text, or json: one JSON object per line with time, level, logger, msg and the job, "
         "node and replica it is about; under systemd the journal gets JOB_ID, NODE and REPLICA "
         "fields either way (default: text)"},
        {"max-log-mb", 0, Kind::kValue, "MB", "",
         "the most of each replica run's log (stdout and stderr) kept on disk: past it, the "
         "first and the last half stay and `trainctl logs` shows one line saying how many bytes "
         "of the middle were dropped; fractions allowed, at least 0.0625; 0 for no cap "
         "(default: 1024)"},
        {"no-log-shipping", 0, Kind::kBool, "", "",
         "do not ship the replicas' logs to trainctld, whose copy outlives this node: `trainctl "
         "logs` then reads only from connected agents (default: false)"},
        {"log-ship-interval", 0, Kind::kValue, "D", "",
         "how often the replicas' new log output is shipped to trainctld (default: 200ms)"},
        {"stack-dump-program", 0, Kind::kValue, "CMD", "",
         "the program that prints a process's stacks before trainctl stops a hung replica or the "
         "replicas of an ending attempt (`trainctl stacks`), with its arguments separated by "
         "spaces; the pid is added last (default: gdb in batch mode: every thread's native stack "
         "and, with python3.11-dbg installed, the Python stack)"},
        {"stack-timeout", 0, Kind::kValue, "D", "",
         "the longest a replica's stack capture may take (all its processes at once); the stop "
         "waits for it; 0 captures none (default: 10s)"},
        {"stack-max-kb", 0, Kind::kValue, "KB", "",
         "the most text kept of one replica's stacks (default: 256)"},
        {"inject-launch-failures", 0, Kind::kValue, "N", "",
         "testing only: fail the first N launches as the host's fault, -1 for every launch "
         "(default: 0)"},
        {"inject-exit-report-delay", 0, Kind::kValue, "CODE:D", "",
         "testing only: hold the exit report of every run that exited with status CODE (a run "
         "killed by signal N has status 128+N) for D before sending it, e.g. 134:2s "
         "(default: none)"},
        {"help", 'h', Kind::kBool, "", "", "print this text and exit"}}},
      {"Replicas across agent restarts (every replica has a trainctl-shim of its own; replicas\n"
       "keep running when the agent stops, crashes or is upgraded, and the next agent on the same\n"
       "--work-dir takes them over):",
       {{"stop-replicas", 0, Kind::kBool, "", "",
         "stop every replica started from --work-dir (SIGTERM, SIGKILL after --stop-grace), wait "
         "until they ended and exit; the next agent reports their exits. For a host being "
         "retired (ExecStop=); drain the node first. Needs only --work-dir (and the agent's "
         "--state-dir)"},
        {"stop-grace", 0, Kind::kValue, "D", "",
         "with --stop-replicas: how long replicas get to exit after SIGTERM (default: 10s)"},
        {"shim", 0, Kind::kValue, "FILE", "",
         "the trainctl-shim binary (default: trainctl-shim next to trainctl-agent)"},
        {"state-dir", 0, Kind::kValue, "DIR", "",
         "where the replicas' run directories and the agent's report journal live: state that "
         "must outlive the agent, not the host, so a tmpfs such as /run/trainctl-agent suits it "
         "best (creating and removing files there costs far less); created if missing; the next "
         "agent must get the same one (default: --work-dir)"},
        {"maintenance-file", 0, Kind::kValue, "FILE", "",
         "a JSON file the host's tooling writes when maintenance is announced, "
         "{\"start\": \"2026-12-01T02:00:00Z\", \"duration\": \"2h\", \"reason\": \"BIOS "
         "update\"}: reported to the scheduler as the node's maintenance window, and again at "
         "each heartbeat after it changed (absent or empty: no window)"}}},
      ImageFlagGroup(),
      GangCheckFlagGroup(),
      {"Host checks (thresholds are this host's; each passes when strictly above):",
       {{"check", 0, Kind::kBool, "", "",
         "run the host check items once, print one \"item ...\" line each and exit 0 if all "
         "passed, else 1; needs only --work-dir"},
        {"gpus-needed", 0, Kind::kValue, "N", "",
         "with --check: GPUs gpu-check requires (default: 0, always passes)"},
        {"hostnames", 0, Kind::kValue, "a,b", "",
         "with --check: hostnames dns must resolve (default: none)"},
        {"check-disk-root-path", 0, Kind::kValue, "P", "",
         "filesystem of disk-size root (default: /)"},
        {"check-disk-root-gb", 0, Kind::kValue, "N", "",
         "free GB disk-size root requires (default: 32)"},
        {"check-disk-shm-path", 0, Kind::kValue, "P", "",
         "filesystem of disk-size shm (default: /dev/shm)"},
        {"check-disk-shm-gb", 0, Kind::kValue, "N", "",
         "free GB disk-size shm requires (default: 1)"},
        {"check-disk-cache-gb", 0, Kind::kValue, "N", "",
         "free GB disk-size cache (the --work-dir filesystem) requires (default: 32)"},
        {"infiniband", 0, Kind::kBool, "", "",
         "this host uses an InfiniBand network: enables the ulimit item (default: false)"},
        {"check-memlock-kib", 0, Kind::kValue, "N", "",
         "ulimit: max locked memory in KiB (default: 16000)"},
        {"check-nofile", 0, Kind::kValue, "N", "", "ulimit: open files (default: 1000000)"},
        {"check-stack-kib", 0, Kind::kValue, "N", "", "ulimit: stack size in KiB (default: 8000)"},
        {"check-nproc", 0, Kind::kValue, "N", "",
         "ulimit: max user processes (default: 1000000)"}}},
      {"Health checks (each run is reported to the scheduler; a failed one isolates the node):",
       {{"preflight", 0, Kind::kBool, "", "",
         "run the host check items for each job attempt before its replicas start here; on "
         "failure they do not start; --preflight=false turns it off (default: true)"},
        {"health-check-interval", 0, Kind::kValue, "D", "",
         "run the host check items and the health program every D, starting at once; 0 turns "
         "periodic checks off, leaving only the runs the scheduler asks for (default: 60s)"},
        {"health-check-program", 0, Kind::kValue, "P", "",
         "operator's program, run periodically and after every abnormal replica exit as item "
         "health-program: exit 0 passes, else the first line of its output is the reason; gets "
         "TRAINCTL_NODE and TRAINCTL_WORK_DIR (default: none)"},
        {"health-check-timeout", 0, Kind::kValue, "D", "",
         "kill the health program's process group after D (default: 30s)"},
        {"startup-script", 0, Kind::kValue, "P", "",
         "run when the agent starts and before re-registering after a lost connection; a "
         "failure keeps the node isolated; same environment as the health program "
         "(default: none)"},
        {"startup-script-timeout", 0, Kind::kValue, "D", "",
         "kill the startup script's process group after D (default: 5m)"}}},
  };
}

// What the parser rejected, in the agent's words.
absl::Status Reword(const ArgsError& error) {
  const std::string flag = absl::StrCat("--", error.flag.name);
  switch (error.kind) {
    case ArgsError::Kind::kMissingValue:
      return absl::InvalidArgumentError(absl::StrCat(flag, ": missing value"));
    case ArgsError::Kind::kBadBool:
      return BadFlagValue(flag, "true or false", error.value);
    case ArgsError::Kind::kUnexpectedArgument:
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument \"", error.arg, "\" (see --help)"));
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag \"", error.arg.substr(0, error.arg.find('=')), "\" (see --help)"));
  }
}

}  // namespace

absl::Status ParseExitReportDelay(absl::string_view text, int* status, absl::Duration* delay) {
  constexpr char kFlag[] = "--inject-exit-report-delay";
  constexpr char kWant[] = "CODE:DURATION with CODE 0..255, such as 134:2s";
  std::pair<std::string, std::string> parts = absl::StrSplit(text, absl::MaxSplits(':', 1));
  int code;
  if (!absl::SimpleAtoi(parts.first, &code) || code < 0 || code > 255) {
    return BadFlagValue(kFlag, kWant, text);
  }
  absl::StatusOr<absl::Duration> duration = ParseAgentDuration(kFlag, parts.second, false);
  if (!duration.ok()) return BadFlagValue(kFlag, kWant, text);
  *status = code;
  *delay = *duration;
  return absl::OkStatus();
}

std::string AgentUsage() {
  return absl::StrCat(
      "usage: trainctl-agent --scheduler HOST:PORT --node NAME --work-dir DIR [flag]...\n"
      "       trainctl-agent --check --work-dir DIR [--gpus-needed N] [--hostnames a,b] "
      "[flag]...\n\n"
      "Runs the replicas the trainctl scheduler places on this node.\n\n",
      FormatFlagGroups(AgentFlagGroups()),
      "\nDurations: 500ms, 30s, 5m, 1h, 1h30m, or a number of seconds.\n\n"
      "Flags take their value as \"--flag value\" or \"--flag=value\". On SIGTERM or SIGINT the "
      "agent stops\nits replicas (SIGTERM, then SIGKILL after 10s), reports their exits and exits "
      "0. Replicas that\noutlive a crashed or SIGKILLed agent are found at the next start "
      "through the run records in\n--work-dir, registered as running, and stopped if the "
      "scheduler no longer wants them.\n");
}

namespace {

using Setter = std::function<absl::Status(const std::string& flag, const std::string& value)>;

// Sets `*out` from the flags `parsed` holds and checks the result.
absl::Status SetAndCheck(const ParsedArgs& parsed, const std::vector<FlagSpec>& specs,
                         const std::map<std::string, Setter>& setters, AgentFlags* out);

// The --tls-* flags go together, and a scheduler off loopback needs them or the escape hatch.
absl::Status CheckTransportSecurity(const AgentFlags& flags) {
  const int given = !flags.tls_ca.empty() + !flags.tls_cert.empty() + !flags.tls_key.empty();
  if (given != 0 && given != 3) {
    return absl::InvalidArgumentError(
        "--tls-ca, --tls-cert and --tls-key go together: the scheduler's CA, and this node's "
        "certificate and key (`trainctld pki issue-agent DIR NODE`)");
  }
  if (given == 3 && flags.insecure_allow_plaintext) {
    return absl::InvalidArgumentError("--insecure-allow-plaintext contradicts --tls-cert");
  }
  bool loopback = true;  // every address of --scheduler
  for (absl::string_view a : absl::StrSplit(flags.scheduler, ',')) {
    loopback = loopback && IsLoopbackAddress(std::string(absl::StripAsciiWhitespace(a)));
  }
  if (given == 0 && !flags.insecure_allow_plaintext && !loopback) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--scheduler ", flags.scheduler,
        " is another host: talk TLS with --tls-ca, --tls-cert and --tls-key (`trainctld pki "
        "issue-agent DIR ",
        flags.node, "`), or accept the risk with --insecure-allow-plaintext"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AgentFlags> ParseAgentFlags(const std::vector<std::string>& args) {
  AgentFlags flags;
  auto text = [](std::string* out) -> Setter {
    return [out](const std::string&, const std::string& value) {
      *out = value;
      return absl::OkStatus();
    };
  };
  // Setters of the values common/flag_values.h reads.
  auto boolean = [](bool* out) -> Setter {
    return [out](const std::string& f, const std::string& v) {
      return Store(ParseBoolFlag(f, v), out);
    };
  };
  auto whole = [](auto* out, int64_t min) -> Setter {
    return [out, min](const std::string& f, const std::string& v) {
      using Out = std::remove_pointer_t<decltype(out)>;
      using Int = std::conditional_t<std::is_unsigned_v<Out>, int64_t, Out>;
      return Store(ParseWholeNumberFlag<Int>(f, v, min), out);
    };
  };
  auto number = [](double* out, NumberSign sign) -> Setter {
    return [out, sign](const std::string& f, const std::string& v) {
      return Store(ParseNumberFlag(f, v, sign), out);
    };
  };
  auto duration = [](absl::Duration* out, bool allow_zero) -> Setter {
    return [out, allow_zero](const std::string& f, const std::string& v) {
      return Store(ParseAgentDuration(f, v, allow_zero), out);
    };
  };
  std::map<std::string, Setter> setters = {
      {"--scheduler", text(&flags.scheduler)},
      {"--node", text(&flags.node)},
      {"--work-dir", text(&flags.work_dir)},
      {"--address", text(&flags.address)},
      {"--tls-ca", text(&flags.tls_ca)},
      {"--tls-cert", text(&flags.tls_cert)},
      {"--tls-key", text(&flags.tls_key)},
      {"--insecure-allow-plaintext", boolean(&flags.insecure_allow_plaintext)},
      {"--log-level", text(&flags.log_level)},
      {"--metrics-listen",
       [&](auto& f, auto& v) {
         const size_t colon = v.rfind(':');
         int port = -1;
         if (colon == std::string::npos || colon == 0 ||
             !absl::SimpleAtoi(v.substr(colon + 1), &port) || port < 0 || port > 65535) {
           return BadFlagValue(f, "HOST:PORT, e.g. 127.0.0.1:9108", v);
         }
         flags.metrics_listen = v;
         return absl::OkStatus();
       }},
      {"--log-format", text(&flags.log_format)},
      {"--max-log-mb", [&](auto& f, auto& v) { return ParseMaxLogMb(f, v, &flags.max_log_bytes); }},
      {"--no-log-shipping", boolean(&flags.no_log_shipping)},
      {"--log-ship-interval", duration(&flags.log_ship_interval, false)},
      {"--stop-replicas", boolean(&flags.stop_replicas)},
      {"--stop-grace", duration(&flags.stop_grace, true)},
      {"--shim", text(&flags.shim)},
      {"--heartbeat-ack-timeout",
       [&](auto& f, auto& v) -> absl::Status {
         absl::StatusOr<absl::Duration> d = ParseAgentDuration(f, v, true);
         if (!d.ok() || (*d > absl::ZeroDuration() && *d < absl::Seconds(1))) {
           return BadFlagValue(f, "a duration of at least 1s such as 10s, or 0 for never", v);
         }
         flags.heartbeat_ack_timeout = *d;
         return absl::OkStatus();
       }},
      {"--state-dir", text(&flags.state_dir)},
      {"--maintenance-file", text(&flags.maintenance_file)},
      {"--cpus",
       [&](auto& f, auto& v) {
         return Store(ParseNumberFlag(f, v, NumberSign::kPositive), &flags.cpus.emplace());
       }},
      {"--memory-mb",
       [&](auto& f, auto& v) {
         return Store(ParseWholeNumberFlag<int64_t>(f, v, 1), &flags.memory_mb.emplace());
       }},
      {"--gpus",
       [&](auto& f, auto& v) {
         return Store(ParseWholeNumberFlag<int32_t>(f, v, 0), &flags.gpus.emplace());
       }},
      {"--reserve-cpu", number(&flags.reserve_cpu, NumberSign::kNonNegative)},
      {"--reserve-memory-mb", whole(&flags.reserve_memory_mb, 0)},
      {"--inject-launch-failures", whole(&flags.inject_launch_failures, -1)},
      {"--inject-exit-report-delay",
       [&](auto&, auto& v) {
         return ParseExitReportDelay(v, &flags.delay_exit_status, &flags.exit_report_delay);
       }},
      {"--check", boolean(&flags.check)},
      {"--infiniband", boolean(&flags.checks.host.infiniband)},
      {"--gpus-needed", whole(&flags.check_request.gpus_needed, 0)},
      {"--hostnames",
       [&](auto&, auto& v) {
         flags.check_request.hostnames = absl::StrSplit(v, ',', absl::SkipEmpty());
         return absl::OkStatus();
       }},
      {"--check-disk-root-path", text(&flags.checks.host.root.path)},
      {"--check-disk-shm-path", text(&flags.checks.host.shm.path)},
      {"--check-disk-root-gb",
       number(&flags.checks.host.root.min_free_gb, NumberSign::kNonNegative)},
      {"--check-disk-shm-gb", number(&flags.checks.host.shm.min_free_gb, NumberSign::kNonNegative)},
      {"--check-disk-cache-gb",
       number(&flags.checks.host.cache.min_free_gb, NumberSign::kNonNegative)},
      {"--check-memlock-kib", whole(&flags.checks.host.min_memlock_kib, 0)},
      {"--check-nofile", whole(&flags.checks.host.min_nofile, 0)},
      {"--check-stack-kib", whole(&flags.checks.host.min_stack_kib, 0)},
      {"--check-nproc", whole(&flags.checks.host.min_nproc, 0)},
      {"--preflight", boolean(&flags.checks.preflight)},
      {"--health-check-interval", duration(&flags.checks.health_check_interval, true)},
      {"--health-check-timeout", duration(&flags.checks.health_check_timeout, false)},
      {"--startup-script-timeout", duration(&flags.checks.startup_script_timeout, false)},
      {"--health-check-program", text(&flags.checks.health_check_program)},
      {"--startup-script", text(&flags.checks.startup_script)},
      {"--pids-max", whole(&flags.pids_max, 0)},
      {"--stack-dump-program", text(&flags.stack_dump_program)},
      {"--stack-timeout", duration(&flags.stack_timeout, true)},
      {"--stack-max-kb",
       [&](auto& f, auto& v) -> absl::Status {
         int64_t kb = 0;
         if (!absl::SimpleAtoi(v, &kb) || kb < 1 || kb > 65536) {
           return BadFlagValue(f, "a whole number of KB, 1..65536", v);
         }
         flags.stack_max_kb = kb;
         return absl::OkStatus();
       }},
      {"--job-tmpfs-size",
       [&](auto& f, auto& v) -> absl::Status {
         TC_ASSIGN_OR_RETURN(flags.job_tmpfs_size, ParseJobTmpfsSize(f, v));
         return absl::OkStatus();
       }},
      {"--pass-env",
       [&](auto&, auto& v) -> absl::Status {
         std::vector<std::string> names = absl::StrSplit(v, ',', absl::SkipEmpty());
         for (const std::string& name : names) {
           if (!IsEnvName(name)) {
             return absl::InvalidArgumentError(absl::StrCat(
                 "--pass-env: \"", name, "\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"));
           }
         }
         flags.pass_env = std::move(names);
         return absl::OkStatus();
       }},
      {"--run-as",
       [&](auto&, auto& v) {
         absl::StatusOr<std::map<std::string, std::string>> map = ParseRunAs(v);
         if (!map.ok()) return map.status();
         flags.run_as.by_project = *std::move(map);
         return absl::OkStatus();
       }},
      {"--default-run-as-user",
       [&](auto& f, auto& v) {
         if (!IsUserName(v)) {
           return BadFlagValue(f, "a user name of letters, digits, '.', '_' and '-'", v);
         }
         flags.run_as.default_user = v;
         return absl::OkStatus();
       }},
      {"--project-uid-groups",
       [&](auto& f, auto& v) {
         std::vector<std::string> names = absl::StrSplit(v, ',', absl::SkipEmpty());
         for (const std::string& name : names) {
           if (!IsUserName(name)) {
             return BadFlagValue(f, "group names of letters, digits, '.', '_' and '-'", v);
           }
         }
         flags.run_as.project_uid_groups = std::move(names);
         return absl::OkStatus();
       }},
      {"--allow-root-replicas", boolean(&flags.run_as.allow_root)},
      {"--cpu-policy",
       [&](auto&, auto& v) {
         absl::StatusOr<CpuPolicy> policy = ParseCpuPolicy(v);
         if (!policy.ok()) return policy.status();
         flags.cpu_policy = *policy;
         return absl::OkStatus();
       }},
      {"--labels",
       [&](auto&, auto& v) {
         absl::StatusOr<std::map<std::string, std::string>> labels = ParseLabels(v);
         if (!labels.ok()) return labels.status();
         flags.labels = *std::move(labels);
         return absl::OkStatus();
       }},
  };
  for (auto& [name, setter] : ImageFlagSetters(&flags.images)) setters.emplace(name, setter);
  for (auto& [name, setter] : GangCheckFlagSetters(&flags.gang_check)) {
    setters.emplace(name, setter);
  }
  const std::vector<FlagSpec> specs = AllFlags(AgentFlagGroups());
  ParsedArgs parsed;
  absl::Status status = ParseArgs(args, specs, {}, &parsed);
  // What came before an error was parsed: --help wins over what follows it.
  if (parsed.GetBool("help")) {
    flags.help = true;
    return flags;
  }
  if (!status.ok()) return Reword(parsed.error());
  // Flags that are actions of one run, not settings: a config file cannot set them.
  static const std::set<std::string> kNotKeys = {"config",      "print-config",  "help",
                                                 "check",       "stop-replicas", "stop-grace",
                                                 "gpus-needed", "hostnames"};
  TC_ASSIGN_OR_RETURN(const ConfiguredArgs configured,
                      WithConfigFile(parsed, args, specs, kNotKeys, "config"));
  flags.config_path = parsed.Get("config");
  flags.print_config = parsed.GetBool("print-config");
  absl::Status valid = SetAndCheck(configured.parsed, specs, setters, &flags);
  if (!valid.ok()) return configured.Attribute(valid);
  return flags;
}

namespace {

absl::Status SetAndCheck(const ParsedArgs& parsed, const std::vector<FlagSpec>& specs,
                         const std::map<std::string, Setter>& setters, AgentFlags* out) {
  AgentFlags& flags = *out;
  for (const FlagSpec& spec : specs) {
    if (spec.name == "help" || spec.name == "config" || spec.name == "print-config" ||
        !parsed.IsSet(spec.name)) {
      continue;
    }
    const std::string flag = absl::StrCat("--", spec.name);
    auto it = setters.find(flag);
    if (it == setters.end()) return absl::InternalError(absl::StrCat(flag, " has no setter"));
    TC_RETURN_IF_ERROR(it->second(flag, parsed.Get(spec.name)));
  }
  flags.checks.host.cache.path = flags.work_dir;
  TC_RETURN_IF_ERROR(CheckLogLevel(flags.log_level));
  TC_RETURN_IF_ERROR(CheckLogFormat(flags.log_format));
  if (flags.check || flags.stop_replicas) {
    if (flags.check && flags.stop_replicas) {
      return absl::InvalidArgumentError("--check and --stop-replicas cannot be combined");
    }
    if (flags.work_dir.empty()) return absl::InvalidArgumentError("--work-dir is required");
    return absl::OkStatus();
  }
  if (parsed.IsSet("stop-grace")) {
    return absl::InvalidArgumentError("--stop-grace is only valid with --stop-replicas");
  }
  if (flags.check_request.gpus_needed != 0 || !flags.check_request.hostnames.empty()) {
    return absl::InvalidArgumentError("--gpus-needed and --hostnames are only valid with --check");
  }
  const std::pair<const char*, const std::string*> required[] = {
      {"--scheduler", &flags.scheduler}, {"--node", &flags.node}, {"--work-dir", &flags.work_dir}};
  for (const auto& [flag, value] : required) {
    if (value->empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " is required"));
  }
  if (absl::Status s = ValidateNodeName(flags.node); !s.ok()) return s;
  return CheckTransportSecurity(flags);
}

}  // namespace

}  // namespace trainctl::agent
