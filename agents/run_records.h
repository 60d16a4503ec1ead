// Run directories: one per replica process the agent starts, in its work dir, so that an agent
// that was SIGKILLed, crashed, or was restarted or upgraded finds every replica an earlier agent
// started, watches it again and learns how it ended, instead of letting it run on unknown while
// the scheduler starts it again elsewhere. No replica may run twice, and no exit may be lost.
//
// Layout: <work dir>/runs/<run id with '/' replaced by '+'>/
//   record     written by the agent BEFORE the run's trainctl-shim exists (with a rename, so a
//              reader sees a whole record or none): the run id, the boot, the memory limit, the
//              checkpoint dir, the exclusive CPUs
//   lock       flock()ed by the agent before it spawns the shim, on an open file the shim
//              inherits and keeps for its whole life: while the lock is held, the run's shim
//              lives (even one that has not yet written shim.pid)
//   shim.pid   the shim's pid and start time, written by the shim first thing
//   status     how the replica is doing, written by the shim: running (with its pid), exited (exit
//              code or signal, OOM, times) or failed to start (agents/shim/shim_protocol.h)
//   node-stop  present when the node stopped the run (an agent's StopAll, `trainctl-agent
//              --stop-replicas`): its exit is reported as the node's shutdown, not the replica's
//              own end
//   fenced     present when the agent fenced the run (agent.h): its exit is reported as fenced
//   oom-kill   present when the agent killed the run for its memory (resident over its limit):
//              its exit is reported as an OOM kill, also by an agent that adopts the run
// A directory is removed only once the agent has handed the run's exit report to its journal
// (report_journal.h), so at every moment either the directory or the journal knows the run.
//
// Load() tells the cases apart for the next agent: lock held: the shim lives (adopt it); lock
// free: the shim is gone, and its status says how the replica ended, that the shim died while it
// ran, or (no status) that it never started. Directories of another boot describe processes that
// ended with it and are deleted.
//
// Nothing is fsynced: the files must survive the death of the agent process, not of the host (a
// host crash ends the processes they describe, and the scheduler handles it as lost).
//
//   RunRecordStore store(work_dir + "/runs");
//   absl::StatusOr<int> lock = store.Create({run_id, BootId(), limit, checkpoint_dir, cpus});
//   ... spawn the shim with *lock as its --lock-fd, close(*lock) ...
//   for (const RunRecordStore::Found& f : store.Load()) ...   // at the next start
//   store.Remove(run_id);                                      // once its exit is journaled
//
// Thread-safe: the store keeps no state but its directory; files are per run.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainctl::agent {

// The marker file of a run the node stopped (see the layout above).
inline constexpr char kNodeStopFile[] = "node-stop";
// The marker file of a run the agent fenced.
inline constexpr char kFenceFile[] = "fenced";
// The marker file of a run the agent killed for exceeding its memory limit.
inline constexpr char kOomKillFile[] = "oom-kill";

struct RunRecord {
  std::string run_id;
  // /proc/sys/kernel/random/boot_id when the record was written.
  std::string boot_id;
  // The run's memory limit, 0 for none; an adopted run keeps being held to it.
  int64_t memory_limit_bytes = 0;
  // The job's checkpoint directory, for signs of progress; may be empty.
  std::string checkpoint_dir;
  // Its exclusive CPUs under --cpu-policy static, a CPU list ("2-3"); "" for none.
  std::string exclusive_cpus;
  // The job's scheduling.progressPattern (one line); "" for none.
  std::string progress_pattern;
};

// The text of a record file, and back. ParseRunRecord: INVALID_ARGUMENT for malformed text.
std::string FormatRunRecord(const RunRecord& record);
absl::StatusOr<RunRecord> ParseRunRecord(const std::string& text);

// This boot's id (/proc/sys/kernel/random/boot_id), or "" where it cannot be read.
std::string BootId();

class RunRecordStore {
 public:
  // `dir` (<work dir>/runs) is created by the first Create().
  explicit RunRecordStore(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  // The run's directory (which need not exist).
  std::string RunDir(const std::string& run_id) const;

  // Creates the run's directory with its record and its lock file, and returns a close-on-exec
  // fd of the lock file on which this process holds the lock: hand it to the shim, then close it.
  // INTERNAL when a step fails (nothing of the run is left then). FAILED_PRECONDITION when a live
  // shim already holds the run's lock.
  absl::StatusOr<int> Create(const RunRecord& record) const;

  // Deletes the run's directory; OK when there is none.
  absl::Status Remove(const std::string& run_id) const;

  struct Found {
    RunRecord record;
    // The lock is held: the run's shim lives.
    bool shim_alive = false;
  };
  // Every run directory of this boot, in run id order. Deletes directories of another boot, and
  // those without a readable record (logging each): nothing was started for them.
  std::vector<Found> Load() const;

 private:
  const std::string dir_;
};

}  // namespace trainctl::agent
