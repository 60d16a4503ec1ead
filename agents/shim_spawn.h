// Starting a replica's trainctl-shim (agents/shim/shim_protocol.h) from the agent.
//
// The agent never fork()s itself to start a replica: copying the page tables of a multi-threaded
// agent on every launch (and the copy-on-write faults and TLB shootdowns that follow) cost more
// than the rest of a launch. posix_spawn() starts the small, single-threaded shim instead (glibc
// uses clone(CLONE_VM | CLONE_VFORK): nothing is copied), and the shim does what needs a fork of
// its own: the replica's session, cgroups, user, working directory and exec.
//
// The shim gets a session of its own (so that signals to the agent's process group or session
// never reach it), an empty signal mask with default dispositions, stdin from /dev/null, the
// run's log as stdout and stderr, the run's lock as fd 3 and the write end of the ready pipe as
// fd 4, and no other file descriptor. Its environment is the replica's.
//
//   ShimRequest req{.shim_path = DefaultShimPath(), .run_dir = store.RunDir(run_id), ...};
//   absl::StatusOr<SpawnedShim> shim = SpawnShim(req);
//   // watch shim->pidfd (readable once the shim exited) and shim->ready_fd (the ready line)
//
// Thread-safe: the functions keep no state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/run_user.h"

namespace trainctl::agent {

struct ShimRequest {
  // The trainctl-shim binary.
  std::string shim_path;
  // The run's directory (run_records.h), where the shim writes shim.pid and status.
  std::string run_dir;
  // The file to execute (already resolved, see ResolveCommand) and the replica's argv.
  std::string exec_path;
  std::vector<std::string> argv;
  // The replica's complete environment, "NAME=VALUE" entries.
  std::vector<std::string> env;
  std::string working_dir;
  // Who the replica runs as; unset: the agent's user.
  std::optional<RunUser> user;
  // The files the replica writes "0" to, to join its cgroups (RunCgroups::Created).
  std::vector<std::string> cgroup_join_paths;
  // The run's memory.events (v2) or memory.oom_control (v1), for OOM kills; "" for none.
  std::string memory_events;
  // The run's log file and the most bytes of it the disk keeps (agents/shim/log_cap.h); 0: no
  // cap.
  std::string log_path;
  int64_t max_log_bytes = 0;
  // The run's log, the shim's stdout and stderr. Not owned.
  int log_fd = -1;
  // The run's lock (RunRecordStore::Create). Not owned.
  int lock_fd = -1;
  // The job's directory on this host (job_scratch.h), whose tmp/ and shm/ become the replica's
  // /tmp and /dev/shm in a mount namespace of its own (agents/shim/private_tmp.h); "": the
  // host's.
  std::string private_tmp;
};

struct SpawnedShim {
  pid_t pid = 0;
  // A pidfd of the shim (close-on-exec): readable once it exited.
  int pidfd = -1;
  // The read end of the ready pipe (close-on-exec, non-blocking): one line once the replica
  // started or failed to, then end of file.
  int ready_fd = -1;
};

// Starts the shim. INTERNAL (the host's fault) when it cannot be started; the caller then owns
// nothing new.
absl::StatusOr<SpawnedShim> SpawnShim(const ShimRequest& request);

// trainctl-shim next to the running program (/proc/self/exe), else "trainctl-shim" (looked up
// in PATH by the caller).
std::string DefaultShimPath();

}  // namespace trainctl::agent
