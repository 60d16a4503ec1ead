// Reading logs by offset, with the dropped range of a capped log as one marker line.
#include "agents/log_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trainctl::agent {
namespace {

// How often a read starts over when the shim punched meanwhile; it punches at most once a
// second, so a second try nearly always settles it.
constexpr int kReadTries = 4;

// The chunk at `offset` of the open log `fd` of `size` bytes, whose `dropped` range reads as
// its marker.
absl::StatusOr<LogChunk> ReadAround(int fd, const shim::DroppedRange& dropped, int64_t size,
                                    int64_t offset, int64_t max_bytes) {
  LogChunk chunk;
  chunk.file_size = size;
  if (!dropped.empty() && offset >= dropped.head_end && offset < dropped.tail_start) {
    // Inside the dropped range: a reader that had followed the log into it missed the rest.
    // The marker starts a line of its own: after the head's last line when that ended one,
    // else (and after bytes of the range, which are gone) after a line end of its own.
    chunk.data = DroppedMarker(dropped.tail_start - offset, dropped.limit_bytes);
    bool line_start = offset == 0;
    if (offset == dropped.head_end && offset > 0) {
      absl::StatusOr<std::string> last = ReadFileAt(fd, offset - 1, 1);
      if (!last.ok()) return last.status();
      line_start = *last == "\n";
    }
    if (!line_start) chunk.data.insert(0, "\n");
    chunk.plain_end = offset;
    chunk.next_offset = dropped.tail_start;
    return chunk;
  }
  int64_t end = std::min(size, offset + max_bytes);
  const bool reaches_drop =
      !dropped.empty() && offset < dropped.head_end && end >= dropped.head_end;
  if (reaches_drop) end = dropped.head_end;
  absl::StatusOr<std::string> data = ReadFileAt(fd, offset, std::max<int64_t>(0, end - offset));
  if (!data.ok()) return data.status();
  chunk.data = *std::move(data);
  chunk.next_offset = offset + static_cast<int64_t>(chunk.data.size());
  chunk.plain_end = chunk.next_offset;
  if (reaches_drop && chunk.next_offset == dropped.head_end) {
    if (!chunk.data.empty() && chunk.data.back() != '\n') chunk.data += '\n';
    chunk.data += DroppedMarker(dropped.tail_start - dropped.head_end, dropped.limit_bytes);
    chunk.next_offset = dropped.tail_start;
  }
  return chunk;
}

}  // namespace

std::string DroppedMarker(int64_t bytes, int64_t limit_bytes) {
  return absl::StrFormat("[trainctl: %d bytes dropped: the log passed --max-log-mb %.10g]\n", bytes,
                         static_cast<double>(limit_bytes) / (1 << 20));
}

shim::DroppedRange ReadDroppedRange(const std::string& log_path) {
  shim::DroppedRange range;
  const int fd = open((log_path + shim::kDroppedSuffix).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return range;
  absl::StatusOr<std::string> text = ReadFileAt(fd, 0, 512);
  close(fd);
  if (!text.ok() || !shim::ParseDroppedRange(text->c_str(), &range)) return {};
  return range;
}

absl::StatusOr<std::string> ReadFileAt(int fd, int64_t offset, int64_t size) {
  std::string out(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("read: ", std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

absl::StatusOr<LogChunk> ReadLogChunk(const std::string& path, int64_t offset, int64_t max_bytes) {
  if (offset < 0) return absl::InvalidArgumentError("negative log offset");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return absl::NotFoundError(absl::StrCat("no log file ", path));
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(error)));
  }
  absl::StatusOr<LogChunk> chunk = absl::InternalError("not read");
  for (int attempt = 0; attempt < kReadTries; ++attempt) {
    // The shim writes the sidecar before it punches: the same range before and after the read
    // means no byte read was dropped meanwhile.
    const shim::DroppedRange before = ReadDroppedRange(path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
      chunk = absl::InternalError(absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
      break;
    }
    chunk = ReadAround(fd, before, st.st_size, offset, max_bytes);
    if (!chunk.ok() || ReadDroppedRange(path) == before) break;
  }
  close(fd);
  return chunk;
}

}  // namespace trainctl::agent
