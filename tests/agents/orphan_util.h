// Test helper: a process that outlives its parent in a process group of its own, the way a
// replica outlives an agent that was SIGKILLed, and the record such an agent left for it.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agents/proc_stats.h"
#include "agents/run_files.h"
#include "agents/run_records.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent::testing {

// Starts `body` as a /bin/sh script in a session and process group of its own, with its output
// in the log of run `run_id` under `work_dir`, through a shell that exits at once, so that the
// process is not the caller's child. Returns its pid (also its group id) once it leads its group,
// or 0 on failure.
inline pid_t StartOrphan(const std::string& work_dir, const std::string& run_id,
                         const std::string& body) {
  absl::StatusOr<RunIdParts> parts = ParseRunId(run_id);
  if (!parts.ok()) return 0;
  const std::string log = RunLogPath(work_dir, *parts);
  if (!MakeDirs(log.substr(0, log.rfind('/'))).ok()) return 0;
  const std::string script = absl::StrCat(work_dir, "/orphan-", parts->replica_name, ".sh");
  const std::string pidfile = script + ".pid";
  std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
  chmod(script.c_str(), 0755);
  // A background job of a non-interactive shell is no group leader, so setsid(1) execs in place.
  const std::string command =
      absl::StrCat("setsid ", script, " >", log, " 2>&1 </dev/null & echo $! >", pidfile);
  if (std::system(command.c_str()) != 0) return 0;
  pid_t pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pidfile)), &pid)) return 0;
  bool leads = WaitUntil([&] {
    ProcStat stat;
    return ReadProcStat(pid, &stat) && stat.pgrp == pid;
  });
  return leads ? pid : 0;
}

// The record an agent writes for run `run_id` whose process is `pid`.
inline RunRecord RecordOf(const std::string& run_id, pid_t pid) {
  RunRecord record;
  record.run_id = run_id;
  record.pid = pid;
  ProcStat stat;
  if (ReadProcStat(pid, &stat)) record.start_ticks = stat.start_ticks;
  record.boot_id = BootId();
  return record;
}

}  // namespace trainctl::agent::testing
