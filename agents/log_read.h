// Reading a run's log back by offset (ReadLog, `trainctl logs [-f]`), capped logs included: the
// range trainctl-shim dropped from a log that passed --max-log-mb (agents/shim/log_cap.h) reads
// as one marker line, and offsets stay those of the file, so a reader that continues at
// next_offset skips across the dropped range.
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "agents/shim/log_cap.h"

namespace trainctl::agent {

// A piece of a log file.
struct LogChunk {
  std::string data;
  // Where the next read continues: after `data`, or after the dropped range when `data` ends
  // with its marker.
  int64_t next_offset = 0;
  // Size of the file when the chunk was read.
  int64_t file_size = 0;
  // Where the file's own bytes in `data` end: data's first plain_end - offset bytes are the
  // file's [offset, plain_end). When plain_end < next_offset, the rest of `data` is the marker of
  // the dropped range [plain_end, next_offset) (with the "\n" before it where one was added).
  // The log shipper (log_ship_state.h) ships the two apart.
  int64_t plain_end = 0;
};

// Reads up to `max_bytes` bytes of the log starting at `offset`. A read that reaches the dropped
// range of a capped log stops there with the marker line (a little over max_bytes at most), and
// next_offset continues after the range. The marker always starts a line: a "\n" goes before it
// where the text before it did not end one (a reader whose offset fell inside the range, after
// bytes that are gone now, always gets one). NOT_FOUND when the file does not exist,
// INVALID_ARGUMENT for a negative offset, INTERNAL on other I/O errors.
absl::StatusOr<LogChunk> ReadLogChunk(const std::string& path, int64_t offset, int64_t max_bytes);

// The line a reader gets for `bytes` dropped bytes of a log capped at `limit_bytes`:
// "[trainctl: 123456789 bytes dropped: the log passed --max-log-mb 1024]\n".
std::string DroppedMarker(int64_t bytes, int64_t limit_bytes);

// The dropped range recorded next to the log at `log_path`; empty when none is (no sidecar, or
// one that cannot be read or parsed).
shim::DroppedRange ReadDroppedRange(const std::string& log_path);

// pread() until `size` bytes or end of file. INTERNAL on an error.
absl::StatusOr<std::string> ReadFileAt(int fd, int64_t offset, int64_t size);

}  // namespace trainctl::agent
