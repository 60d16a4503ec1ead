// The agent's reading of what trainctl-shim (shim/shim_main.cc) reports about its replica: the
// run dir's status and shim.pid files and the ready line, all described in shim/shim_protocol.h.
// Parsing only; starting shims and waiting on them is the launcher's.
//
//   absl::StatusOr<ShimStatus> ready = ParseReadyLine(text_read_from_the_ready_pipe);
//   if (ready.ok() && ready->state == ShimStatus::State::kFailed) {
//     return LaunchErrorOf(*ready, argv[0], working_dir, user_name);  // as SpawnProcess says it
//   }
//   ...  // later, or after an agent restart:
//   absl::StatusOr<ShimStatus> status = ReadShimStatus(run_dir);
//   if (status.ok() && status->state == ShimStatus::State::kExited) Report(*status);
//
// Thread-safe: the functions keep no state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainctl::agent {

// One status file (or ready line) of a shim. Fields a state does not have stay at their
// defaults.
struct ShimStatus {
  enum class State {
    kRunning,  // the replica runs
    kExited,   // the replica ended and was reaped
    kFailed,   // the replica never ran: its launch failed at `failed_stage`
  };
  State state = State::kRunning;
  // The replica's pid (also its process group id) and start time in clock ticks since boot
  // (field 22 of /proc/<pid>/stat). kRunning and kExited.
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  // Wall-clock milliseconds since the epoch: when the shim forked, and when it reaped the
  // replica (kExited) or saw its launch fail (kFailed).
  int64_t start_time_ms = 0;
  int64_t end_time_ms = 0;
  // kExited: the exit code when `signal` is 0, else the signal that killed the replica.
  int exit_code = 0;
  int signal = 0;
  bool core_dumped = false;
  // The kernel OOM-killed a process of the replica's memory cgroup (--memory-events).
  bool oom_killed = false;
  // kFailed: the stage (shim_protocol.h: "stdio", "mount", "user", "chdir", "exec", "shim"), the
  // errno of the call that failed there, and the shim's description of it (empty from a ready
  // line).
  std::string failed_stage;
  int failed_errno = 0;
  std::string error;
};

// Parses a status file. INVALID_ARGUMENT when a known key has a malformed value, the state is
// missing or unknown, or a field the state needs is missing (kRunning and kExited: pid and
// start_ticks; kExited: exactly one of exit_code and signal; kFailed: failed_stage and
// failed_errno). Unknown keys are skipped: a newer shim may add some.
absl::StatusOr<ShimStatus> ParseShimStatus(const std::string& text);

// Reads and parses <run_dir>/status. NOT_FOUND when there is no such file (the shim has not
// written it yet, or never ran); INTERNAL when it cannot be read.
absl::StatusOr<ShimStatus> ReadShimStatus(const std::string& run_dir);

// Parses the ready line ("started <pid> <start_ticks> <start_time_ms>" or "failed <stage>
// <errno>", with or without its newline) into a kRunning or kFailed status. INVALID_ARGUMENT for
// anything else, including "" (the shim ended without one: see its status file).
absl::StatusOr<ShimStatus> ParseReadyLine(const std::string& text);

// Who a shim is: its pid and start time, to tell it from a later process with the same pid.
struct ShimPid {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
};

// Parses a shim.pid file; INVALID_ARGUMENT unless it has a positive pid and start_ticks.
absl::StatusOr<ShimPid> ParseShimPid(const std::string& text);

// Reads and parses <run_dir>/shim.pid. NOT_FOUND when there is no such file.
absl::StatusOr<ShimPid> ReadShimPid(const std::string& run_dir);

// The error of a launch that failed, as SpawnProcess (spawn.h) words it for the same failure:
// INVALID_ARGUMENT when the command itself is at fault (IsUserExecError at the exec stage),
// INTERNAL otherwise. `argv0` is the command as the user gave it; `user_name` is the user the
// replica was to run as, "" when it was to run as the agent. OK unless `status` is kFailed.
absl::Status LaunchErrorOf(const ShimStatus& status, const std::string& argv0,
                           const std::string& working_dir, const std::string& user_name);

// Exec errors that come from the command itself rather than from the host (ENOENT, EACCES,
// ENOEXEC, ...).
bool IsUserExecError(int error);

}  // namespace trainctl::agent
