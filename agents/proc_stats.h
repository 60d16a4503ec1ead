// Reads per-process numbers from /proc: resident memory for the agent's memory-limit watchdog,
// and process identity (pid + start time) for runs an earlier agent left behind (run_records.h).
//
// Thread-safe: the functions keep no state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>

#include "absl/strings/string_view.h"

namespace trainctl::agent {

// Fields of one /proc/<pid>/stat line.
struct ProcStat {
  pid_t pid = 0;
  char state = '?';
  pid_t pgrp = 0;
  // When the process started, in clock ticks since boot. Together with the pid it names one
  // process for as long as the host is up: a reused pid has a later start time.
  uint64_t start_ticks = 0;
  // Resident set size in pages.
  int64_t rss_pages = 0;
};

// Parses the text of /proc/<pid>/stat. The command name may hold spaces and parentheses, so
// fields are counted from its last ')'. Returns false on malformed text.
bool ParseProcStat(absl::string_view text, ProcStat* out);

// Reads and parses /proc/<pid>/stat; false when there is no such process or it cannot be read.
bool ReadProcStat(pid_t pid, ProcStat* out);

// Resident memory in bytes of every process group on the host that has at least one live
// process, summed over its members. One pass over /proc.
std::map<pid_t, int64_t> ResidentBytesByProcessGroup();

// True when `pid` names no process, or only a zombie (one that exited and was not reaped yet).
bool ProcessIsGone(pid_t pid);

}  // namespace trainctl::agent
