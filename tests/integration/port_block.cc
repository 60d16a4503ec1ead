// PortBlock: see port_block.h.
#include "tests/integration/port_block.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"

namespace trainctl::testing {
namespace {

constexpr int kUnit = 128;
constexpr int kFirst = 10'000;  // below: ports of well-known services
constexpr char kLockDir[] = "/tmp/trainctl-test-ports";

// The first units of kUnit ports outside the ephemeral range, as their first ports.
std::vector<int> CandidateUnits() {
  int eph_lo = 32768, eph_hi = 60999;
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  in >> eph_lo >> eph_hi;
  std::vector<int> units;
  for (int lo = kFirst; lo + kUnit <= 65536; lo += kUnit) {
    const int hi = lo + kUnit - 1;
    if (hi < eph_lo || lo > eph_hi) units.push_back(lo);
  }
  return units;
}

// Takes the unit at `lo` without waiting; -1 when another holds it.
int LockUnit(int lo) {
  const std::string path = absl::StrCat(kLockDir, "/", lo);
  const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

PortBlock::PortBlock(int size) {
  mkdir(kLockDir, 0777);
  chmod(kLockDir, 01777);  // tests of several users share it
  const int units = (size + kUnit - 1) / kUnit;
  const std::vector<int> candidates = CandidateUnits();
  REQUIRE(static_cast<int>(candidates.size()) >= units);
  // From a random start, the first run of `units` adjacent units this process can lock.
  const size_t n = candidates.size();
  const size_t start = std::random_device{}() % n;
  for (size_t k = 0; k < n; ++k) {
    const size_t first = (start + k) % n;
    if (first + units > n) continue;
    if (candidates[first + units - 1] - candidates[first] != (units - 1) * kUnit) continue;
    for (int u = 0; u < units; ++u) {
      const int fd = LockUnit(candidates[first + u]);
      if (fd < 0) break;
      locks_.push_back(fd);
    }
    if (static_cast<int>(locks_.size()) == units) {
      lo_ = candidates[first];
      hi_ = lo_ + units * kUnit - 1;
      return;
    }
    for (int fd : locks_) close(fd);
    locks_.clear();
  }
  FAIL("no free block of " << size << " ports outside the ephemeral range for a test cluster");
}

PortBlock::~PortBlock() {
  for (int fd : locks_) close(fd);
}

std::string PortBlock::range() const { return absl::StrCat(lo_, "-", hi_); }

}  // namespace trainctl::testing
