// FileLogStore: the LogStore (storage/log_store.h) beside SQLite's store: each run's copy in an
// append-only segment file under a directory of its own (trainctld's data dir's logs/, or
// --log-dir), by the rules of storage/log_rules.h.
//
//   <dir>/<job id>/<attempt>.<replica name>.<restart>.seg
//
// A segment is a sequence of records, each a 52-byte header and its data:
//
//   magic u32 "TLG1" | flags u32 (1 gap, 2 final, 4 head) | offset i64 | next_offset i64 |
//   time_ms i64 | file_size i64 | length u32 | data CRC-32 u32 | header CRC-32 u32 (of the 48
//   bytes before it), little-endian; then `length` bytes of data.
//
// The first record is the head: the node that ships the run as its data (offset and next_offset
// 0). Each later one is a piece taken, at the offset where the one before it ended.
//
// Durability: Append writes the records and fdatasyncs the file before it returns, and, when it
// made the file (or the job's directory), fsyncs the directory above it. file_size is kept in
// memory and written in each record: a raise by a piece not taken survives a restart only once a
// later record is written. A restart reads each run's segment at its first use, checking every
// record (both CRCs, the offsets following on); from the first record that is not whole and sound
// (a crash in the middle of a write) the file is cut off, so the copy ends at the last sound
// record, and the agent ships again from there. A segment without a sound head is removed (its
// Append never returned); a write that fails is cut back off. DeleteJob renames the job's
// directory to ".deleting-<job id>-<pid>-<n>", fsyncs, then removes it; Open removes such
// leftovers of a crash. `bytes` (LogRunState, LogJobUsage) is the segments' size on disk.
//
// Memory: a run is held (its open file, its state, and once read the index of its pieces:
// offsets, times, places in the file, about 48 bytes each) for the `max_cached_runs` runs used
// last, and any in use. Every run loaded or written keeps a summary (its LogRunState, about 150
// bytes), so that a run used again after it was let go is only opened: an Append writes at the
// end its summary says (the file's size must match, else it is read again), and a read indexes
// its record headers again, not its data. Jobs() answers from the summaries; the first call
// reads those of the runs not used yet from every segment's record headers.
//
// Thread-safety: every method may be called from any thread. Each run has a lock of its own,
// held across its Append's write and fdatasync; DeleteJob waits for every call under way.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/log_store.h"

namespace trainctl::storage {
namespace file_log_store_internal {
struct Run;
}  // namespace file_log_store_internal

class FileLogStore final : public LogStore {
 public:
  static constexpr size_t kDefaultMaxCachedRuns = 128;

  // Opens the store in `dir`, making it (0700) when missing, and removes what a crash left of a
  // DeleteJob. Nothing is read until a method needs it.
  static absl::StatusOr<std::unique_ptr<FileLogStore>> Open(
      const std::string& dir, size_t max_cached_runs = kDefaultMaxCachedRuns);
  ~FileLogStore() override;
  FileLogStore(const FileLogStore&) = delete;
  FileLogStore& operator=(const FileLogStore&) = delete;

  absl::StatusOr<LogRunState> Append(const std::string& node, const std::string& job_id,
                                     const v1::LogPiece& piece) override;
  absl::StatusOr<std::optional<LogRunState>> State(const std::string& run_id) override;
  absl::StatusOr<LogSlice> Read(const std::string& run_id, int64_t offset,
                                int64_t max_bytes) override;
  absl::StatusOr<int64_t> OffsetSince(const std::string& run_id, int64_t since_ms) override;
  absl::StatusOr<int64_t> TailOffset(const std::string& run_id, int lines) override;
  absl::Status DeleteJob(const std::string& job_id) override;
  absl::StatusOr<std::vector<LogJobUsage>> Jobs() override;

  // The segment file of `run_id` (for tests and messages); INVALID_ARGUMENT for a bad run id.
  absl::StatusOr<std::string> SegmentPath(const std::string& run_id) const;
  // How many runs' indexes are held now (for tests).
  size_t cached_runs() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Run = file_log_store_internal::Run;

  FileLogStore(std::string dir, size_t max_cached_runs)
      : dir_(std::move(dir)), max_cached_runs_(max_cached_runs) {}

  // The run's entry (made when missing), marked used last; evicts the least recently used
  // entries no call holds beyond max_cached_runs_. REQUIRES: dir_mu_ held (shared).
  absl::StatusOr<std::shared_ptr<Run>> GetRun(const std::string& run_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Makes `run` ready for a call (file_log_store_internal::Run): its segment looked at (opened
  // as its verified summary says, or loaded whole), and with `index`, its pieces indexed.
  // REQUIRES: run.mu held (not annotated: Run is not defined here).
  absl::Status Prepare(Run& run, bool index) ABSL_NO_THREAD_SAFETY_ANALYSIS
      ABSL_LOCKS_EXCLUDED(mu_);
  // Records `state` as its run's verified summary; with null, forgets the run's.
  void SetSummary(const std::string& run_id, const std::string& job_id, const LogRunState* state)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The run's summary when it is verified: what this process loaded or wrote last.
  std::optional<LogRunState> Verified(const std::string& run_id, const std::string& job_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Reads the summaries of every run on disk not summarized yet (the first Jobs()).
  absl::Status ScanSummaries() ABSL_SHARED_LOCKS_REQUIRED(dir_mu_);
  // Removes what a crash left of DeleteJob.
  absl::Status RemoveLeftovers();

  const std::string dir_;
  const size_t max_cached_runs_;
  // Held shared by every call that reads or writes files, exclusively by DeleteJob.
  absl::Mutex dir_mu_;
  absl::Mutex mu_ ABSL_ACQUIRED_AFTER(dir_mu_);
  // Runs by id, with their place in lru_ (most recently used first).
  struct Entry {
    std::shared_ptr<Run> run;
    std::list<std::string>::iterator lru;
  };
  std::unordered_map<std::string, Entry> runs_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);
  struct Summary {
    LogRunState state;
    // Loaded or written by this process (else read from record headers by Jobs(): a damaged
    // tail, not checked, may still be there).
    bool verified = false;
  };
  // Job id -> run id -> summary, of every run loaded, written or scanned.
  std::unordered_map<std::string, std::map<std::string, Summary>> summaries_ ABSL_GUARDED_BY(mu_);
  bool scanned_ ABSL_GUARDED_BY(mu_) = false;
  int64_t deletions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trainctl::storage
