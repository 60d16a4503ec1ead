// Runs an operator's check program (the health check program, the startup script) to its end or
// its timeout, and turns the outcome into a check item.
//
// The program runs in a process group of its own (spawn.h) with stdin from /dev/null, stdout and
// stderr into one pipe, and the agent's environment plus `env`. Only the first line of its output
// is kept (the pipe is drained throughout, so a chatty program never blocks on it). When the
// program exits, whatever it left running in its group is SIGKILLed; when it outlives its timeout
// (or the caller gives up on it), the whole group is SIGKILLed. A descendant that left the group
// (setsid) is out of reach, as it is for replicas.
//
//   ProgramRequest request{"/etc/trainctl/health.sh", {{"TRAINCTL_NODE", "gpu-01"}},
//                          "/var/lib/trainctl", absl::Seconds(30)};
//   CheckResult item = ProgramCheckResult("health-program", request, RunProgram(request));
//   // item health-program failed: ECC errors on GPU 3   (measured "exit status 1")
//
// Thread-safe: the functions keep no state; RunProgram blocks its caller until the program ends.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "agents/host_checks.h"

namespace trainctl::agent {

struct ProgramRequest {
  // The executable; run without arguments.
  std::string path;
  // Added to (or replacing in) the agent's environment.
  std::map<std::string, std::string> env;
  // The program's working directory; must exist.
  std::string working_dir;
  // The program is killed once it has run this long.
  absl::Duration timeout = absl::Seconds(30);
  // Optional; polled while the program runs: true kills it (the agent is going away).
  std::function<bool()> cancelled;
};

struct ProgramOutcome {
  enum class End {
    // It exited; see exit_code.
    kExited,
    // A signal ended it; see signal.
    kSignaled,
    // It outlived its timeout and was killed.
    kTimedOut,
    // The caller gave up on it (ProgramRequest::cancelled) and it was killed.
    kCancelled,
    // It could not be started; see error.
    kNotStarted,
  };
  End end = End::kNotStarted;
  int exit_code = -1;
  int signal = 0;
  // The first line of its combined stdout and stderr, without the newline, at most 512 bytes,
  // as valid UTF-8.
  std::string first_line;
  // kNotStarted: why ("command not found: /etc/health.sh").
  std::string error;
};

// Runs the program to its end, its timeout or its cancellation. Returns once its process is
// reaped.
ProgramOutcome RunProgram(const ProgramRequest& request);

// The check item `item` for an outcome: passed when the program exited 0. measured is
// "exit status N", "killed by signal N", "timed out" or "not started"; threshold "exit status 0";
// message the program's first output line, else "timed out after <timeout>", the start error, or
// a description of the status.
CheckResult ProgramCheckResult(const std::string& item, const ProgramRequest& request,
                               const ProgramOutcome& outcome);

}  // namespace trainctl::agent
