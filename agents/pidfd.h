// pidfd_open(2) and pidfd_send_signal(2) through syscall(2): Debian 12's <sys/pidfd.h> declares
// them without C linkage, so C++ code cannot link against its declarations.
//
// A pidfd names one process for good: unlike a pid, it is never reused, and it becomes readable
// (poll/epoll) when the process exits, also for a process that is not the caller's child.
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace trainctl::agent {

// A pidfd of `pid` (close-on-exec, as every pidfd), or -1 with errno set.
inline int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Sends `sig` with `info` (may be null) to the process of `pidfd`; 0, or -1 with errno set.
inline int PidfdSendSignal(int pidfd, int sig, siginfo_t* info) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, info, 0));
}

}  // namespace trainctl::agent
