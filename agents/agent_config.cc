#include "agents/agent_config.h"

#include <spdlog/spdlog.h>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"

namespace trainctl::agent {
namespace {

std::string Ms(absl::Duration d) { return FormatDurationExact(absl::ToInt64Milliseconds(d)); }

std::string Pairs(const std::map<std::string, std::string>& map) {
  return absl::StrJoin(map, ",", absl::PairFormatter("="));
}

const char* Bool(bool b) { return b ? "true" : "false"; }

// --max-log-mb's value for a cap of `bytes`.
std::string MaxLogMb(int64_t bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  if (bytes % kMiB == 0) return absl::StrCat(bytes / kMiB);
  return absl::StrFormat("%.17g", static_cast<double>(bytes) / kMiB);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> AgentConfigEntries(const AgentFlags& f) {
  const HostCheckConfig& host = f.checks.host;
  std::vector<std::pair<std::string, std::string>> entries = {
      {"scheduler", f.scheduler},
      {"node", f.node},
      {"work-dir", f.work_dir},
      {"tls-ca", f.tls_ca},
      {"tls-cert", f.tls_cert},
      {"tls-key", f.tls_key},
      {"insecure-allow-plaintext", Bool(f.insecure_allow_plaintext)},
      {"address", f.address},
      {"cpus", f.cpus ? absl::StrCat(*f.cpus) : ""},
      {"memory-mb", f.memory_mb ? absl::StrCat(*f.memory_mb) : ""},
      {"gpus", f.gpus ? absl::StrCat(*f.gpus) : ""},
      {"reserve-cpu", absl::StrCat(f.reserve_cpu)},
      {"reserve-memory-mb", absl::StrCat(f.reserve_memory_mb)},
      {"labels", Pairs(f.labels)},
      {"pass-env", absl::StrJoin(f.pass_env, ",")},
      {"run-as", Pairs(f.run_as.by_project)},
      {"default-run-as-user", f.run_as.default_user},
      {"project-uid-groups", absl::StrJoin(f.run_as.project_uid_groups, ",")},
      {"allow-root-replicas", Bool(f.run_as.allow_root)},
      {"pids-max", absl::StrCat(f.pids_max)},
      {"job-tmpfs-size", f.job_tmpfs_size.empty() ? "0" : f.job_tmpfs_size},
      {"cpu-policy", f.cpu_policy == CpuPolicy::kStatic ? "static" : "none"},
      {"log-level", f.log_level},
      {"log-format", f.log_format},
      {"max-log-mb", MaxLogMb(f.max_log_bytes)},
      {"no-log-shipping", Bool(f.no_log_shipping)},
      {"log-ship-interval", Ms(f.log_ship_interval)},
      {"stack-dump-program", f.stack_dump_program},
      {"stack-timeout", Ms(f.stack_timeout)},
      {"stack-max-kb", absl::StrCat(f.stack_max_kb)},
      {"metrics-listen", f.metrics_listen},
      {"inject-launch-failures", absl::StrCat(f.inject_launch_failures)},
      {"inject-exit-report-delay",
       f.delay_exit_status < 0 ? ""
                               : absl::StrCat(f.delay_exit_status, ":", Ms(f.exit_report_delay))},
      {"shim", f.shim},
      {"heartbeat-ack-timeout", f.heartbeat_ack_timeout ? Ms(*f.heartbeat_ack_timeout) : ""},
      {"state-dir", f.state_dir},
      {"maintenance-file", f.maintenance_file},
      {"check-disk-root-path", host.root.path},
      {"check-disk-root-gb", absl::StrCat(host.root.min_free_gb)},
      {"check-disk-shm-path", host.shm.path},
      {"check-disk-shm-gb", absl::StrCat(host.shm.min_free_gb)},
      {"check-disk-cache-gb", absl::StrCat(host.cache.min_free_gb)},
      {"infiniband", Bool(host.infiniband)},
      {"check-memlock-kib", absl::StrCat(host.min_memlock_kib)},
      {"check-nofile", absl::StrCat(host.min_nofile)},
      {"check-stack-kib", absl::StrCat(host.min_stack_kib)},
      {"check-nproc", absl::StrCat(host.min_nproc)},
      {"preflight", Bool(f.checks.preflight)},
      {"health-check-interval", Ms(f.checks.health_check_interval)},
      {"health-check-program", f.checks.health_check_program},
      {"health-check-timeout", Ms(f.checks.health_check_timeout)},
      {"startup-script", f.checks.startup_script},
      {"startup-script-timeout", Ms(f.checks.startup_script_timeout)},
      {"gang-check-port", absl::StrCat(f.gang_check.port)},
      {"gang-check-program", f.gang_check.program},
      {"gang-check-min-gbps", absl::StrCat(f.gang_check.min_gbps)},
      {"gang-check-min-tcp-gbps", absl::StrCat(f.gang_check.min_tcp_gbps)},
  };
  for (auto& entry : ImageConfigEntries(f.images)) entries.push_back(std::move(entry));
  return entries;
}

std::string AgentConfigText(const AgentFlags& f) {
  return FormatConfig(
      AgentConfigEntries(f),
      absl::StrCat("trainctl-agent's effective configuration",
                   f.config_path.empty() ? "" : absl::StrCat(" (", f.config_path, " and flags)"),
                   "\nKeys not set are commented out."));
}

bool AgentKeyReloads(const std::string& key) {
  static const std::set<std::string> kKeys = {
      "log-level",         "check-disk-root-path", "check-disk-root-gb", "check-disk-shm-path",
      "check-disk-shm-gb", "check-disk-cache-gb",  "infiniband",         "check-memlock-kib",
      "check-nofile",      "check-stack-kib",      "check-nproc"};
  return kKeys.count(key) > 0;
}

AgentReloader::AgentReloader(std::vector<std::string> args, AgentFlags flags, Agent* agent)
    : args_(std::move(args)), agent_(agent), running_(std::move(flags)) {}

std::vector<ConfigChange> AgentReloader::Reload() {
  absl::MutexLock lock(&mu_);
  if (running_.config_path.empty()) {
    spdlog::info("SIGHUP: trainctl-agent runs without --config: there is no file to re-read");
    return {};
  }
  absl::StatusOr<AgentFlags> now = ParseAgentFlags(args_);
  if (now.ok()) {
    if (absl::Status s = ResolvePrograms(&*now); !s.ok()) now = s;
  }
  if (!now.ok()) {
    spdlog::error("SIGHUP: {}; the running configuration stays as it was",
                  std::string(now.status().message()));
    return {};
  }
  std::vector<ConfigChange> changes =
      DiffConfig(AgentConfigEntries(running_), AgentConfigEntries(*now), AgentKeyReloads);
  bool checks_changed = false;
  for (const ConfigChange& c : changes) {
    if (c.key == "log-level") {
      running_.log_level = now->log_level;
      spdlog::set_level(spdlog::level::from_str(now->log_level));
    } else if (c.applies) {
      checks_changed = true;
    }
  }
  if (checks_changed) {
    running_.checks.host = now->checks.host;
    agent_->SetHostChecks(now->checks.host);
  }
  LogConfigChanges("trainctl-agent", running_.config_path, changes);
  return changes;
}

}  // namespace trainctl::agent
