// trainctl-agent: runs the replicas the trainctl scheduler places on this node.
//
// Parses flags, detects the host's resources, then runs the Agent until SIGTERM or SIGINT, when
// it exits 0 and leaves every replica running under its trainctl-shim: the next agent on the
// work dir takes them over (a restart or an upgrade never ends training). Exit 2 on a bad flag,
// 1 when the host cannot be set up. With --check it only runs the host check items once (exit 0
// when all passed, 1 otherwise; the health program too, when given). With --stop-replicas it stops
// every replica of the work dir, waits for them and exits (0 when all ended).
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "agents/agent_config.h"
#include "agents/agent_flags.h"
#include "agents/agent_metrics.h"
#include "agents/check_program.h"
#include "agents/gpu_inventory.h"
#include "agents/host_checks.h"
#include "agents/host_resources.h"
#include "agents/launcher.h"
#include "agents/run_files.h"
#include "agents/shim_spawn.h"
#include "common/leader_hint.h"
#include "common/log_context.h"
#include "common/logging.h"
#include "common/metrics_http.h"
#include "common/mutex_mode.h"
#include "common/pem_file.h"
#include "common/status_macros.h"
#include "common/watchdog.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

constexpr absl::Duration kAckWait = absl::Seconds(2);

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "trainctl-agent: %s\n", message.c_str());
  return code;
}

// Turns flags and detected resources into the Agent's options, all but work_dir. INVALID_ARGUMENT
// for flags that contradict the host (reserves larger than capacity).
absl::StatusOr<Agent::Options> MakeOptions(const AgentFlags& flags) {
  Agent::Options options;
  // Several addresses (trainctld replicas): each HOST:PORT, none twice. One is a gRPC target.
  if (flags.scheduler.find(',') != std::string::npos) {
    TC_RETURN_IF_ERROR(ParseAddressList(flags.scheduler, "--scheduler").status());
  }
  options.scheduler = flags.scheduler;
  options.heartbeat_ack_timeout = flags.heartbeat_ack_timeout;
  options.node = flags.node;
  options.labels = flags.labels;
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
  options.cpu_policy = flags.cpu_policy;
  options.min_shared_cpus = std::max(1, static_cast<int>(std::ceil(flags.reserve_cpu)));
  options.delay_exit_status = flags.delay_exit_status;
  options.shim_path = flags.shim.empty() ? DefaultShimPath() : flags.shim;
  options.maintenance_file = flags.maintenance_file;
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

// --check: runs the host check items (and the health program, when given) once against this
// host and prints one line per item. 0 when every item passed, 1 otherwise.
int RunHostChecks(const AgentFlags& flags) {
  HostCheckConfig config = flags.checks.host;
  char resolved[PATH_MAX];
  if (realpath(flags.work_dir.c_str(), resolved) != nullptr) config.cache.path = resolved;
  RealHostProbe probe;
  std::vector<CheckResult> results = RunChecks(config, probe, flags.check_request);
  if (!flags.checks.health_check_program.empty()) {
    ProgramRequest request;
    request.path = flags.checks.health_check_program;
    request.env = {{"TRAINCTL_NODE", flags.node}, {"TRAINCTL_WORK_DIR", config.cache.path}};
    request.working_dir = config.cache.path;
    request.timeout = flags.checks.health_check_timeout;
    results.push_back(ProgramCheckResult("health-program", request, RunProgram(request)));
  }
  bool all_passed = true;
  for (const CheckResult& result : results) {
    std::printf("%s\n", FormatCheckResult(result).c_str());
    all_passed = all_passed && result.passed;
  }
  return all_passed ? 0 : 1;
}

// `path` made (mkdir -p) and absolute, symlinks resolved; the error names `flag`.
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

// --stop-replicas: stops every replica the agents of this work dir started (through their shims)
// and waits until they ended. The run directories stay, so the next agent reports their exits.
int StopReplicas(const AgentFlags& flags) {
  absl::StatusOr<std::string> work_dir = ResolveDir("--work-dir", flags.work_dir);
  if (!work_dir.ok()) return Fail(1, std::string(work_dir.status().message()));
  ProcessLauncher::Options options;
  options.work_dir = *work_dir;
  if (!flags.state_dir.empty()) {
    absl::StatusOr<std::string> state_dir = ResolveDir("--state-dir", flags.state_dir);
    if (!state_dir.ok()) return Fail(1, std::string(state_dir.status().message()));
    options.state_dir = *state_dir;
  }
  options.shim_path = flags.shim;
  ProcessLauncher launcher(options);
  launcher.RejectNewLaunches("trainctl-agent --stop-replicas");
  std::vector<std::string> running = launcher.AdoptRecordedRuns();
  std::printf("stopping %zu replicas (grace %s)\n", running.size(),
              absl::FormatDuration(flags.stop_grace).c_str());
  std::fflush(stdout);
  launcher.StopAll(absl::ToInt64Milliseconds(flags.stop_grace), "trainctl-agent --stop-replicas");
  if (!launcher.WaitUntilIdle(absl::Now() + flags.stop_grace + absl::Seconds(10))) {
    return Fail(1, absl::StrCat(launcher.ActiveCount(), " replicas are still running"));
  }
  std::printf("every replica of %s has ended\n", work_dir->c_str());
  return 0;
}

int Main(int argc, char** argv) {
  UseBuildMutexChecks();
  const std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<AgentFlags> flags = ParseAgentFlags(args);
  if (!flags.ok()) return Fail(2, std::string(flags.status().message()));
  if (flags->help) {
    std::fputs(AgentUsage().c_str(), stdout);
    return 0;
  }
  if (flags->print_config) {
    std::fputs(AgentConfigText(*flags).c_str(), stdout);
    return 0;
  }
  if (absl::Status s = SetupLogging("trainctl-agent", flags->log_level, flags->log_format);
      !s.ok()) {
    return Fail(2, std::string(s.message()));
  }
  SetProcessLogNode(flags->node);  // every line of the agent is about its node
  if (absl::Status s = ResolvePrograms(&*flags); !s.ok()) {
    return Fail(2, std::string(s.message()));
  }
  if (flags->check) return RunHostChecks(*flags);
  if (flags->stop_replicas) return StopReplicas(*flags);
  absl::StatusOr<Agent::Options> options = MakeOptions(*flags);
  if (!options.ok()) {
    return Fail(absl::IsInvalidArgument(options.status()) ? 2 : 1,
                std::string(options.status().message()));
  }
  absl::StatusOr<std::string> work_dir = ResolveDir("--work-dir", flags->work_dir);
  if (!work_dir.ok()) return Fail(1, std::string(work_dir.status().message()));
  options->work_dir = *work_dir;
  if (!flags->state_dir.empty()) {
    absl::StatusOr<std::string> state_dir = ResolveDir("--state-dir", flags->state_dir);
    if (!state_dir.ok()) return Fail(1, std::string(state_dir.status().message()));
    options->state_dir = *state_dir;
  }

  // Blocked here, before any thread starts, so that only the waiter below receives them.
  // Replicas get a clear signal mask (see spawn.h).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // The replica monitor's proof of life (it runs connected to the scheduler or not): systemd's
  // watchdog pings, and a log line when it stalls. It outlives the agent, which calls it.
  Watchdog watchdog(Watchdog::FromSystemd("replica monitor", absl::Seconds(30)));
  options->alive = watchdog.AliveCallback();

  spdlog::info(
      "trainctl-agent {} starting: node {}, address {}, work dir {}, {} CPUs, {} MiB, "
      "{} GPUs allocatable",
      Agent::kVersion, options->node, options->address, options->work_dir,
      options->allocatable.cpu(), options->allocatable.memory_mb(), options->allocatable.gpus());
  if (flags->insecure_allow_plaintext) {
    spdlog::warn(
        "INSECURE: plaintext to the scheduler at {} (--insecure-allow-plaintext): whoever can "
        "intercept the traffic or impersonate the scheduler can run any command on this host",
        options->scheduler);
  }
  // --metrics-listen: counted from the agent's start, served once it exists.
  std::optional<AgentMetrics> metrics;
  if (!flags->metrics_listen.empty()) options->metrics = &metrics.emplace();
  Agent agent(*std::move(options));
  std::optional<trainctl::metrics::MetricsHttpServer> metrics_server;
  if (metrics) {
    metrics->Watch({[&agent] { return static_cast<int64_t>(agent.ActiveRuns()); },
                    [&agent] { return static_cast<int64_t>(agent.UnackedReports()); },
                    [&agent] { return agent.Registered(); }});
    metrics_server.emplace(flags->metrics_listen, [&metrics] { return metrics->Expose(); });
    absl::StatusOr<int> port = metrics_server->Start();
    if (!port.ok()) return Fail(1, std::string(port.status().message()));
    spdlog::info("serving GET /metrics on port {} ({})", *port, flags->metrics_listen);
  }
  AgentReloader config(args, *flags, &agent);
  std::thread waiter([&] {
    int sig = 0;
    for (;;) {
      sigwait(&signals, &sig);
      if (sig != SIGHUP) break;
      sd_notify(0, "RELOADING=1");
      config.Reload();
      sd_notify(0, "READY=1");
    }
    spdlog::info("received {}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    sd_notify(0, "STOPPING=1");
    agent.Shutdown(kAckWait);
  });
  // Type=notify: the agent has taken over the replicas of the last one and runs.
  sd_notify(0, "READY=1");
  agent.Run();
  waiter.join();
  return 0;
}

}  // namespace
}  // namespace trainctl::agent

int main(int argc, char** argv) { return trainctl::agent::Main(argc, argv); }
