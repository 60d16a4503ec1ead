// The protocol between trainctl-agent and trainctl-shim, the small supervisor process the agent
// starts for each replica (shim_main.cc). The shim forks and execs the replica, waits for it and
// writes down how it ended, so that a replica and its outcome survive the agent's death: a
// restarted agent finds the shim still waiting, or its final status file. Plain C++ with no
// dependencies: the shim includes it as well as the agent.
//
// Command line:
//
//   trainctl-shim --run-dir DIR --exec PATH [--cwd DIR] [--uid N --gid N [--groups N,N,...]]
//                 [--cgroup JOIN_FILE]... [--memory-events FILE]
//                 [--log-file PATH --max-log-bytes N] [--lock-fd N] [--ready-fd N]
//                 [--private-tmp JOB_DIR] -- ARGV0 [ARGS...]
//
//   --run-dir        an existing directory the shim writes its files into (below)
//   --exec           the file to execve(), used as given (the agent resolves commands); a
//                    relative path is taken from --cwd
//   --cwd            the replica's working directory, entered as the replica's user
//   --uid/--gid      the user the replica becomes: setgroups(--groups, none when absent),
//                    setgid, setuid, in that order. Absent: the shim's own user.
//   --cgroup         a cgroup's join file (v1 tasks, v2 cgroup.procs) the replica writes "0" to
//                    before it changes user (best effort: a failed write is ignored);
//                    repeatable. The shim stays where it is.
//   --memory-events  the replica's memory.events (cgroup v2) or memory.oom_control (v1); a line
//                    "oom_kill N" with N > 0 there when the replica ended marks it oom_killed
//   --log-file       the replica's log (the file behind fds 1 and 2), and the most bytes of it
//   --max-log-bytes  kept on disk: the shim drops its middle when it grows past that, and writes
//                    the dropped range to "<log file>.dropped" (log_cap.h). 0 or absent: no cap
//   --lock-fd        an fd the agent holds an flock() on; the shim keeps it open (close-on-exec)
//                    for as long as it lives, so the lock shows that the shim is alive
//   --private-tmp    the job's directory on this host: the replica gets a mount namespace of its
//                    own with JOB_DIR/tmp over /tmp and JOB_DIR/shm over /dev/shm, set up after
//                    it joined its cgroups and before it changes user (private_tmp.h); a failure
//                    is the launch's, at stage "mount". Absent: the host's /tmp and /dev/shm
//   --ready-fd       the write end of a pipe; the shim writes one ready line there (below), then
//                    closes it
//   -- ARGV0 ...     the replica's argv
//
// Descriptors and environment: the replica's environment is the shim's own, unchanged. fds 1 and
// 2 of the shim are the replica's log, and the replica inherits them; the shim's own messages go
// there too, prefixed "trainctl-shim: ". The replica's stdin is /dev/null. No other fd of the
// shim reaches the replica. The replica gets a session of its own (its pid is its process group
// id), an empty signal mask and default signal dispositions.
//
// Files in the run dir, each replaced with a rename (written to "<name>.tmp" first), so a reader
// sees a whole file or none. Never fsynced: they must outlive the agent, not the host.
//
//   shim.pid  "pid <shim pid>\nstart_ticks <field 22 of /proc/<pid>/stat>\n", written first:
//             names the shim (pid reuse aside) before anything else happens
//   status    one "key value" per line; readers skip keys they do not know:
//               state running        pid, start_ticks (of the replica), start_time_ms
//               state exited         pid, start_ticks, start_time_ms, end_time_ms, exit_code N
//                                    (when it exited) or signal N (when a signal killed it),
//                                    core_dumped 0|1, oom_killed 0|1
//               state failed         failed_stage <stage>, failed_errno N, start_time_ms,
//                                    end_time_ms, and last "error <text>" (free-form)
//             Times are wall-clock milliseconds since the epoch: start at fork, end at reaping.
//
// The ready line, written once the launch is decided:
//
//   started <pid> <start_ticks> <start_time_ms>\n   the replica runs (execve succeeded)
//   failed <stage> <errno>\n                         it never ran; `status` says the same
//                                                    (stage "shim": the shim itself failed)
//
// An agent that sees EOF without a ready line reads `status`: the shim died or failed itself.
//
// Signals to the shim: SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to
// the replica's process group. ShimForwardSignal() queued with a signal number as its value
// (sigqueue(), or pidfd_send_signal() with si_code SI_QUEUE) sends that signal to the group:
// this is how the agent SIGKILLs a replica without killing its shim. When the replica (the group
// leader) exits, the shim SIGKILLs what is left of its group, writes `status` and exits 0. A
// signal that comes before the replica runs is held until it does (and dropped if it never does).
//
// Exit status of the shim: 0 when `status` holds the replica's end or its failed launch;
// kShimFailedExitCode when the shim itself could not work (bad arguments, no run dir, ...): then
// `status`, where it could be written, says "state failed" with failed_stage "shim", and so does
// the ready line where --ready-fd was parsed.
#pragma once

#include <signal.h>

namespace trainctl::shim {

// The files of the run dir.
inline constexpr char kShimPidFile[] = "shim.pid";
inline constexpr char kStatusFile[] = "status";

// The signal that asks the shim to send the signal in its value to the replica's group: real-time
// signal 35. A number, not SIGRTMIN + n: the agent (glibc, which keeps 32 and 33 for itself) and
// the shim (musl where it is built with it, which keeps 32 to 34) have different SIGRTMINs. 35 is
// glibc's SIGRTMIN + 1, what shims of earlier releases, which an upgraded agent adopts, expect.
inline int ShimForwardSignal() { return 35; }

// The shim's exit status when it failed itself.
inline constexpr int kShimFailedExitCode = 125;

// Values of the status file's "state".
inline constexpr char kStateRunning[] = "running";
inline constexpr char kStateExited[] = "exited";
inline constexpr char kStateFailed[] = "failed";

// First words of the ready line.
inline constexpr char kReadyStarted[] = "started";
inline constexpr char kReadyFailed[] = "failed";

// Stages of a failed launch (failed_stage), in the order the replica's child goes through them,
// and "shim" for the shim's own failures.
inline constexpr char kStageShim[] = "shim";    // the shim itself: arguments, run dir, fork
inline constexpr char kStageStdio[] = "stdio";  // /dev/null onto stdin
inline constexpr char kStageMount[] = "mount";  // --private-tmp's namespace and mounts
inline constexpr char kStageUser[] = "user";    // setgroups, setgid, setuid
inline constexpr char kStageChdir[] = "chdir";  // --cwd, as the replica's user
inline constexpr char kStageExec[] = "exec";    // execve of --exec

}  // namespace trainctl::shim
