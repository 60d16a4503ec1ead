// The trainctl-agent command line: parsing, validation and usage text.
//
//   absl::StatusOr<AgentFlags> flags = ParseAgentFlags({"--scheduler", "sched:7070", ...});
//   if (!flags.ok()) { std::cerr << flags.status().message(); return 2; }
//
// Error messages name the offending flag. Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agents/agent_image_flags.h"
#include "agents/cpu_manager.h"
#include "agents/fabric_check.h"
#include "agents/host_checks.h"
#include "agents/job_scratch.h"
#include "agents/node_checks.h"
#include "agents/run_cgroup.h"
#include "agents/run_user.h"
#include "agents/shim/log_cap.h"
#include "common/flags.h"

namespace trainctl::agent {

struct AgentFlags {
  // -h/--help was given; nothing else is validated, and errors in the arguments after it are
  // ignored.
  bool help = false;
  // --config FILE: the file the settings were read from, if any (SIGHUP re-reads it).
  std::string config_path;
  // --print-config: the caller prints AgentConfigText (agent_config.h) and exits.
  bool print_config = false;
  // Required.
  std::string scheduler;
  std::string node;
  std::string work_dir;
  // Empty: gethostname().
  std::string address;
  // Unset: detected.
  std::optional<double> cpus;
  std::optional<int64_t> memory_mb;
  std::optional<int32_t> gpus;
  int64_t reserve_memory_mb = 0;
  double reserve_cpu = 0;
  std::map<std::string, std::string> labels;
  // PEM files: the CA that signed the scheduler's certificate, and this node's client
  // certificate and key. All three or none; none only for a loopback scheduler or with
  // --insecure-allow-plaintext.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  bool insecure_allow_plaintext = false;
  // The variables of the agent's environment that replicas inherit (--pass-env).
  std::vector<std::string> pass_env = {"PATH", "LANG", "HOME"};
  // Who replicas run as when the agent runs as root: --run-as, --default-run-as-user,
  // --allow-root-replicas (run_user.h).
  RunAsPolicy run_as;
  // pids.max of each run's cgroup; 0: no limit.
  int64_t pids_max = kDefaultPidsMax;
  // --job-tmpfs-size as tmpfs's size= (ParseJobTmpfsSize); "": replicas use the host's /tmp.
  std::string job_tmpfs_size = kDefaultJobTmpfsSize;
  CpuPolicy cpu_policy = CpuPolicy::kNone;
  std::string log_level = "info";
  // --metrics-listen HOST:PORT: where GET /metrics is served; empty: nowhere.
  std::string metrics_listen;
  // --log-format: "text" or "json" (common/logging.h).
  std::string log_format = "text";
  // --max-log-mb in bytes: the most of each run's log kept on disk; 0: no cap.
  int64_t max_log_bytes = shim::kDefaultLogLimit;
  // --no-log-shipping: the runs' logs are not shipped to trainctld's copy (log_shipper.h).
  bool no_log_shipping = false;
  // --log-ship-interval: how often new log bytes are looked for and shipped.
  absl::Duration log_ship_interval = absl::Milliseconds(200);
  // --stack-dump-program: the program (and leading arguments, split on spaces) that prints a
  // process's stacks, given its pid last; empty: gdb (stack_capture.h).
  std::string stack_dump_program;
  // --stack-timeout: the longest a replica's stack capture takes; 0: none is captured.
  absl::Duration stack_timeout = absl::Seconds(10);
  // --stack-max-kb: the most text kept of one replica's stacks.
  int64_t stack_max_kb = 256;
  // Test hook: fail the first N launches as host errors; -1: all.
  int inject_launch_failures = 0;
  // Test hook (--inject-exit-report-delay CODE:DURATION): hold the exit report of every run that
  // exited with status CODE (0..255) for DURATION. -1: off.
  int delay_exit_status = -1;
  absl::Duration exit_report_delay = absl::ZeroDuration();
  // --stop-replicas: stop every replica of --work-dir (SIGTERM, SIGKILL after stop_grace), wait
  // for them and exit; only --work-dir is needed.
  bool stop_replicas = false;
  absl::Duration stop_grace = absl::Seconds(10);
  // --heartbeat-ack-timeout (leader_guard.h): unset: 3 heartbeat intervals, at least 3s; zero:
  // never; else at least 1s.
  std::optional<absl::Duration> heartbeat_ack_timeout;
  // The trainctl-shim binary; empty: next to the agent.
  std::string shim;
  // Where run directories and the report journal live; empty: --work-dir.
  std::string state_dir;
  // --maintenance-file: the JSON file the host's tooling writes a maintenance window to
  // (maintenance_file.h); empty: none.
  std::string maintenance_file;
  // --check: run the host check items once and exit; --scheduler and --node are then optional.
  bool check = false;
  // What --check checks for; only valid with --check.
  CheckRequest check_request;
  // The host check items' thresholds (--check-*, --infiniband; host.cache.path is --work-dir),
  // --preflight, --health-check-*, and --startup-script*. Programs are made absolute by
  // ResolvePrograms().
  NodeCheckConfig checks;
  // Replicas in container images (agent_image_flags.h).
  ImageFlags images;
  // The fabric check before multi-node gangs start (--gang-check-*; fabric_check.h).
  FabricCheckOptions gang_check;
};

// Parses the arguments after the program name, under the config file of --config FILE if given
// (common/config_file.h: flags override the file; an error about a value from the file names the
// file, its line and the key), with common/flags.h: "--flag value",
// "--flag=value"; a bool flag alone or as "--flag=false"; -h for --help. The last value of a flag
// given twice wins. INVALID_ARGUMENT naming the flag for an unknown flag, a missing or malformed
// value, or a missing required flag. --check needs only --work-dir.
absl::StatusOr<AgentFlags> ParseAgentFlags(const std::vector<std::string>& args);

// Makes --health-check-program and --startup-script absolute, and checks that each names an
// executable file: INVALID_ARGUMENT naming the flag otherwise. Reads the file system.
absl::Status ResolvePrograms(AgentFlags* flags);

// Parses --inject-exit-report-delay's "CODE:DURATION" (e.g. "134:2s"): CODE an exit status
// 0..255, DURATION positive. INVALID_ARGUMENT naming the flag otherwise.
absl::Status ParseExitReportDelay(absl::string_view text, int* status, absl::Duration* delay);

// The --help text: every flag with its default.
std::string AgentUsage();

// agent_flag_values.cc:
// OK when `name` is DNS-label-like: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
absl::Status ValidateNodeName(absl::string_view name);

// Parses "k=v,k=v" (empty text: no labels). Keys must be non-empty and unique.
absl::StatusOr<std::map<std::string, std::string>> ParseLabels(absl::string_view text);

// The --gang-check-* flags as --help lists them, and their setters ("--gang-check-port" -> ...),
// writing into `*options`: the port 0..65535, the minimums non-negative numbers of Gbit/s.
FlagGroup GangCheckFlagGroup();
std::map<std::string, std::function<absl::Status(const std::string& flag, const std::string& v)>>
GangCheckFlagSetters(FabricCheckOptions* options);

}  // namespace trainctl::agent
