#include "agents/progress_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

// Creates (or touches) `path` and sets its mtime to `ms`.
void TouchAt(const std::string& path, int64_t ms, bool dir = false) {
  if (dir) {
    mkdir(path.c_str(), 0755);
  } else {
    close(open(path.c_str(), O_CREAT | O_WRONLY, 0644));
  }
  struct timeval times[2];
  times[0].tv_sec = times[1].tv_sec = ms / 1000;
  times[0].tv_usec = times[1].tv_usec = (ms % 1000) * 1000;
  utimes(path.c_str(), times);
}

TEST_CASE("the newest mtime of a checkpoint tree is found two levels down", "[progress]") {
  testing::TempDir dir;
  const std::string& d = dir.path();
  TouchAt(d + "/ckpt-1", 0, true);
  TouchAt(d + "/ckpt-1/deep", 0, true);
  TouchAt(d + "/ckpt-1/model.bin", 5'000'000);
  TouchAt(d + "/ckpt-1/deep/too-deep.bin", 9'000'000);
  TouchAt(d + "/ckpt-1/deep", 1'000'000, true);
  TouchAt(d + "/ckpt-1", 1'000'000, true);
  TouchAt(d, 2'000'000, true);
  CHECK(NewestMtimeMs(d, 2) == 5'000'000);
  CHECK(NewestMtimeMs(d, 1) == 2'000'000);
  CHECK(NewestMtimeMs(d + "/missing", 2) == 0);
}

TEST_CASE("progress is reported only when newer than the last sign", "[progress]") {
  testing::TempDir dir;
  const std::string& d = dir.path();
  TouchAt(d + "/ckpt", 3'000, true);
  TouchAt(d + "/progress-a", 5'000);
  std::vector<ProgressTarget> targets = {
      {"run-a", d + "/progress-a", d + "/ckpt", 4'000},  // progress file is newer
      {"run-b", d + "/progress-b", d + "/ckpt", 2'000},  // only the checkpoint dir is newer
      {"run-c", d + "/progress-c", d + "/ckpt", 3'000},  // nothing newer
      {"run-d", d + "/progress-d", "", 0},               // nothing at all
  };
  std::vector<trainctl::v1::ReplicaProgress> progress = CheckProgress(targets);
  REQUIRE(progress.size() == 2);
  CHECK(progress[0].run_id() == "run-a");
  CHECK(progress[0].time_ms() == 5'000);
  CHECK(progress[0].source() == "progress-file");
  CHECK(progress[1].run_id() == "run-b");
  CHECK(progress[1].time_ms() == 3'000);
  CHECK(progress[1].source() == "checkpoint");
}

}  // namespace
}  // namespace trainctl::agent
