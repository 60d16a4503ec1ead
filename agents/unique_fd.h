// UniqueFd: a file descriptor closed when it goes out of scope, for the agent's spawning code
// (spawn.cc, shim_spawn.cc), where every early return must leave no descriptor behind.
//
//   UniqueFd log(open(path, O_WRONLY | O_CLOEXEC));
//   if (log.get() < 0) return Errno("open");
//   int kept = log.release();   // the caller owns it now
//
// Thread-compatible.
#pragma once

#include <unistd.h>

namespace trainctl::agent {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  // Closes the fd now; later calls and the destructor do nothing.
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  // Gives the fd up without closing it.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

}  // namespace trainctl::agent
