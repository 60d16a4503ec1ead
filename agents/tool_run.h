// Running a host tool the agent drives (skopeo and umoci for the image cache, image_cache.h) to
// its end or its timeout, keeping its standard output apart from its standard error: skopeo
// prints a manifest on stdout and its reasons on stderr.
//
// The tool is started with posix_spawn (no fork: the agent's page tables are not copied, as for
// the shim, shim_spawn.h) in a session and process group of its own, with stdin from /dev/null,
// stdout and stderr into two pipes, default signal dispositions, an empty signal mask and no file
// descriptor but 0-2. Its arguments go to execve as they are: no shell ever sees them. Both pipes
// are drained throughout, so a chatty tool never blocks; the first ToolRequest::max_stdout bytes
// of stdout and the last 64 KiB of stderr are kept. When the tool outlives its timeout, its whole
// process group is SIGKILLed; when it exits, whatever it left in its group is SIGKILLed too.
//
//   ToolRequest request;
//   request.argv = {"skopeo", "inspect", "--raw", "docker://127.0.0.1:5000/team/app:1"};
//   request.env = CurrentEnvironment();
//   request.timeout = absl::Minutes(5);
//   ToolOutcome outcome = RunTool(request);
//   if (!outcome.ok()) LOG << outcome.Describe();  // "exit status 1: ... manifest unknown"
//
// Thread-safe: no state; RunTool blocks its caller until the tool's process is reaped.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace trainctl::agent {

struct ToolRequest {
  // The program and its arguments; argv[0] is looked up in the PATH of `env` unless it contains a
  // '/'. Must not be empty.
  std::vector<std::string> argv;
  // The tool's complete environment, "NAME=VALUE" entries.
  std::vector<std::string> env;
  // The tool's working directory; "" keeps the agent's.
  std::string working_dir;
  // The tool's process group is killed once it has run this long.
  absl::Duration timeout = absl::InfiniteDuration();
  // Optional; called on the caller's thread about every `tick_every` while the tool runs.
  std::function<void()> tick;
  absl::Duration tick_every = absl::Milliseconds(250);
  // At most this much of stdout is kept; the rest is read and dropped.
  size_t max_stdout = size_t{16} << 20;
  // Optional, not owned: once it is true (looked at as often as the timeout), the tool's process
  // group is killed and the outcome is kCancelled.
  const std::atomic<bool>* cancelled = nullptr;
};

struct ToolOutcome {
  enum class End {
    // It exited; see exit_code.
    kExited,
    // A signal ended it; see signal.
    kSignaled,
    // It outlived its timeout and was killed.
    kTimedOut,
    // It could not be started; see error.
    kNotStarted,
    // ToolRequest::cancelled became true and it was killed.
    kCancelled,
  };
  End end = End::kNotStarted;
  int exit_code = -1;
  int signal = 0;
  std::string stdout_text;
  // The last 64 KiB of stderr.
  std::string stderr_text;
  // kNotStarted: why ("command not found: skopeo").
  std::string error;
  // From the start to the reaping.
  absl::Duration elapsed;

  // It exited with status 0.
  bool ok() const { return end == End::kExited && exit_code == 0; }
  // "exit status 1: <the last line of stderr>", "killed by signal 9", "timed out after 5s",
  // "not started: <error>".
  std::string Describe(absl::Duration timeout) const;
};

// Runs the tool to its end or its timeout. Returns once its process is reaped.
ToolOutcome RunTool(const ToolRequest& request);

// The last non-blank line of `text`, trimmed of surrounding whitespace.
std::string LastLine(absl::string_view text);

}  // namespace trainctl::agent
