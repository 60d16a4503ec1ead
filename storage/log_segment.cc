// LogSegment (storage/log_segment.h): records encoded, decoded and scanned, and the system
// calls of FileLogStore with their errors.
#include "storage/log_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "common/os_error.h"
#include "common/status_macros.h"
#include "storage/log_rules.h"

namespace trainctl::storage::log_segment {

// CRC-32 (IEEE 802.3, zlib's), by a table built at compile time.
constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

uint32_t Crc32(absl::string_view data, uint32_t crc) {
  crc = ~crc;
  for (unsigned char b : data) crc = kCrcTable[(crc ^ b) & 0xff] ^ (crc >> 8);
  return ~crc;
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutI64(std::string* out, int64_t v) {
  const uint64_t u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}
uint64_t GetLe(const char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Appends the record of `h` (length and data_crc from `data`) and `data` to `out`.
void EncodeRecord(const Header& h, absl::string_view data, std::string* out) {
  const size_t start = out->size();
  PutU32(out, kMagic);
  PutU32(out, h.flags);
  PutI64(out, h.offset);
  PutI64(out, h.next_offset);
  PutI64(out, h.time_ms);
  PutI64(out, h.file_size);
  PutU32(out, static_cast<uint32_t>(data.size()));
  PutU32(out, Crc32(data));
  PutU32(out, Crc32(absl::string_view(out->data() + start, kHeaderSize - 4)));
  out->append(data.data(), data.size());
}

// The header at `p` (kHeaderSize bytes); false when it is not a sound one.
bool DecodeHeader(const char* p, Header* h) {
  if (GetLe(p, 4) != kMagic) return false;
  if (GetLe(p + 48, 4) != Crc32(absl::string_view(p, kHeaderSize - 4))) return false;
  h->flags = static_cast<uint32_t>(GetLe(p + 4, 4));
  h->offset = static_cast<int64_t>(GetLe(p + 8, 8));
  h->next_offset = static_cast<int64_t>(GetLe(p + 16, 8));
  h->time_ms = static_cast<int64_t>(GetLe(p + 24, 8));
  h->file_size = static_cast<int64_t>(GetLe(p + 32, 8));
  h->length = static_cast<uint32_t>(GetLe(p + 40, 4));
  h->data_crc = static_cast<uint32_t>(GetLe(p + 44, 4));
  return (h->flags & ~(kGap | kFinal | kHead)) == 0;
}

// The error of a system call on `path`: RESOURCE_EXHAUSTED for a full disk or quota,
// UNAVAILABLE for an I/O error, INTERNAL otherwise.
absl::Status OsError(int err, absl::string_view what, absl::string_view path) {
  std::string msg = absl::StrCat(what, " ", path, ": ", ErrnoText(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  if (err == EIO) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

absl::Status WriteAt(int fd, absl::string_view data, int64_t pos, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = pwrite(fd, data.data(), data.size(), pos);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return OsError(errno, "writing the log copy", path);
    data.remove_prefix(static_cast<size_t>(n));
    pos += n;
  }
  return absl::OkStatus();
}

// Reads `n` bytes at `pos` into `out`; DATA_LOSS when the file ends before.
absl::Status ReadAt(int fd, int64_t pos, size_t n, std::string* out, const std::string& path) {
  out->resize(n);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = pread(fd, out->data() + done, n - done, pos + static_cast<int64_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return OsError(errno, "reading the log copy", path);
    if (got == 0) {
      return absl::DataLossError(absl::StrCat("the log copy ", path, " ends at ",
                                              pos + static_cast<int64_t>(done),
                                              ", before the record it indexes"));
    }
    done += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::Status SyncPath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return OsError(errno, "opening", path);
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  return rc == 0 ? absl::OkStatus() : OsError(err, "syncing the directory", path);
}

absl::StatusOr<Scan> ScanSegment(int fd, int64_t size, bool full, const std::string& path) {
  Scan scan;
  std::string buf;
  int64_t pos = 0;
  while (pos < size) {
    Header h;
    if (size - pos < static_cast<int64_t>(kHeaderSize)) {
      scan.damage = "a record header cut short";
      break;
    }
    TC_RETURN_IF_ERROR(ReadAt(fd, pos, kHeaderSize, &buf, path));
    if (!DecodeHeader(buf.data(), &h)) {
      scan.damage = "a record header that is not sound";
      break;
    }
    const int64_t data_pos = pos + static_cast<int64_t>(kHeaderSize);
    const bool head = (h.flags & kHead) != 0;
    if (static_cast<int64_t>(h.length) > kMaxLogPieceBytes || h.length > size - data_pos) {
      scan.damage = "a record whose data is cut short";
      break;
    }
    const bool gap = (h.flags & kGap) != 0;
    if (head != !scan.has_head || (head && (h.offset != 0 || h.next_offset != 0 ||
                                            h.length > kMaxNodeBytes || h.flags != kHead))) {
      scan.damage = "a head record out of place";
      break;
    }
    if (!head && (scan.state.final || h.offset != scan.state.stored || h.next_offset < h.offset ||
                  (!gap && h.next_offset - h.offset != static_cast<int64_t>(h.length)))) {
      scan.damage = "a record whose offsets do not follow on";
      break;
    }
    if (full || head) {
      TC_RETURN_IF_ERROR(ReadAt(fd, data_pos, h.length, &buf, path));
      if (Crc32(buf) != h.data_crc) {
        scan.damage = "a record whose data does not match its CRC";
        break;
      }
    }
    scan.state.file_size = std::max(scan.state.file_size, h.file_size);
    if (head) {
      scan.has_head = true;
      scan.state.node = buf;
    } else {
      scan.state.stored = h.next_offset;
      scan.state.final = (h.flags & kFinal) != 0;
      scan.state.last_ms = std::max(scan.state.last_ms, h.time_ms);
      scan.pieces.push_back({h.offset, h.next_offset, h.time_ms, data_pos, h.length, gap});
    }
    pos = data_pos + h.length;
    scan.good_end = pos;
  }
  scan.state.file_size = std::max(scan.state.file_size, scan.state.stored);
  scan.state.bytes = scan.good_end;
  return scan;
}

}  // namespace trainctl::storage::log_segment
