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

// Writes `text` to `path` (replacing it) and sets its mtime to `ms`.
void WriteAt(const std::string& path, const std::string& text, int64_t ms) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  TouchAt(path, ms);
}

TEST_CASE("a progress file's JSON gives the step and a checkpoint", "[progress]") {
  CHECK(ParseProgressFile(R"({"step": 1200, "checkpoint": true})").step == 1200);
  CHECK(ParseProgressFile(R"({"step": 1200, "checkpoint": true})").checkpoint);
  CHECK(ParseProgressFile(R"({"step": 7})").step == 7);
  CHECK_FALSE(ParseProgressFile(R"({"step": 7})").checkpoint);
  CHECK(ParseProgressFile(R"({"checkpoint": false})").checkpoint == false);
  for (const char* bad : {"", "\n", "not json", "[1, 2]", "{\"step\": \"x\"}", "{\"step\": -3}",
                          "{\"step\": 1.5}", "{\"checkpoint\": \"yes\"}", "{\"step\": 3"}) {
    INFO(bad);
    ProgressFileContent c = ParseProgressFile(bad);
    CHECK(c.step == 0);
    CHECK_FALSE(c.checkpoint);
  }
}

TEST_CASE("a checkpoint counts once, in the write that says so", "[progress]") {
  testing::TempDir dir;
  const std::string file = dir.path() + "/progress";
  WriteAt(file, R"({"step": 50, "checkpoint": true})", 10'000);
  std::vector<ProgressTarget> targets = {{"run-a", file, "", 5'000}};
  std::vector<trainctl::v1::ReplicaProgress> reports = CheckProgress(targets);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].source() == "progress-file");
  CHECK(reports[0].time_ms() == 10'000);
  CHECK(reports[0].step() == 50);
  CHECK(reports[0].checkpoint());

  // The same write, seen again after its report: no report, so no second checkpoint.
  targets[0].since_ms = reports[0].time_ms();
  CHECK(CheckProgress(targets).empty());

  // A later write without the checkpoint: progress with its step, no checkpoint.
  WriteAt(file, R"({"step": 60})", 11'000);
  reports = CheckProgress(targets);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].step() == 60);
  CHECK_FALSE(reports[0].checkpoint());
}

TEST_CASE("malformed or empty progress files count by their mtime alone", "[progress]") {
  testing::TempDir dir;
  const std::string& d = dir.path();
  WriteAt(d + "/empty", "", 10'000);
  WriteAt(d + "/garbage", "checkpoint: true", 10'000);
  WriteAt(d + "/huge", std::string(kMaxProgressFileBytes + 10, ' ') + R"({"checkpoint": true})",
          10'000);
  std::vector<ProgressTarget> targets = {{"empty", d + "/empty", "", 0},
                                         {"garbage", d + "/garbage", "", 0},
                                         {"huge", d + "/huge", "", 0}};
  std::vector<trainctl::v1::ReplicaProgress> reports = CheckProgress(targets);
  REQUIRE(reports.size() == 3);
  for (const trainctl::v1::ReplicaProgress& p : reports) {
    INFO(p.run_id());
    CHECK(p.time_ms() == 10'000);
    CHECK(p.step() == 0);
    CHECK_FALSE(p.checkpoint());
  }
}

TEST_CASE("a progress file that is a FIFO or a link is not read", "[progress]") {
  testing::TempDir dir;
  const std::string& d = dir.path();
  REQUIRE(mkfifo((d + "/fifo").c_str(), 0644) == 0);
  CHECK(ReadProgressFile(d + "/fifo").empty());  // and does not block
  WriteAt(d + "/target", R"({"checkpoint": true})", 10'000);
  REQUIRE(symlink((d + "/target").c_str(), (d + "/link").c_str()) == 0);
  CHECK(ReadProgressFile(d + "/link").empty());
  CHECK(ReadProgressFile(d + "/target") == R"({"checkpoint": true})");
}

}  // namespace
}  // namespace trainctl::agent
