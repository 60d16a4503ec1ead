// FileLogStore's own behaviour (storage/file_log_store.h), beyond the contract that
// log_store_test.cc runs on both backends: damaged tails cut off at a reopen, segments whose
// head never reached the disk, file_size across a restart, the directory layout and modes, what
// a crashed DeleteJob leaves, and the bound on the runs held in memory.
#include "storage/file_log_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/log_segment.h"
#include "tests/storage/log_testing.h"
#include "tests/storage/temp_dir.h"

namespace trainctl::storage {
// Named, not anonymous: the test target is a unity build.
namespace file_log_store_test {

using namespace log_testing;

const std::string kRun = "j-1/1/worker-0/0";

std::unique_ptr<FileLogStore> OpenFiles(const std::string& dir, size_t max_cached_runs = 128) {
  absl::StatusOr<std::unique_ptr<FileLogStore>> store = FileLogStore::Open(dir, max_cached_runs);
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return *std::move(store);
}

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<int64_t>(size);
}

int Mode(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return static_cast<int>(st.st_mode & 0777);
}

void Resize(const std::string& path, int64_t size) {
  std::filesystem::resize_file(path, static_cast<uintmax_t>(size));
}

void AppendBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << bytes;
}

void FlipByte(const std::string& path, int64_t at) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(at);
  char c = 0;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(c ^ 0x5a));
}

TEST_CASE(
    "a damaged tail left by a crash is cut off, and the copy goes on from its last whole "
    "record",
    "[logs]") {
  // The head record (the node's name, "node-a"), then one of 5 bytes of data per piece.
  constexpr int64_t kHead = static_cast<int64_t>(log_segment::kHeaderSize) + 6;
  constexpr int64_t kRecord = static_cast<int64_t>(log_segment::kHeaderSize) + 5;
  struct Damage {
    const char* what;
    // How the segment of `size` bytes is damaged.
    std::function<void(const std::string& path, int64_t size)> apply;
    // Where the copy ends after the reopen (the file then ends after its record).
    int64_t stored;
  };
  const std::vector<Damage> damages = {
      {"the last data cut short", [](auto& p, int64_t s) { Resize(p, s - 2); }, 10},
      {"the last header cut short", [](auto& p, int64_t s) { Resize(p, s - kRecord + 20); }, 10},
      {"a byte of the last data flipped", [](auto& p, int64_t s) { FlipByte(p, s - 3); }, 10},
      {"a byte of the last header flipped",
       [](auto& p, int64_t s) { FlipByte(p, s - kRecord + 9); }, 10},
      {"garbage after the last record", [](auto& p, int64_t) { AppendBytes(p, "garbage!!"); }, 15},
      {"a byte of the first piece's data flipped",
       [](auto& p, int64_t s) { FlipByte(p, s - 2 * kRecord - 1); }, 0},
  };
  for (const Damage& damage : damages) {
    INFO(damage.what);
    TempDir dir;
    std::string path;
    int64_t size = 0;
    {
      std::unique_ptr<FileLogStore> store = OpenFiles(dir.path);
      Take(*store, Piece(kRun, 0, "aaaa\n", 100));
      Take(*store, Piece(kRun, 5, "bbbb\n", 200));
      Take(*store, Piece(kRun, 10, "cccc\n", 300));
      path = *store->SegmentPath(kRun);
      size = FileSize(path);
    }
    damage.apply(path, size);
    {
      std::unique_ptr<FileLogStore> store = OpenFiles(dir.path);
      std::optional<LogRunState> state = StateOf(*store, kRun);
      REQUIRE(state.has_value());
      CHECK(state->stored == damage.stored);
      CHECK(state->node == "node-a");
      CHECK(size == kHead + 3 * kRecord);
      CHECK(FileSize(path) == kHead + kRecord * damage.stored / 5);
      CHECK(state->bytes == FileSize(path));
      const std::string all = "aaaa\nbbbb\ncccc\n";
      CHECK(ReadAll(*store, kRun) == all.substr(0, damage.stored));
      // The agent ships again from where the copy ends.
      for (int64_t at = damage.stored; at < 15; at += 5) {
        const std::string data = std::string(4, static_cast<char>('A' + at / 5)) + "\n";
        CHECK(Take(*store, Piece(kRun, at, data)).stored == at + 5);
      }
    }
    std::unique_ptr<FileLogStore> store = OpenFiles(dir.path);
    std::string want = std::string("aaaa\nbbbb\ncccc\n").substr(0, damage.stored);
    if (damage.stored <= 0) want += "AAAA\n";
    if (damage.stored <= 5) want += "BBBB\n";
    if (damage.stored <= 10) want += "CCCC\n";
    CHECK(ReadAll(*store, kRun) == want);
    CHECK(StateOf(*store, kRun)->bytes == FileSize(path));
  }
}

TEST_CASE("a segment whose head never reached the disk is removed, and the run starts again",
          "[logs]") {
  TempDir dir;
  std::string path;
  {
    std::unique_ptr<FileLogStore> store = OpenFiles(dir.path);
    path = *store->SegmentPath(kRun);
  }
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  AppendBytes(path, "TLG1 and then nothing");
  std::unique_ptr<FileLogStore> store = OpenFiles(dir.path);
  absl::StatusOr<std::vector<LogJobUsage>> jobs = store->Jobs();
  REQUIRE(jobs.ok());
  CHECK(jobs->empty());
  CHECK_FALSE(StateOf(*store, kRun).has_value());
  CHECK(FileSize(path) == -1);
  CHECK(Take(*store, Piece(kRun, 0, "fresh\n")).stored == 6);
  CHECK(ReadAll(*store, kRun) == "fresh\n");
}

TEST_CASE("a file_size raised by a probe survives a restart once a later record is written",
          "[logs]") {
  TempDir dir;
  {
    std::unique_ptr<FileLogStore> store = OpenFiles(dir.path);
    Take(*store, Piece(kRun, 0, "ab"));
    CHECK(Take(*store, Probe(kRun, 2, 100)).file_size == 100);
  }
  {
    std::unique_ptr<FileLogStore> store = OpenFiles(dir.path);
    CHECK(StateOf(*store, kRun)->file_size == 2);  // as of the last record written
    Take(*store, Probe(kRun, 2, 100));
    CHECK(Take(*store, Piece(kRun, 2, "cd")).file_size == 100);
  }
  std::unique_ptr<FileLogStore> store = OpenFiles(dir.path);
  CHECK(StateOf(*store, kRun)->file_size == 100);
  CHECK(StateOf(*store, kRun)->stored == 4);
}

TEST_CASE(
    "the file store lays segments out by job and run, private, and removes a crashed "
    "DeleteJob's leftovers",
    "[logs]") {
  TempDir tmp;
  const std::string dir = tmp.path + "/data/logs";
  const std::string run = "j-1/2/w.x-0/3";
  {
    std::unique_ptr<FileLogStore> store = OpenFiles(dir);
    CHECK(Mode(dir) == 0700);
    Take(*store, Piece(run, 0, "hi\n"));
    CHECK(*store->SegmentPath(run) == dir + "/j-1/2.w.x-0.3.seg");
    CHECK(Mode(dir + "/j-1") == 0700);
    CHECK(Mode(dir + "/j-1/2.w.x-0.3.seg") == 0600);
    CHECK(store->SegmentPath("j-1/2/../3").status().code() == absl::StatusCode::kInvalidArgument);
  }
  std::filesystem::create_directories(dir + "/.deleting-j-9-77-1/sub");
  AppendBytes(dir + "/.deleting-j-9-77-1/sub/1.w.0.seg", "left");
  AppendBytes(dir + "/j-1/notes.txt", "not a segment");
  std::unique_ptr<FileLogStore> store = OpenFiles(dir);
  CHECK_FALSE(std::filesystem::exists(dir + "/.deleting-j-9-77-1"));
  absl::StatusOr<std::vector<LogJobUsage>> jobs = store->Jobs();
  REQUIRE(jobs.ok());
  REQUIRE(jobs->size() == 1);
  CHECK((*jobs)[0].job_id == "j-1");
  CHECK((*jobs)[0].bytes == FileSize(dir + "/j-1/2.w.x-0.3.seg"));
  REQUIRE(store->DeleteJob("j-1").ok());
  CHECK_FALSE(std::filesystem::exists(dir + "/j-1"));
  CHECK(std::filesystem::is_empty(dir));

  AppendBytes(tmp.path + "/plain", "a file");
  absl::StatusOr<std::unique_ptr<FileLogStore>> not_dir = FileLogStore::Open(tmp.path + "/plain");
  CHECK(not_dir.status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("the file store holds a bounded number of runs' indexes, and Jobs keeps up", "[logs]") {
  TempDir dir;
  std::unique_ptr<FileLogStore> store = OpenFiles(dir.path, /*max_cached_runs=*/3);
  auto run_id = [](int i) {
    return "j-" + std::to_string(i % 4) + "/1/w-" + std::to_string(i) + "/0";
  };
  for (int i = 0; i < 10; ++i) Take(*store, Piece(run_id(i), 0, "run " + std::to_string(i)));
  CHECK(store->cached_runs() <= 3);
  absl::StatusOr<std::vector<LogJobUsage>> jobs = store->Jobs();
  REQUIRE(jobs.ok());
  CHECK(jobs->size() == 4);
  int64_t total = 0;
  for (const LogJobUsage& job : *jobs) total += job.bytes;
  for (int i = 0; i < 10; ++i) {
    CHECK(ReadAll(*store, run_id(i)) == "run " + std::to_string(i));
    total -= FileSize(*store->SegmentPath(run_id(i)));
  }
  CHECK(total == 0);
  CHECK(store->cached_runs() <= 3);
  // An append to a run evicted since keeps the summary Jobs answers from.
  Take(*store, Piece(run_id(0), 5, " and more"));
  jobs = store->Jobs();
  REQUIRE(jobs.ok());
  total = 0;
  for (const LogJobUsage& job : *jobs) total += job.bytes;
  for (int i = 0; i < 10; ++i) total -= FileSize(*store->SegmentPath(run_id(i)));
  CHECK(total == 0);

  // A run let go whose file is no longer the size this store left it is read whole again.
  const std::string path = *store->SegmentPath(run_id(1));
  const int64_t size = FileSize(path);
  for (int i = 5; i < 9; ++i) ReadAll(*store, run_id(i));  // lets run 1 go
  AppendBytes(path, "torn");
  CHECK(ReadAll(*store, run_id(1)) == "run 1");
  CHECK(FileSize(path) == size);
  CHECK(Take(*store, Piece(run_id(1), 5, "!")).stored == 6);
  CHECK(ReadAll(*store, run_id(1)) == "run 1!");
}

}  // namespace file_log_store_test
}  // namespace trainctl::storage
