// LogStore: trainctld's copy of every run's log, shipped by the agents (AgentService.ShipLogs),
// so that a replica's output outlives its host. Each backend has its own: FileLogStore
// (storage/file_log_store.h: segment files under the data dir, with SQLite) and PgLogStore
// (storage/pg_log_store.h: rows in PostgreSQL, so a failover keeps them).
//
// A run's copy is the run's log file from offset 0 up to `stored`, kept as the pieces the agent
// shipped: written bytes, and gaps (a range the log cap dropped before it was shipped, held as
// the marker line readers get). Offsets are the log file's, so a reader that read from the agent
// continues in the copy at the same offset.
//
//   std::unique_ptr<LogStore> store = ...;
//   absl::StatusOr<LogRunState> st = store->Append("node-a", "j-1", piece);  // piece.offset must
//                                                                            // be st->stored
//   absl::StatusOr<LogSlice> slice = store->Read("j-1/1/worker-0/0", offset, 1 << 20);
//   store->DeleteJob("j-1");
//
// Thread-safety: every method may be called from any thread at any time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::storage {

// Where a run's copy stands.
struct LogRunState {
  std::string job_id;
  // The node whose agent shipped it.
  std::string node;
  // The copy holds the log up to this file offset: the next piece starts here.
  int64_t stored = 0;
  // The largest log file size the agent reported (LogPiece.file_size); bytes past `stored` up to
  // it were written on the node and are not in the copy (yet).
  int64_t file_size = 0;
  // The run ended and the copy holds its whole log.
  bool final = false;
  // Wall-clock milliseconds of the last piece taken.
  int64_t last_ms = 0;
  // Bytes the copy takes in the store (data and what the store keeps beside it).
  int64_t bytes = 0;
};

// A read of the copy.
struct LogSlice {
  // Written bytes from the offset asked for, or a gap's marker line.
  std::string data;
  // Where the next read continues (after a gap when `data` is its marker); the offset asked for
  // when there is nothing there yet.
  int64_t next_offset = 0;
  LogRunState state;
};

// A job's logs in the store.
struct LogJobUsage {
  std::string job_id;
  int64_t bytes = 0;
  // Wall-clock milliseconds of the last piece taken for any of its runs.
  int64_t last_ms = 0;
  // Every run of it is final.
  bool all_final = false;
};

class LogStore {
 public:
  virtual ~LogStore() = default;

  // Takes `piece` of run piece.run_id of job `job_id` from `node` when piece.offset is where the
  // copy ends (`stored`; 0 for a run it has never seen), and answers where the copy stands after
  // it. A piece anywhere else is not written, nor is a probe (no data, neither gap nor final);
  // both only raise file_size. A final piece marks the copy complete at piece.next_offset; once
  // final, a copy takes nothing more. Durable when it returns OK (a crash of trainctld or of its
  // host keeps it). INVALID_ARGUMENT for a malformed piece (next_offset < offset, a written
  // piece whose data is not next_offset - offset bytes, a run id that does not name job_id);
  // FAILED_PRECONDITION when another node shipped this run before.
  virtual absl::StatusOr<LogRunState> Append(const std::string& node, const std::string& job_id,
                                             const v1::LogPiece& piece) = 0;

  // Where the copy of `run_id` stands; nullopt when the store has none.
  virtual absl::StatusOr<std::optional<LogRunState>> State(const std::string& run_id) = 0;

  // Up to `max_bytes` of the copy from `offset` (>= 0): written bytes up to the next gap or the
  // copy's end, or, at or inside a gap, its marker line (then next_offset is the gap's end).
  // Past the copy's end: no data, next_offset = offset. NOT_FOUND when the store has no copy.
  virtual absl::StatusOr<LogSlice> Read(const std::string& run_id, int64_t offset,
                                        int64_t max_bytes) = 0;

  // The offset of the first piece the agent read at or after `since_ms`; the copy's end when
  // none was. NOT_FOUND when the store has no copy.
  virtual absl::StatusOr<int64_t> OffsetSince(const std::string& run_id, int64_t since_ms) = 0;

  // The offset where the copy's last `lines` lines start (a last line without its "\n" counts
  // as one); 0 when the copy has no more lines than that. NOT_FOUND when the store has no copy.
  virtual absl::StatusOr<int64_t> TailOffset(const std::string& run_id, int lines) = 0;

  // Deletes every run's copy of job `job_id`; OK when there was none.
  virtual absl::Status DeleteJob(const std::string& job_id) = 0;

  // Every job the store holds logs of, in no particular order.
  virtual absl::StatusOr<std::vector<LogJobUsage>> Jobs() = 0;
};

}  // namespace trainctl::storage
