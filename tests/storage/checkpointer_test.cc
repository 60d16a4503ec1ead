// The store's Checkpointer: commits no longer checkpoint the write-ahead log, the checkpointer's
// thread does, and the committed rows are in the database file once it has.
#include "storage/checkpointer.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "storage/job_archive.h"
#include "storage/store.h"
#include "tests/storage/temp_dir.h"

namespace trainctl::storage {
namespace {

int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// Commits `n` batches of one event with a 2 KiB reason: about a page each.
void CommitEvents(Store& store, int first, int n) {
  for (int i = first; i < first + n; ++i) {
    Batch b;
    b.events.push_back(
        {i, "", 0, "", "node-a", "NodeNote", std::string(2048, 'a' + i % 26), "test"});
    REQUIRE(store.Commit(b).ok());
  }
}

TEST_CASE("with a checkpointer, commits leave the write-ahead log to it") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  // An interval that never comes in the test: only CheckpointNow checkpoints.
  auto checkpointer = Checkpointer::Start(db, "", absl::Hours(1));
  REQUIRE(checkpointer.ok());
  REQUIRE((*store)->StartCheckpointer(absl::Hours(1)).ok());
  const int64_t db_size = FileSize(db);
  // Past SQLite's automatic checkpoint at 1,000 pages, which would have moved them.
  CommitEvents(**store, 0, 1500);
  CHECK(FileSize(db) == db_size);
  CHECK(FileSize(db + "-wal") > 1000 * 4096);
  REQUIRE((*checkpointer)->CheckpointNow().ok());
  CHECK((*checkpointer)->checkpoints() == 1);
  CHECK(FileSize(db) > db_size + 1000 * 4096);
  // The next write starts the log over instead of growing it.
  const int64_t wal_size = FileSize(db + "-wal");
  CommitEvents(**store, 1500, 10);
  CHECK(FileSize(db + "-wal") == wal_size);
  checkpointer->reset();
  store->reset();
  // A clean close leaves the database whole and no log.
  CHECK(FileSize(db + "-wal") == -1);
  auto reopened = Store::Open(db);
  REQUIRE(reopened.ok());
  auto archive = JobArchive::Open(db);
  REQUIRE(archive.ok());
  auto events = (*archive)->ListEvents({"", "node-a", "", 0, 2000, ""});
  REQUIRE(events.ok());
  CHECK(events->size() == 1510);
}

TEST_CASE("the checkpointer's thread checkpoints every interval") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  auto checkpointer = Checkpointer::Start(db, "", absl::Milliseconds(10));
  REQUIRE(checkpointer.ok());
  const int64_t db_size = FileSize(db);
  CommitEvents(**store, 0, 20);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((*checkpointer)->checkpoints() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK((*checkpointer)->checkpoints() >= 1);
  CHECK(FileSize(db) > db_size);
}

TEST_CASE("a checkpointer of a database that does not exist is refused") {
  TempDir dir;
  auto checkpointer = Checkpointer::Start(dir.path + "/none.db", "", absl::Seconds(1));
  REQUIRE_FALSE(checkpointer.ok());
  CHECK(checkpointer.status().message().find("cannot open database") != std::string::npos);
  CHECK(checkpointer.status().message().find("none.db") != std::string::npos);
}

}  // namespace
}  // namespace trainctl::storage
