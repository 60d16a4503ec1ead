// Helpers shared by the agent tests: a temporary directory, polling with a deadline, and the
// run-as policy of tests that run replicas as root.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agents/run_user.h"

namespace trainctl::agent::testing {

#ifdef TRAINCTL_WORKLOAD_PATH
// tests/workload, built for the tests.
inline constexpr char kWorkload[] = TRAINCTL_WORKLOAD_PATH;
#endif

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
// Who the tests' agents and launchers run replicas as: root, as every replica ran before agents
// switched users, so that tests keep their 0700 temp work dirs and root-only checks. The tests of
// the real default (run_user_test.cc) leave it out.
inline RunAsPolicy RootReplicas() {
  RunAsPolicy policy;
  policy.default_user = "root";
  policy.allow_root = true;
  return policy;
}

class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/trainctl-agent-XXXXXX";
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Polls `done` every 10ms until it is true (returns true) or `timeout` passes (returns false).
inline bool WaitUntil(const std::function<bool()>& done,
                      absl::Duration timeout = absl::Seconds(10)) {
  absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

// The whole file, or "" when it cannot be read.
// The permission bits of `path` itself (not of a symlink's target); 0 when it does not exist.
inline mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A character device major no driver has (not in /proc/devices), from 234..254, the range the
// kernel hands out dynamically; -1 when all are taken.
inline int UnusedCharMajor() {
  std::ifstream in("/proc/devices");
  std::set<int> used;
  bool chars = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Character devices:") {
      chars = true;
    } else if (line.empty() || line == "Block devices:") {
      chars = false;
    } else if (int major_number = 0;
               chars &&
               absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(0, 4)), &major_number)) {
      used.insert(major_number);
    }
  }
  for (int m = 234; m <= 254; ++m) {
    if (used.count(m) == 0) return m;
  }
  return -1;
}

}  // namespace trainctl::agent::testing
