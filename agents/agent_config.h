// trainctl-agent's configuration as a config file: what --print-config prints, and SIGHUP's
// re-read of --config (common/config_file.h).
//
// SIGHUP applies log-level and the host check thresholds (--check-disk-*, --check-memlock-kib,
// --check-nofile, --check-stack-kib, --check-nproc, --infiniband) at once: the next check run
// uses them, and the next registration describes them. Every other change is logged as needing a
// restart of the agent (which never ends the replicas), and the running value stays. A file that
// no longer parses changes nothing; the error is logged.
//
// Thread-safe: Reload() from the signal thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agents/agent.h"
#include "agents/agent_flags.h"
#include "common/config_file.h"

namespace trainctl::agent {

// Every setting as (config key, value), in --help's order; an unset optional value is "".
std::vector<std::pair<std::string, std::string>> AgentConfigEntries(const AgentFlags& flags);

// AgentConfigEntries as a config file trainctl-agent accepts.
std::string AgentConfigText(const AgentFlags& flags);

// Whether a change of `key` applies to a running agent at SIGHUP.
bool AgentKeyReloads(const std::string& key);

class AgentReloader {
 public:
  // `args`: the command line after the program name, as parsed into `flags`. `agent` (not
  // owned) must outlive the reloader.
  AgentReloader(std::vector<std::string> args, AgentFlags flags, Agent* agent);

  // Re-reads and applies; returns what changed (logged either way). Without --config, nothing.
  std::vector<ConfigChange> Reload() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::vector<std::string> args_;
  Agent* const agent_;
  absl::Mutex mu_;
  AgentFlags running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::agent
