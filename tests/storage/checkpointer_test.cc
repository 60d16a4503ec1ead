// The store's Checkpointer: its thread copies the write-ahead log into the database file beside
// the commits, and beside a writer that never pauses the log still starts over.
#include "storage/checkpointer.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "storage/sqlite_job_archive.h"
#include "storage/sqlite_store.h"
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

// A new database at `db`.
std::unique_ptr<SqliteStore> OpenStore(const std::string& db) {
  auto store = SqliteStore::Open(db);
  REQUIRE(store.ok());
  return *std::move(store);
}

TEST_CASE("the checkpointer copies the write-ahead log before the commits' own checkpoint") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  std::unique_ptr<SqliteStore> store = OpenStore(db);
  // An interval that never comes in the test: only CheckpointNow checkpoints.
  auto checkpointer = Checkpointer::Start(db, "", absl::Hours(1));
  REQUIRE(checkpointer.ok());
  const int64_t db_size = FileSize(db);
  // Below SQLite's own checkpoint at 1,000 pages (each commit writes a few): the pages are in
  // the log only.
  CommitEvents(*store, 0, 50);
  CHECK(FileSize(db) == db_size);
  REQUIRE((*checkpointer)->CheckpointNow().ok());
  CHECK((*checkpointer)->checkpoints() == 1);
  CHECK(FileSize(db) > db_size + 50 * 2048);
  checkpointer->reset();
  store.reset();
  // A clean close leaves the database whole and no log.
  CHECK(FileSize(db + "-wal") == -1);
  auto archive = SqliteJobArchive::Open(db);
  REQUIRE(archive.ok());
  auto events = (*archive)->ListEvents({"", "node-a", "", 0, 1000, ""});
  REQUIRE(events.ok());
  CHECK(events->size() == 50);
}

TEST_CASE("with a checkpointer beside a writer that never pauses, the log stays bounded") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  std::unique_ptr<SqliteStore> store = OpenStore(db);
  REQUIRE(store->StartCheckpointer(absl::Milliseconds(1)).ok());
  // 6,000 pages in commits back to back: the log is started over, not grown to hold them all.
  CommitEvents(*store, 0, 6000);
  CHECK(FileSize(db + "-wal") < 3000 * 4096);
  CHECK(FileSize(db) > 5000 * 4096);
}

TEST_CASE("the checkpointer's thread checkpoints every interval") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  std::unique_ptr<SqliteStore> store = OpenStore(db);
  auto checkpointer = Checkpointer::Start(db, "", absl::Milliseconds(10));
  REQUIRE(checkpointer.ok());
  const int64_t db_size = FileSize(db);
  CommitEvents(*store, 0, 20);
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
