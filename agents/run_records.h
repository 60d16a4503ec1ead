// Run records: one small file per running replica process in the agent's work dir, so that an
// agent that was SIGKILLed (or crashed) and started again finds the replicas the earlier agent
// left running, instead of letting them run on unknown while the scheduler starts them again
// elsewhere. No replica may run twice.
//
// Layout: <work dir>/run-records/<run id with '/' replaced by '+'>, written when a run's process
// has started and removed when the launcher saw it end (reaped it, or saw an adopted one gone).
// A record therefore outlives its process only when the agent died first; the next agent's
// LoadRunRecords() tells those apart by process identity: the same pid with the same start time
// (field 22 of /proc/<pid>/stat) and boot id, so a reused pid is never mistaken for the run.
//
//   RunRecordStore store(work_dir + "/run-records");
//   store.Write({run_id, pid, ProcessStartTicks(pid), BootId(), limit, checkpoint_dir, cpus});
//   for (const RunRecord& r : store.LoadAlive()) launcher.Adopt(r);  // dead ones are deleted
//   store.Remove(run_id);
//
// Records are written with a rename, so a reader sees a whole record or none. They are not
// fsynced: a host crash ends the processes they describe, so a record lost with it is not missed.
// Thread-safe: the store keeps no state but its directory; files are per run.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainctl::agent {

struct RunRecord {
  std::string run_id;
  // The run's process, which is also its process group's leader (spawn.h).
  pid_t pid = 0;
  // The process's start time in clock ticks since boot (ProcStat::start_ticks).
  uint64_t start_ticks = 0;
  // /proc/sys/kernel/random/boot_id when the record was written.
  std::string boot_id;
  // The run's memory limit, 0 for none; an adopted run keeps being held to it.
  int64_t memory_limit_bytes = 0;
  // The job's checkpoint directory, for signs of progress; may be empty.
  std::string checkpoint_dir;
  // Its exclusive CPUs under --cpu-policy static, a CPU list ("2-3"); "" for none.
  std::string exclusive_cpus;
};

// The text of a record file, and back. ParseRunRecord: INVALID_ARGUMENT for malformed text.
std::string FormatRunRecord(const RunRecord& record);
absl::StatusOr<RunRecord> ParseRunRecord(const std::string& text);

// This boot's id (/proc/sys/kernel/random/boot_id), or "" where it cannot be read.
std::string BootId();

// True when the process the record names still runs: `pid` exists, is not a zombie and started
// at `start_ticks`, on this boot.
bool RecordedProcessRuns(const RunRecord& record);

class RunRecordStore {
 public:
  // `dir` is created by the first Write().
  explicit RunRecordStore(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }

  // Creates or replaces the record of record.run_id.
  absl::Status Write(const RunRecord& record) const;

  // Deletes the record of `run_id`; OK when there is none.
  absl::Status Remove(const std::string& run_id) const;

  // Every record whose process still runs (RecordedProcessRuns); deletes the others, and files
  // that are not records, logging each. Empty when the directory does not exist.
  std::vector<RunRecord> LoadAlive() const;

 private:
  std::string PathOf(const std::string& run_id) const;

  const std::string dir_;
};

}  // namespace trainctl::agent
