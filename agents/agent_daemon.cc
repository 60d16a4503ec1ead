#include "agents/agent_daemon.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/gpu_inventory.h"
#include "agents/host_resources.h"
#include "agents/run_files.h"
#include "agents/shim_spawn.h"
#include "common/leader_hint.h"
#include "common/pem_file.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {

absl::StatusOr<Agent::Options> AgentOptionsFromFlags(const AgentFlags& flags) {
  Agent::Options options;
  // Several addresses (trainctld replicas): each HOST:PORT, none twice. One is a gRPC target.
  if (flags.scheduler.find(',') != std::string::npos) {
    TC_RETURN_IF_ERROR(ParseAddressList(flags.scheduler, "--scheduler").status());
  }
  options.scheduler = flags.scheduler;
  options.heartbeat_ack_timeout = flags.heartbeat_ack_timeout;
  options.node = flags.node;
  options.labels = flags.labels;
  options.images = flags.images;
  options.pass_env = flags.pass_env;
  if (!flags.tls_ca.empty()) {
    options.tls_ca_path = flags.tls_ca;
    TC_ASSIGN_OR_RETURN(options.tls_ca_pem, ReadPemFile("--tls-ca", flags.tls_ca));
    TC_ASSIGN_OR_RETURN(options.tls_cert_pem, ReadPemFile("--tls-cert", flags.tls_cert));
    TC_ASSIGN_OR_RETURN(options.tls_key_pem, ReadPemFile("--tls-key", flags.tls_key));
  }
  options.run_as = flags.run_as;
  TC_ASSIGN_OR_RETURN(options.run_as.project_uid_gids,
                      LookUpGroups(flags.run_as.project_uid_groups));
  options.inject_launch_failures = flags.inject_launch_failures;
  options.pids_max = flags.pids_max;
  options.job_tmpfs_size = flags.job_tmpfs_size;
  options.max_log_bytes = flags.max_log_bytes;
  options.ship_logs = !flags.no_log_shipping;
  options.log_ship_interval = flags.log_ship_interval;
  options.stacks.program = absl::StrSplit(flags.stack_dump_program, ' ', absl::SkipEmpty());
  options.stacks.timeout = flags.stack_timeout;
  options.stacks.max_bytes = static_cast<size_t>(flags.stack_max_kb) << 10;
  options.cpu_policy = flags.cpu_policy;
  options.min_shared_cpus = std::max(1, static_cast<int>(std::ceil(flags.reserve_cpu)));
  options.delay_exit_status = flags.delay_exit_status;
  options.shim_path = flags.shim.empty() ? DefaultShimPath() : flags.shim;
  options.maintenance_file = flags.maintenance_file;
  options.fabric = flags.gang_check;
  if (access(options.shim_path.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run the replicas' supervisor ", options.shim_path,
                     " (--shim): install trainctl-shim next to trainctl-agent"));
  }
  options.exit_report_delay = flags.exit_report_delay;
  options.address = flags.address;
  if (options.address.empty()) {
    char host[HOST_NAME_MAX + 1] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) return absl::InternalError("gethostname failed");
    options.address = host;
  }
  HostResources host;
  if (!flags.cpus || !flags.memory_mb) {
    absl::StatusOr<HostResources> detected = DetectHostResources();
    if (!detected.ok()) return detected.status();
    host = *detected;
  }
  options.gpu_devices = flags.gpus ? SyntheticGpus(*flags.gpus) : DetectGpus();
  options.capacity.set_cpu(flags.cpus.value_or(host.cpu));
  options.capacity.set_memory_mb(flags.memory_mb.value_or(host.memory_mb));
  options.capacity.set_gpus(static_cast<int32_t>(options.gpu_devices.size()));
  // The GPUs' model, for node selectors, unless the operator labelled it.
  if (std::string model = GpuModelLabel(options.gpu_devices); !model.empty()) {
    options.labels.try_emplace(kGpuModelLabel, model);
  }
  if (flags.reserve_cpu >= options.capacity.cpu()) {
    return absl::InvalidArgumentError(absl::StrCat("--reserve-cpu: ", flags.reserve_cpu,
                                                   " leaves no CPU of the node's ",
                                                   options.capacity.cpu()));
  }
  if (flags.reserve_memory_mb >= options.capacity.memory_mb()) {
    return absl::InvalidArgumentError(absl::StrCat("--reserve-memory-mb: ", flags.reserve_memory_mb,
                                                   " leaves no memory of the node's ",
                                                   options.capacity.memory_mb(), " MiB"));
  }
  options.checks = flags.checks;
  options.allocatable = options.capacity;
  options.allocatable.set_cpu(options.capacity.cpu() - flags.reserve_cpu);
  options.allocatable.set_memory_mb(options.capacity.memory_mb() - flags.reserve_memory_mb);
  return options;
}

absl::StatusOr<std::string> ResolveDir(const std::string& flag, const std::string& path) {
  if (absl::Status s = MakeDirs(path); !s.ok()) {
    return absl::InternalError(absl::StrCat(flag, ": ", s.message()));
  }
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return absl::InternalError(absl::StrCat(flag, ": cannot resolve ", path));
  }
  return std::string(resolved);
}

AgentDaemon::AgentDaemon(std::vector<std::string> args, AgentFlags flags)
    : args_(std::move(args)), flags_(std::move(flags)) {}

AgentDaemon::~AgentDaemon() { Shutdown(); }

absl::Status AgentDaemon::Init() {
  absl::StatusOr<Agent::Options> options = AgentOptionsFromFlags(flags_);
  if (!options.ok()) {
    failure_exit_ = absl::IsInvalidArgument(options.status()) ? 2 : 1;
    return options.status();
  }
  options_ = *std::move(options);
  absl::StatusOr<std::string> work_dir = ResolveDir("--work-dir", flags_.work_dir);
  if (!work_dir.ok()) return work_dir.status();
  options_.work_dir = *work_dir;
  if (!flags_.state_dir.empty()) {
    absl::StatusOr<std::string> state_dir = ResolveDir("--state-dir", flags_.state_dir);
    if (!state_dir.ok()) return state_dir.status();
    options_.state_dir = *state_dir;
  }
  watchdog_.emplace(Watchdog::FromSystemd("replica monitor", absl::Seconds(30)));
  options_.alive = watchdog_->AliveCallback();

  spdlog::info(
      "trainctl-agent {} starting: node {}, address {}, work dir {}, {} CPUs, {} MiB, "
      "{} GPUs allocatable",
      Agent::kVersion, options_.node, options_.address, options_.work_dir,
      options_.allocatable.cpu(), options_.allocatable.memory_mb(), options_.allocatable.gpus());
  if (flags_.insecure_allow_plaintext) {
    spdlog::warn(
        "INSECURE: plaintext to the scheduler at {} (--insecure-allow-plaintext): whoever can "
        "intercept the traffic or impersonate the scheduler can run any command on this host",
        options_.scheduler);
  }
  if (!flags_.metrics_listen.empty()) options_.metrics = &metrics_.emplace();
  agent_ = std::make_unique<Agent>(options_);
  if (metrics_) {
    Agent* agent = agent_.get();
    metrics_->Watch({[agent] { return static_cast<int64_t>(agent->ActiveRuns()); },
                     [agent] { return static_cast<int64_t>(agent->UnackedReports()); },
                     [agent] { return agent->Registered(); }});
    metrics_server_.emplace(flags_.metrics_listen, [this] { return metrics_->Expose(); });
    absl::StatusOr<int> port = metrics_server_->Start();
    if (!port.ok()) return port.status();
    metrics_port_ = *port;
    spdlog::info("serving GET /metrics on port {} ({})", *port, flags_.metrics_listen);
  }
  config_ = std::make_unique<AgentReloader>(args_, flags_, agent_.get());
  return absl::OkStatus();
}

void AgentDaemon::Start() {
  run_ = std::thread([this] { agent_->Run(); });
  // Type=notify: the agent takes over the replicas of the last one and runs.
  sd_notify(0, "READY=1");
}

void AgentDaemon::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (run_.joinable()) {
    // The launches received finish starting; reports get this long to be acknowledged.
    constexpr absl::Duration kAckWait = absl::Seconds(2);
    agent_->Shutdown(kAckWait);
    run_.join();
  }
  if (metrics_server_) metrics_server_->Stop();
}

int AgentDaemon::ReportFailure(const absl::Status& error) const {
  std::fprintf(stderr, "trainctl-agent: %s\n", std::string(error.message()).c_str());
  return failure_exit_;
}

std::vector<ConfigChange> AgentDaemon::Reload() { return config_->Reload(); }

int RunAgentDaemon(const std::vector<std::string>& args, const AgentFlags& flags) {
  // Blocked here, before any thread starts, so that only the wait below receives them.
  // Replicas get a clear signal mask (see spawn.h).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  AgentDaemon daemon(args, flags);
  if (absl::Status s = daemon.Init(); !s.ok()) return daemon.ReportFailure(s);
  daemon.Start();
  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    sd_notify(0, "RELOADING=1");
    daemon.Reload();
    sd_notify(0, "READY=1");
  }
  spdlog::info("received {}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  sd_notify(0, "STOPPING=1");
  daemon.Shutdown();
  return 0;
}

}  // namespace trainctl::agent
