// Capping a replica's log (trainctl-agent --max-log-mb): trainctl-shim keeps the first and the
// last part of the log file and drops the middle, with offsets that stay absolute.
//
// The replica writes its log itself (fds 1 and 2, O_APPEND), so nothing stands between it and
// the file. The shim looks at the file's size once a second (kLogCapCheckMs) and after the
// replica ended; when the bytes still kept pass the limit, it punches a hole
// (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) over the middle. The file keeps its size, so
// every offset stays where it was, while the hole gives its blocks back: the disk holds about
// `limit` bytes of the log, plus what the replica writes in one check interval.
//
// The head is the first limit/2 bytes (ending at a line end when one is near); each punch
// leaves the last 3/8 of the limit (starting at a line start when one is near), so a punch frees
// at least limit/8 and the shim punches rarely. The dropped range [head_end, tail_start) grows
// with each punch; it is written, before the punch, to the sidecar file "<log>.dropped" (with a
// rename, so a reader sees a whole file or none):
//
//   head_end <offset>\ntail_start <offset>\nlimit_bytes <limit>\n
//
// Readers (agents/log_read.h) return one marker line for the range instead of its zeros, and
// continue after it. A filesystem without hole punching leaves the log uncapped, and the shim
// says so once in the log.
//
// Plain C library calls and no heap, like the rest of the shim; the agent and the tests include
// it too.
#pragma once

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agents/shim/shim_util.h"

namespace trainctl::shim {

// The sidecar file of a log: "<log path><kDroppedSuffix>".
inline constexpr char kDroppedSuffix[] = ".dropped";
// The default limit (trainctl-agent --max-log-mb 1024).
inline constexpr int64_t kDefaultLogLimit = int64_t{1024} << 20;
// The smallest limit other than 0 (none): below it, blocks and line searches dominate.
inline constexpr int64_t kMinLogLimit = 64 * 1024;
// How often the shim looks at the log's size.
inline constexpr int kLogCapCheckMs = 1000;
// How far the cut points look for a line boundary.
inline constexpr int64_t kLineSearchBytes = 4096;

// The bytes [head_end, tail_start) of a capped log are dropped. Empty: nothing is.
struct DroppedRange {
  int64_t head_end = 0;
  int64_t tail_start = 0;
  int64_t limit_bytes = 0;
  bool empty() const { return tail_start <= head_end; }
  bool operator==(const DroppedRange& o) const {
    return head_end == o.head_end && tail_start == o.tail_start && limit_bytes == o.limit_bytes;
  }
};

// The sidecar's text.
inline Text<160> FormatDroppedRange(const DroppedRange& range) {
  Text<160> text;
  text.Line("head_end", range.head_end)
      .Line("tail_start", range.tail_start)
      .Line("limit_bytes", range.limit_bytes);
  return text;
}

// Parses a sidecar's text (unknown keys are skipped); false when a key is missing or malformed.
inline bool ParseDroppedRange(const char* text, DroppedRange* out) {
  struct Key {
    const char* name;
    int64_t* value;
    bool seen;
  } keys[] = {{"head_end", &out->head_end, false},
              {"tail_start", &out->tail_start, false},
              {"limit_bytes", &out->limit_bytes, false}};
  for (const char* line = text; *line != '\0';) {
    for (Key& key : keys) {
      const size_t n = strlen(key.name);
      if (strncmp(line, key.name, n) != 0 || line[n] != ' ') continue;
      uint64_t value;
      const char* end;
      if (!ParseNumber(line + n + 1, INT64_MAX, &value, &end) || (*end != '\n' && *end != '\0')) {
        return false;
      }
      *key.value = static_cast<int64_t>(value);
      key.seen = true;
    }
    const char* newline = strchr(line, '\n');
    if (newline == nullptr) break;
    line = newline + 1;
  }
  for (const Key& key : keys) {
    if (!key.seen) return false;
  }
  return out->head_end <= out->tail_start;
}

// Whether the file system of the directory `dir` punches holes (FALLOC_FL_PUNCH_HOLE): writes a
// file of two blocks there, punches the first and removes the file. False with errno set when it
// does not, or the probe cannot be written.
inline bool CanPunchHoles(const char* dir) {
  Path path;
  path.Add(dir).Add("/.trainctl-punch-probe-").AddNumber(getpid());
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  char block[4096];
  memset(block, 'x', sizeof(block));
  const bool ok = write(fd, block, sizeof(block)) == sizeof(block) &&
                  write(fd, block, sizeof(block)) == sizeof(block) &&
                  fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, sizeof(block)) == 0;
  const int error = errno;
  close(fd);
  unlink(path.c_str());
  errno = error;
  return ok;
}

inline int64_t MonotonicMs() {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// Keeps one log file under its limit; see the file comment.
class LogCapper {
 public:
  LogCapper() = default;
  LogCapper(const LogCapper&) = delete;
  LogCapper& operator=(const LogCapper&) = delete;
  ~LogCapper() {
    if (fd_ >= 0) close(fd_);
  }

  // Caps `log_path` at `limit` bytes (at least kMinLogLimit). False, saying why on stderr, when
  // the log cannot be opened or the path is too long: the log stays uncapped.
  bool Open(const char* log_path, int64_t limit) {
    limit_ = limit < kMinLogLimit ? kMinLogLimit : limit;
    const char* slash = strrchr(log_path, '/');
    if (slash == nullptr) {
      dir_.Add(".");
      name_.Add(log_path);
    } else {
      for (const char* p = log_path; p < slash; ++p) dir_.AddChar(*p);
      if (slash == log_path) dir_.Add("/");
      name_.Add(slash + 1);
    }
    name_.Add(kDroppedSuffix);
    fd_ = open(log_path, O_RDWR | O_CLOEXEC);
    if (fd_ < 0 || dir_.truncated() || name_.truncated()) {
      Message message;
      message.Add("cannot cap the log ").Add(log_path).Add(": ");
      message.Add(fd_ < 0 ? ErrorText(errno) : "path too long").Add("; it stays uncapped");
      Say(message.c_str());
      if (fd_ >= 0) close(fd_);
      fd_ = -1;
      return false;
    }
    return true;
  }

  // Whether Check() still has work: the log is open and punching holes works.
  bool active() const { return fd_ >= 0 && !failed_; }
  const DroppedRange& dropped() const { return dropped_; }

  // Drops the middle of the log when the bytes kept pass the limit. A failed punch says why on
  // stderr (the log) once and stops the capping; a failed sidecar write is tried again next time.
  void Check() {
    if (!active()) return;
    struct stat st;
    if (fstat(fd_, &st) != 0) return;
    const int64_t size = st.st_size;
    if (size < dropped_.tail_start) return;  // truncated by the replica: leave it be
    if (size - (dropped_.tail_start - dropped_.head_end) <= limit_) return;
    DroppedRange next = dropped_;
    next.limit_bytes = limit_;
    if (next.empty()) next.head_end = next.tail_start = LineEndBefore(limit_ / 2);
    const int64_t tail_start = LineStartAfter(size - (limit_ / 2 - limit_ / 8), size);
    if (tail_start <= next.tail_start) return;
    next.tail_start = tail_start;
    // The sidecar first: a reader that sees the old one and then the new one reads again.
    if (!WriteSidecar(next)) return;
    if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, next.head_end,
                  next.tail_start - next.head_end) != 0) {
      const int error = errno;
      WriteSidecar(dropped_);  // the bytes are all still there
      Message message;
      message.Add("cannot cap the log at ").AddNumber(limit_).Add(" bytes: punching a hole: ");
      message.Add(ErrorText(error)).Add("; it stays uncapped");
      Say(message.c_str());
      failed_ = true;
      return;
    }
    dropped_ = next;
  }

 private:
  // The offset after the last '\n' in the kLineSearchBytes before `at`, else `at`.
  int64_t LineEndBefore(int64_t at) const {
    char buffer[kLineSearchBytes];
    const int64_t from = at > kLineSearchBytes ? at - kLineSearchBytes : 0;
    const ssize_t n = pread(fd_, buffer, static_cast<size_t>(at - from), from);
    for (ssize_t i = n; i > 0; --i) {
      if (buffer[i - 1] == '\n') return from + i;
    }
    return at;
  }

  // The first line start at or after `at` within kLineSearchBytes (and before `size`), else
  // `at`.
  int64_t LineStartAfter(int64_t at, int64_t size) const {
    char buffer[kLineSearchBytes];
    const int64_t from = at > 0 ? at - 1 : 0;  // a '\n' just before `at` makes it a line start
    const int64_t want = size - from < kLineSearchBytes ? size - from : kLineSearchBytes;
    const ssize_t n = pread(fd_, buffer, static_cast<size_t>(want), from);
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] == '\n') return from + i + 1;
    }
    return at;
  }

  bool WriteSidecar(const DroppedRange& range) const {
    const Text<160> text = FormatDroppedRange(range);
    return ReplaceFile(dir_.c_str(), name_.c_str(), text.c_str(), text.size());
  }

  int fd_ = -1;
  int64_t limit_ = 0;
  bool failed_ = false;
  Path dir_;
  Path name_;
  DroppedRange dropped_;
};

}  // namespace trainctl::shim
