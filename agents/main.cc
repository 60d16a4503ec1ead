// trainctl-agent: runs the replicas the trainctl scheduler places on this node.
//
// Parses flags, then runs the agent (agents/agent_daemon.h) until SIGTERM or SIGINT, when
// it exits 0 and leaves every replica running under its trainctl-shim: the next agent on the
// work dir takes them over (a restart or an upgrade never ends training). Exit 2 on a bad flag,
// 1 when the host cannot be set up. With --check it only runs the host check items once (exit 0
// when all passed, 1 otherwise; the health program too, when given). With --stop-replicas it stops
// every replica of the work dir, waits for them and exits (0 when all ended).
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/agent_config.h"
#include "agents/agent_daemon.h"
#include "agents/agent_flags.h"
#include "agents/check_program.h"
#include "agents/host_checks.h"
#include "agents/launcher.h"
#include "common/log_context.h"
#include "common/logging.h"
#include "common/mutex_mode.h"

namespace trainctl::agent {
namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "trainctl-agent: %s\n", message.c_str());
  return code;
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
  return RunAgentDaemon(args, *flags);
}

}  // namespace
}  // namespace trainctl::agent

int main(int argc, char** argv) { return trainctl::agent::Main(argc, argv); }
