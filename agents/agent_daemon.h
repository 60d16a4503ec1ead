// trainctl-agent as an object: what main() runs, and what tests start and stop in process.
//
//   AgentDaemon daemon(args, *flags);
//   if (absl::Status s = daemon.Init(); !s.ok()) return daemon.ReportFailure(s);
//   daemon.Start();                      // the Agent runs on a thread of its own
//   ... daemon.Reload() at SIGHUP ...
//   daemon.Shutdown();                   // replicas keep running under their shims
//
// Init maps the flags to the Agent's options (AgentOptionsFromFlags: detecting what the flags
// leave to the host), makes the work and state dirs, creates the Agent and, with
// --metrics-listen, binds GET /metrics. Every failure is an error naming what failed; what Init
// made is undone by Shutdown (or the destructor). Start runs the Agent (it connects, adopts the
// replicas of the last agent on the work dir and serves) and tells systemd it is ready.
// Shutdown ends it as SIGTERM does: launches already received finish starting, reports get up to
// 2 s to be acknowledged, and the replicas keep running. Safe at any point, and more than once.
//
// Thread-safety: Init, Start and Shutdown from one thread; Reload from any once Init succeeded,
// never during Shutdown.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/agent.h"
#include "agents/agent_config.h"
#include "agents/agent_flags.h"
#include "agents/agent_metrics.h"
#include "common/config_file.h"
#include "common/metrics_http.h"
#include "common/watchdog.h"

namespace trainctl::agent {

// The flags and the detected host (CPUs, memory, GPUs, the host name) as the Agent's options, all
// but work_dir and state_dir. INVALID_ARGUMENT for flags that contradict the host (reserves
// larger than its capacity) or a malformed --scheduler list; FAILED_PRECONDITION when the shim
// cannot be run.
absl::StatusOr<Agent::Options> AgentOptionsFromFlags(const AgentFlags& flags);

// `path` made (mkdir -p) and absolute, symlinks resolved; the error names `flag`.
absl::StatusOr<std::string> ResolveDir(const std::string& flag, const std::string& path);

class AgentDaemon {
 public:
  // `args`: the command line after the program name, as parsed into `flags` (SIGHUP parses it
  // again); ResolvePrograms has run on `flags`.
  AgentDaemon(std::vector<std::string> args, AgentFlags flags);
  ~AgentDaemon();
  AgentDaemon(const AgentDaemon&) = delete;
  AgentDaemon& operator=(const AgentDaemon&) = delete;

  // See the file comment. Call once.
  absl::Status Init();
  // REQUIRES: Init succeeded. Call once.
  void Start();
  void Shutdown();

  // Prints "trainctl-agent: MESSAGE" of an error of Init on stderr; returns the exit status: 2
  // for flags that contradict the host, else 1.
  int ReportFailure(const absl::Status& error) const;

  // SIGHUP: re-reads --config (agents/agent_config.h). REQUIRES: Init succeeded.
  std::vector<ConfigChange> Reload();

  // After Init: the port GET /metrics is served on; 0 without --metrics-listen.
  int metrics_port() const { return metrics_port_; }
  // After Init: the options the Agent runs with.
  const Agent::Options& options() const { return options_; }

 private:
  const std::vector<std::string> args_;
  const AgentFlags flags_;
  int failure_exit_ = 1;
  bool shut_down_ = false;
  Agent::Options options_;
  // The replica monitor's proof of life: systemd's watchdog pings, and a log line when it stalls.
  // It outlives the agent, which calls it.
  std::optional<Watchdog> watchdog_;
  // --metrics-listen: counted from the agent's start, served once it exists.
  std::optional<AgentMetrics> metrics_;
  std::unique_ptr<Agent> agent_;
  std::optional<trainctl::metrics::MetricsHttpServer> metrics_server_;
  int metrics_port_ = 0;
  std::unique_ptr<AgentReloader> config_;
  // Runs Agent::Run().
  std::thread run_;
};

// main()'s trainctl-agent: blocks SIGTERM, SIGINT and SIGHUP, runs an AgentDaemon until SIGTERM
// or SIGINT, re-reading --config at SIGHUP, and returns the exit status.
int RunAgentDaemon(const std::vector<std::string>& args, const AgentFlags& flags);

}  // namespace trainctl::agent
