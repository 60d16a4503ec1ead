// LogSegment: the records of FileLogStore's segment files (storage/file_log_store.h says their
// layout), their CRC-32, the scan that reads a segment up to its first record that is not sound,
// and the few system calls the store makes, with errors that name the file. For storage/ only.
//
//   std::string buf;
//   log_segment::EncodeRecord(header, data, &buf);            // then write buf at the end
//   absl::StatusOr<log_segment::Scan> scan = log_segment::ScanSegment(fd, size, true, path);
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/log_store.h"

namespace trainctl::storage::log_segment {

inline constexpr uint32_t kMagic = 0x31474c54;  // "TLG1" little-endian
// Record flags.
inline constexpr uint32_t kGap = 1;
inline constexpr uint32_t kFinal = 2;
inline constexpr uint32_t kHead = 4;
inline constexpr size_t kHeaderSize = 52;
// The most bytes of a head record's data (the node's name).
inline constexpr size_t kMaxNodeBytes = 4096;

// CRC-32 (IEEE 802.3, zlib's crc32) of `data`, continuing `crc`.
uint32_t Crc32(absl::string_view data, uint32_t crc = 0);

struct Header {
  uint32_t flags = 0;
  int64_t offset = 0;
  int64_t next_offset = 0;
  int64_t time_ms = 0;
  int64_t file_size = 0;
  uint32_t length = 0;
  uint32_t data_crc = 0;
};

// Appends the record of `h` (its length and data CRC those of `data`) and `data` to `out`.
void EncodeRecord(const Header& h, absl::string_view data, std::string* out);

// The header at `p` (kHeaderSize bytes); false when it is not a sound one (magic, CRC, flags).
bool DecodeHeader(const char* p, Header* h);

// A piece in a segment: its offsets, time, and where its data lies in the file.
struct PieceIndex {
  int64_t offset = 0;
  int64_t next_offset = 0;
  int64_t time_ms = 0;
  int64_t pos = 0;
  uint32_t length = 0;
  bool gap = false;
};

// What a segment holds up to its first record that is not sound.
struct Scan {
  bool has_head = false;
  // Of the sound records (job_id unset; bytes their end).
  LogRunState state;
  std::vector<PieceIndex> pieces;
  // The end of the last sound record, and what is wrong after it ("" when nothing is).
  int64_t good_end = 0;
  std::string damage;
};

// Reads the records of the segment `fd` of `size` bytes (at `path`) up to the first that is not
// whole and sound: a head first, then pieces each at the offset where the one before it ended,
// none after a final one, and indexes the pieces. With `full`, checks the data's CRCs; without,
// reads only the headers and the head's data.
absl::StatusOr<Scan> ScanSegment(int fd, int64_t size, bool full, const std::string& path);

// The error of a system call on `path` (errno `err`): RESOURCE_EXHAUSTED for a full disk or
// quota, UNAVAILABLE for an I/O error, INTERNAL otherwise; "<what> <path>: <words>".
absl::Status OsError(int err, absl::string_view what, absl::string_view path);

// Writes all of `data` at `pos`.
absl::Status WriteAt(int fd, absl::string_view data, int64_t pos, const std::string& path);

// Reads `n` bytes at `pos` into `out`; DATA_LOSS when the file ends before.
absl::Status ReadAt(int fd, int64_t pos, size_t n, std::string* out, const std::string& path);

// fsyncs the directory `path`.
absl::Status SyncPath(const std::string& path);

}  // namespace trainctl::storage::log_segment
