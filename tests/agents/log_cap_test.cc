// Tests of log capping: trainctl-shim's LogCapper punching the middle out of a real log file
// (agents/shim/log_cap.h), and ReadLogChunk returning the dropped range as one marker line with
// offsets that stay those of the file (agents/log_read.h).
#include "agents/shim/log_cap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "agents/log_read.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::TempDir;

constexpr int64_t kLimit = 64 * 1024;
// Every line is this long, "line 000001 ...\n".
constexpr int kLineBytes = 64;

std::string Line(int n) {
  std::string line = absl::StrFormat("line %06d ", n);
  line.resize(kLineBytes - 1, 'x');
  return line + "\n";
}

// Lines [first, last] appended to the file at `path`, as a replica writes them (O_APPEND).
void AppendLines(const std::string& path, int first, int last) {
  std::string text;
  for (int n = first; n <= last; ++n) text += Line(n);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
}

// Everything a reader gets following next_offset from 0, `chunk` bytes at a time.
std::string ReadAll(const std::string& path, int64_t chunk) {
  std::string out;
  int64_t offset = 0;
  while (true) {
    absl::StatusOr<LogChunk> read = ReadLogChunk(path, offset, chunk);
    REQUIRE(read.ok());
    out += read->data;
    if (read->data.empty()) return out;
    REQUIRE(read->next_offset > offset);
    offset = read->next_offset;
  }
}

int64_t DiskBytes(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return static_cast<int64_t>(st.st_blocks) * 512;
}

TEST_CASE("the dropped-bytes marker names the bytes and the limit in MiB", "[log_cap]") {
  CHECK(DroppedMarker(123456789, int64_t{1024} << 20) ==
        "[trainctl: 123456789 bytes dropped: the log passed --max-log-mb 1024]\n");
  CHECK(DroppedMarker(5, 64 * 1024) ==
        "[trainctl: 5 bytes dropped: the log passed --max-log-mb 0.0625]\n");
}

TEST_CASE("the dropped range's file is parsed strictly", "[log_cap]") {
  shim::DroppedRange range;
  REQUIRE(
      shim::ParseDroppedRange("head_end 10\ntail_start 99\nlimit_bytes 65536\nnew 1\n", &range));
  CHECK(range.head_end == 10);
  CHECK(range.tail_start == 99);
  CHECK(range.limit_bytes == 65536);
  CHECK(shim::ParseDroppedRange(shim::FormatDroppedRange(range).c_str(), &range));
  CHECK_FALSE(shim::ParseDroppedRange("head_end 10\ntail_start 99\n", &range));
  CHECK_FALSE(shim::ParseDroppedRange("head_end 10\ntail_start x\nlimit_bytes 1\n", &range));
  CHECK_FALSE(shim::ParseDroppedRange("head_end 100\ntail_start 99\nlimit_bytes 1\n", &range));
}

TEST_CASE("a log under its limit is left whole", "[log_cap]") {
  TempDir dir;
  const std::string log = dir.path() + "/w.log";
  AppendLines(log, 1, kLimit / kLineBytes);
  shim::LogCapper capper;
  REQUIRE(capper.Open(log.c_str(), kLimit));
  capper.Check();
  CHECK(capper.dropped().empty());
  CHECK(access((log + shim::kDroppedSuffix).c_str(), F_OK) != 0);
  CHECK(ReadAll(log, 1000) == ReadFile(log));
}

TEST_CASE("a log past its limit keeps its head and tail and reads the middle as one marker",
          "[log_cap]") {
  TempDir dir;
  const std::string log = dir.path() + "/w.log";
  constexpr int kLines = 4000;  // 256000 bytes, four times the limit
  AppendLines(log, 1, kLines);
  shim::LogCapper capper;
  REQUIRE(capper.Open(log.c_str(), kLimit));
  capper.Check();
  REQUIRE(capper.active());  // punching holes works on this file system
  const shim::DroppedRange dropped = capper.dropped();
  REQUIRE_FALSE(dropped.empty());
  // Cut at line ends: half the limit of head, 3/8 of it of tail.
  CHECK(dropped.head_end == (kLimit / 2 / kLineBytes) * kLineBytes);
  CHECK(dropped.tail_start % kLineBytes == 0);
  CHECK(int64_t{kLines} * kLineBytes - dropped.tail_start == kLimit / 2 - kLimit / 8);
  CHECK(ReadFile(log + shim::kDroppedSuffix) == shim::FormatDroppedRange(dropped).c_str());
  // The file keeps its size (offsets stay), the disk only about the limit.
  struct stat st;
  REQUIRE(stat(log.c_str(), &st) == 0);
  CHECK(st.st_size == int64_t{kLines} * kLineBytes);
  CHECK(DiskBytes(log) <= kLimit + 8192);

  const int head_lines = static_cast<int>(dropped.head_end / kLineBytes);
  const int tail_first = static_cast<int>(dropped.tail_start / kLineBytes) + 1;
  std::string want;
  for (int n = 1; n <= head_lines; ++n) want += Line(n);
  want += DroppedMarker(dropped.tail_start - dropped.head_end, kLimit);
  for (int n = tail_first; n <= kLines; ++n) want += Line(n);
  // Whatever the chunk size, readers get the same text.
  CHECK(ReadAll(log, 1 << 20) == want);
  CHECK(ReadAll(log, 1000) == want);

  // A chunk that reaches the dropped range ends with the marker and continues after it.
  absl::StatusOr<LogChunk> at_head = ReadLogChunk(log, dropped.head_end - kLineBytes, 1 << 20);
  REQUIRE(at_head.ok());
  CHECK(at_head->data ==
        Line(head_lines) + DroppedMarker(dropped.tail_start - dropped.head_end, kLimit));
  CHECK(at_head->next_offset == dropped.tail_start);
  CHECK(at_head->file_size == st.st_size);
  // A follower whose offset fell into the range learns how much it missed.
  absl::StatusOr<LogChunk> inside = ReadLogChunk(log, dropped.tail_start - 100, 1 << 20);
  REQUIRE(inside.ok());
  CHECK(inside->data == "\n" + DroppedMarker(100, kLimit));
  CHECK(inside->next_offset == dropped.tail_start);
  // Before the range, a short read stays short and has no marker.
  absl::StatusOr<LogChunk> first = ReadLogChunk(log, 0, 10);
  REQUIRE(first.ok());
  CHECK(first->data == Line(1).substr(0, 10));
  CHECK(first->next_offset == 10);
}

TEST_CASE("a capped log that keeps growing moves its tail and stays about its limit", "[log_cap]") {
  TempDir dir;
  const std::string log = dir.path() + "/w.log";
  shim::LogCapper capper;
  AppendLines(log, 1, 10);
  REQUIRE(capper.Open(log.c_str(), kLimit));
  int last = 10;
  int64_t head_end = -1;
  for (int round = 0; round < 20; ++round) {
    AppendLines(log, last + 1, last + 500);  // 32000 bytes a round
    last += 500;
    capper.Check();
    REQUIRE(capper.active());
    if (!capper.dropped().empty()) {
      if (head_end < 0) head_end = capper.dropped().head_end;
      CHECK(capper.dropped().head_end == head_end);  // the head never moves
    }
    const int64_t kept =
        int64_t{last} * kLineBytes - (capper.dropped().tail_start - capper.dropped().head_end);
    CHECK(kept <= kLimit);
    CHECK(DiskBytes(log) <= kLimit + 8192);
  }
  const std::string text = ReadAll(log, 1 << 20);
  CHECK(text.rfind(Line(last)) == text.size() - kLineBytes);
  CHECK(text.find(Line(1)) == 0);
  CHECK(text.find("bytes dropped: the log passed --max-log-mb 0.0625]\n") != std::string::npos);
}

TEST_CASE("a head without a line end near the cut is cut mid-line, and the marker starts a line",
          "[log_cap]") {
  TempDir dir;
  const std::string log = dir.path() + "/w.log";
  {
    const std::string blob(200 * 1024, 'a');  // one long line
    FILE* f = fopen(log.c_str(), "w");
    REQUIRE(f != nullptr);
    fwrite(blob.data(), 1, blob.size(), f);
    fclose(f);
  }
  shim::LogCapper capper;
  REQUIRE(capper.Open(log.c_str(), kLimit));
  capper.Check();
  REQUIRE(capper.active());
  CHECK(capper.dropped().head_end == kLimit / 2);
  const std::string text = ReadAll(log, 1 << 20);
  const std::string marker =
      "\n" + DroppedMarker(capper.dropped().tail_start - capper.dropped().head_end, kLimit);
  CHECK(text.find(marker) == static_cast<size_t>(kLimit / 2));
}

TEST_CASE("the probe for hole punching answers for this file system and leaves nothing",
          "[log_cap]") {
  TempDir dir;
  CHECK(shim::CanPunchHoles(dir.path().c_str()));  // ext4 and tmpfs, where the tests run
  CHECK(std::filesystem::is_empty(dir.path()));
  CHECK_FALSE(shim::CanPunchHoles((dir.path() + "/missing").c_str()));
  CHECK(errno == ENOENT);
}

TEST_CASE("a log that cannot be opened stays uncapped", "[log_cap]") {
  TempDir dir;
  shim::LogCapper capper;
  CHECK_FALSE(capper.Open((dir.path() + "/missing/w.log").c_str(), kLimit));
  CHECK_FALSE(capper.active());
  capper.Check();  // nothing to do, and no crash
}

}  // namespace
}  // namespace trainctl::agent
