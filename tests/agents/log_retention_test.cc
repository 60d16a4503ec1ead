// Tests of removing deleted jobs' logs from a node (agents/log_retention.h) on a real directory
// tree.
#include "agents/log_retention.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/time_util.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::TempDir;

// Writes <work>/logs/<job>/attempt-1/w.restart-0.log, all of it last modified at `ms`.
void WriteJobLog(const std::string& work, const std::string& job, int64_t ms) {
  const std::string dir = work + "/logs/" + job + "/attempt-1";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/w.restart-0.log") << "out\n";
  const struct timespec times[2] = {{ms / 1000, (ms % 1000) * 1'000'000},
                                    {ms / 1000, (ms % 1000) * 1'000'000}};
  for (const std::string& path : {dir + "/w.restart-0.log", dir, work + "/logs/" + job}) {
    REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
  }
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

TEST_CASE("a deleted job's logs are removed, a live job's stay", "[log_retention]") {
  TempDir work;
  const int64_t now = WallNowMs();
  WriteJobLog(work.path(), "j-1", now);
  WriteJobLog(work.path(), "j-2", now);
  CHECK(RemoveJobLogs(work.path(), "j-1").ok());
  CHECK_FALSE(Exists(work.path() + "/logs/j-1"));
  CHECK(RemoveJobLogs(work.path(), "j-2", {"j-2"}).ok());
  CHECK(Exists(work.path() + "/logs/j-2/attempt-1/w.restart-0.log"));
  CHECK(RemoveJobLogs(work.path(), "j-gone").ok());
  CHECK(absl::IsInvalidArgument(RemoveJobLogs(work.path(), "..")));
  CHECK(absl::IsInvalidArgument(RemoveJobLogs(work.path(), "a/b")));
  CHECK(Exists(work.path() + "/logs/j-2"));
}

TEST_CASE("job logs are past the retention once their newest file is", "[log_retention]") {
  TempDir work;
  const int64_t now = WallNowMs();
  const int64_t day = 86'400'000;
  WriteJobLog(work.path(), "j-old", now - 10 * day);
  WriteJobLog(work.path(), "j-older", now - 20 * day);
  WriteJobLog(work.path(), "j-new", now - day);
  // An old job with one recent file (a later attempt) is not old.
  WriteJobLog(work.path(), "j-mixed", now - 20 * day);
  {
    const std::string recent = work.path() + "/logs/j-mixed/attempt-2";
    std::filesystem::create_directories(recent);
    std::ofstream(recent + "/w.restart-0.log") << "out\n";
  }
  CHECK(JobLogsOlderThan(work.path(), now - 5 * day) ==
        std::vector<std::string>{"j-old", "j-older"});
  CHECK(JobLogsOlderThan(work.path() + "/nowhere", now).empty());
}

}  // namespace
}  // namespace trainctl::agent
