// LogRules: what both LogStore backends (storage/log_store.h) share: which run ids and pieces
// they take, how a piece moves a run's copy (LogRunState), and where the last lines of a copy
// start (LogTailCounter). FileLogStore (storage/file_log_store.h) and PgLogStore
// (storage/pg_log_store.h) keep the pieces; these decide, so both answer alike. For storage/
// only.
//
// The rules beyond log_store.h's words:
//   - A run id is "<job id>/<attempt>/<replica name>/<restart>" written as MakeRunId writes it
//     (no leading zeros), its job id and replica name 1..200 of [A-Za-z0-9._-] not starting with
//     '.' (they name files). Any other is INVALID_ARGUMENT, in every method.
//   - A piece for a run the store has never seen makes its copy (empty, of that node) even when
//     it is not taken (a probe, a piece not at 0): the copy then tells the file size the agent
//     reported.
//   - Once final, a copy changes no more: a later piece raises not even file_size.
//   - file_size is at least `stored`; last_ms is the greatest time_ms of the pieces taken.
//   - A piece that is not taken only raises file_size (when it raises nothing, the store writes
//     nothing).
//   - A gap of no length (next_offset = offset) is taken but holds no byte of the log: reads
//     never return its marker.
//
// Thread-safe: the functions keep no state; a LogTailCounter is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/run_id.h"
#include "storage/log_store.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::storage {

// The most bytes of data a piece carries (written bytes or a gap's marker).
inline constexpr int64_t kMaxLogPieceBytes = int64_t{64} << 20;
// The longest node name a copy records.
inline constexpr size_t kMaxLogNodeBytes = 253;

// Whether `name` may be a job id or replica name in a run id the store keeps.
bool IsLogStoreName(absl::string_view name);

// The parts of `run_id`; INVALID_ARGUMENT, saying why, unless it is one the store keeps.
absl::StatusOr<RunIdParts> ParseLogRunId(absl::string_view run_id);

// INVALID_ARGUMENT unless `job_id` is one the store keeps.
absl::Status CheckLogJobId(absl::string_view job_id);

// INVALID_ARGUMENT, naming the run and what is wrong, for a malformed piece of job `job_id` (or
// a node name that is empty or longer than kMaxLogNodeBytes).
absl::Status CheckLogPiece(absl::string_view node, absl::string_view job_id,
                           const v1::LogPiece& piece);

// INVALID_ARGUMENT for a read's offset < 0 or max_bytes < 1.
absl::Status CheckLogRead(absl::string_view run_id, int64_t offset, int64_t max_bytes);

// A piece that only asks where the copy stands.
inline bool IsLogProbe(const v1::LogPiece& piece) {
  return piece.data().empty() && !piece.gap() && !piece.final();
}

// FAILED_PRECONDITION when `state`'s copy came from another node than `node`.
absl::Status CheckLogNode(const LogRunState& state, const std::string& node,
                          absl::string_view run_id);

// What a (well-formed, same-node) piece does to a copy.
struct LogPieceEffect {
  // The piece is taken: the store keeps it.
  bool taken = false;
  // `state` changed (taken, or file_size raised).
  bool changed = false;
};

// Applies `piece` to `state` (stored, file_size, final, last_ms; not bytes).
LogPieceEffect ApplyLogPiece(const v1::LogPiece& piece, LogRunState* state);

// Finds where the last `lines` lines of a copy start, fed the copy's pieces from its end
// backwards. The line starts are 0, each offset after a written "\n" (but the copy's end), and
// both ends of each gap of some length (its marker is one line of its own), the copy's end
// excepted.
//
//   LogTailCounter tail(lines, stored);
//   for (each piece from the last, each written chunk from its end)
//     if (piece.gap ? tail.Gap(piece.offset, piece.next_offset) : tail.Written(at, chunk)) break;
//   return tail.result();
class LogTailCounter {
 public:
  LogTailCounter(int lines, int64_t stored);
  // A gap [offset, next_offset). True once the start is found.
  bool Gap(int64_t offset, int64_t next_offset);
  // Written bytes `data` at `offset`, below every offset fed before. True once the start is found.
  bool Written(int64_t offset, absl::string_view data);
  bool done() const { return done_; }
  // The offset the last `lines` lines start at (0 when the copy has no more lines).
  int64_t result() const { return done_ ? result_ : 0; }

 private:
  // Counts a line starting at `start` (starts come in decreasing order; repeats count once).
  bool Start(int64_t start);

  const int lines_;
  const int64_t stored_;
  int count_ = 0;
  int64_t last_start_ = -1;
  bool done_ = false;
  int64_t result_ = 0;
};

}  // namespace trainctl::storage
