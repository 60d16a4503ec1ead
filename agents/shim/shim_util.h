// trainctl-shim's small tools (shim_main.cc): text in fixed buffers, whole reads and writes,
// numbers, a process's start time and files replaced with a rename. C library calls only, no
// heap, no stdio streams, no exceptions: the shim must stay a few hundred KiB.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>  // rename() only; no streams
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

namespace trainctl::shim {

// Text built in a fixed buffer, always NUL-terminated. What does not fit is dropped, and
// truncated() says so.
template <size_t N>
class Text {
 public:
  Text() { data_[0] = '\0'; }
  Text& Add(const char* s) {
    while (*s != '\0') Put(*s++);
    return *this;
  }
  Text& AddChar(char c) {
    Put(c);
    return *this;
  }
  Text& AddNumber(long long n) {
    unsigned long long magnitude = n < 0 ? 0ULL - static_cast<unsigned long long>(n) : n;
    char digits[24];
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + magnitude % 10);
      magnitude /= 10;
    } while (magnitude != 0);
    if (n < 0) Put('-');
    while (count > 0) Put(digits[--count]);
    return *this;
  }
  // A "key value\n" line.
  Text& Line(const char* key, const char* value) { return Add(key).Add(" ").Add(value).Add("\n"); }
  Text& Line(const char* key, long long value) {
    return Add(key).Add(" ").AddNumber(value).Add("\n");
  }

  const char* c_str() const { return data_; }
  size_t size() const { return size_; }
  bool truncated() const { return truncated_; }

 private:
  void Put(char c) {
    if (size_ + 1 < N) {
      data_[size_++] = c;
      data_[size_] = '\0';
    } else {
      truncated_ = true;
    }
  }

  char data_[N];
  size_t size_ = 0;
  bool truncated_ = false;
};

using Path = Text<PATH_MAX + 32>;
using Message = Text<PATH_MAX + 256>;

inline const char* ErrorText(int error) {
#ifdef __GLIBC__
  const char* text = strerrordesc_np(error);  // unlike glibc's strerror: no locale, no allocation
#else
  const char* text = strerror(error);  // musl's: a fixed table, no allocation
#endif
  return text != nullptr ? text : "Unknown error";
}

inline void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Reads up to `size` bytes, until EOF or the buffer is full. Returns the count read.
inline size_t ReadAll(int fd, void* buffer, size_t size) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, static_cast<char*>(buffer) + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

// "trainctl-shim: <message>\n" on stderr, which is the replica's log.
inline void Say(const char* message) {
  Message line;
  line.Add("trainctl-shim: ").Add(message).Add("\n");
  WriteAll(2, line.c_str(), line.size());
}

inline int64_t NowMs() {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// Parses the decimal number at [s, end) (end: the first character not a digit, or nullptr for
// the whole string) into *out; false for an empty, non-numeric or too large (> max) text.
inline bool ParseNumber(const char* s, uint64_t max, uint64_t* out, const char** end = nullptr) {
  uint64_t value = 0;
  const char* p = s;
  for (; *p >= '0' && *p <= '9'; ++p) {
    uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (value > (max - digit) / 10) return false;
    value = value * 10 + digit;
  }
  if (p == s || (end == nullptr && *p != '\0')) return false;
  if (end != nullptr) *end = p;
  *out = value;
  return true;
}

// Field 22 (starttime, in clock ticks since boot) of /proc/<pid>/stat; 0 when it cannot be read.
// Fields are counted from the last ')', since the command name may hold spaces and parentheses.
inline uint64_t StartTicksOf(pid_t pid) {
  Path path;
  path.Add("/proc/").AddNumber(pid).Add("/stat");
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[1024];
  size_t size = ReadAll(fd, text, sizeof(text) - 1);
  close(fd);
  text[size] = '\0';
  const char* p = strrchr(text, ')');
  if (p == nullptr) return 0;
  // After ')': " <field 3> <field 4> ...". p moves from the space before field 3 to the one
  // before field 22.
  ++p;
  for (int field = 3; field < 22 && p != nullptr; ++field) p = strchr(p + 1, ' ');
  uint64_t ticks = 0;
  const char* end;
  return p != nullptr && ParseNumber(p + 1, UINT64_MAX, &ticks, &end) ? ticks : 0;
}

// Replaces <dir>/<name> with `text`: writes <dir>/<name>.tmp, then renames it. Leaves no tmp
// file behind. False with errno set on failure. Not fsynced (shim_protocol.h).
inline bool ReplaceFile(const char* dir, const char* name, const char* text, size_t size) {
  Path path, tmp;
  path.Add(dir).Add("/").Add(name);
  tmp.Add(path.c_str()).Add(".tmp");
  if (tmp.truncated()) {
    errno = ENAMETOOLONG;
    return false;
  }
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, text + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  int error = written == size ? 0 : (errno != 0 ? errno : EIO);
  if (close(fd) != 0 && error == 0 && errno != EINTR) error = errno;
  if (error == 0 && rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    unlink(tmp.c_str());
    errno = error;
    return false;
  }
  return true;
}

}  // namespace trainctl::shim
