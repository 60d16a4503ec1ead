// Capturing where a replica's processes are stuck before the agent stops it (a hung replica, the
// end of its attempt) or when a user asks (`trainctl stacks --now`): every process of its group
// is dumped by a stack dump program, gdb by default, which prints each thread's native stack and,
// for Python (with Debian's python3.11-dbg and its gdb extension), each thread's Python stack.
//
// The processes are dumped in parallel, each by its own run of the program (RunTool, tool_run.h,
// so a dump that hangs is killed with its whole process group), all against one deadline: a
// replica being stopped must not wait long on its stacks. gdb stops each process while it reads
// it (ptrace) and lets it go on when it detaches; that takes about a second for a Python process.
//
//   StackCaptureOptions options;
//   options.timeout = absl::Seconds(10);
//   trainctl::v1::ReplicaStacks stacks = CaptureStacks(ProcessGroupMembers(pgid), options);
//   // stacks.summary(): "load_batch (train.py:12)"
//
// Thread-safe: no state; CaptureStacks blocks its caller until every dump has ended.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::agent {

struct StackCaptureOptions {
  // The dump program and its leading arguments (--stack-dump-program, split on spaces by the
  // caller); the pid is appended as its last argument. Empty: gdb, found in the PATH of `env`,
  // run as
  //   gdb -p PID --batch -nx -q -ex "set pagination off" -ex "set print thread-events off"
  //       -ex "thread apply all bt" -ex "thread apply all -s py-bt"
  // -nx skips the gdbinit files but not the auto-loaded Python extension
  // (/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py) that defines py-bt. -s makes py-bt quiet
  // where it does not apply: without it gdb fails (exit status 1, "Undefined command: "py-bt"")
  // on every process that is not Python.
  std::vector<std::string> program;
  // The whole capture of one replica ends by then; a dump still running is killed and its
  // ProcessStacks.error says "timed out after 10s" (its text keeps what it printed).
  absl::Duration timeout = absl::Seconds(10);
  // At most this many bytes of text over all the processes (split evenly between them); a text
  // that is cut ends with a line "... (cut: N more bytes)" and sets ReplicaStacks.truncated.
  size_t max_bytes = size_t{256} << 10;
  // The dump program's environment ("NAME=VALUE"); empty: the agent's own.
  std::vector<std::string> env;
};

// The live processes of the process group `pgid` (the pgrp field of /proc/*/stat; zombies are
// not counted), leaves first (those that are no other member's parent: where the work happens,
// under a launcher or shell), then by pid; at most `max`. Empty when none lives.
std::vector<pid_t> ProcessGroupMembers(pid_t pgid, size_t max = 16);

// Dumps the stacks of each of `pids` in parallel with the dump program and fills processes (pid,
// command, text, error, summary, python), summary (the first process with a Python summary,
// else the first with any summary), truncated and took. error instead when `pids` is empty ("the
// replica has no live process") or the program is not found ("no stack dump program: ...").
// job_id, attempt, replica, restart, node, run_id, reason and capture_time are the caller's.
trainctl::v1::ReplicaStacks CaptureStacks(const std::vector<pid_t>& pids,
                                          const StackCaptureOptions& options);

}  // namespace trainctl::agent
