// Opening the store: which files start a new cluster and which are refused, how a new database
// comes into place (0600, its -wal and -shm too, whatever the umask), the checks of a database
// file, and the error of a read that meets a damaged one.
#include <sqlite3.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "storage/job_archive.h"
#include "storage/sqlite_job_archive.h"
#include "storage/sqlite_store.h"
#include "tests/storage/temp_dir.h"

namespace trainctl::storage {
namespace {

TEST_CASE("only a missing file is a new cluster: empty files and other databases are refused") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  std::ofstream(db).close();  // 0 bytes
  absl::StatusOr<std::unique_ptr<Store>> empty = SqliteStore::Open(db);
  CHECK(empty.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(empty.status().message()),
             Catch::Contains(db + " is empty") && Catch::Contains("backup"));
  CHECK(std::filesystem::file_size(db) == 0);

  std::ofstream(db) << "name,value\nnot,sqlite\n" << std::string(4096, 'x');
  absl::StatusOr<std::unique_ptr<Store>> text = SqliteStore::Open(db);
  CHECK(text.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(text.status().message()),
             Catch::Contains(db + " is not an SQLite database"));

  std::filesystem::remove(db);
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "CREATE TABLE notes (body TEXT)", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(raw);
  absl::StatusOr<std::unique_ptr<Store>> other = SqliteStore::Open(db);
  CHECK(other.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(other.status().message()), Catch::Contains("without trainctl's schema"));
}

TEST_CASE("a new database is made whole beside its path, then renamed into place") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  // What a crash while making one would leave.
  std::ofstream(db + ".new") << "half";
  REQUIRE(SqliteStore::Open(db).ok());
  CHECK_FALSE(std::filesystem::exists(db + ".new"));
  absl::StatusOr<std::unique_ptr<Store>> again = SqliteStore::Open(db);
  REQUIRE(again.ok());
  CHECK(*(*again)->SchemaVersion() == Store::kSchemaVersion);
}

// Overwrites `db` from byte `from` (a page boundary) to its end with junk.
void OverwriteFrom(const std::string& db, std::uintmax_t from) {
  const auto size = std::filesystem::file_size(db);
  REQUIRE(size > from);
  std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(from));
  const std::string junk(size - from, '\x5a');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

TEST_CASE("CheckFile finds a sound database ok and names the damage of a broken one") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  {
    absl::StatusOr<std::unique_ptr<Store>> store = SqliteStore::Open(db);
    REQUIRE(store.ok());
    Batch b;
    for (int i = 0; i < 50; ++i) {
      sched::Event e;
      e.time_ms = 1000 + i;
      e.job_id = "j-" + std::to_string(i);
      e.type = "JobQueued";
      e.reason = std::string(500, 'r');
      b.events.push_back(e);
    }
    REQUIRE((*store)->Commit(b).ok());
  }
  CHECK(*SqliteStore::CheckFile(db, false) == "ok");
  CHECK(*SqliteStore::CheckFile(db, true) == "ok");
  // Every page after the first (the schema) overwritten.
  REQUIRE(std::filesystem::file_size(db) > 8192);
  OverwriteFrom(db, 4096);
  absl::StatusOr<std::string> quick = SqliteStore::CheckFile(db, false);
  REQUIRE(quick.ok());
  CHECK(*quick != "ok");
  CHECK_FALSE(quick->empty());
  absl::StatusOr<std::string> full = SqliteStore::CheckFile(db, true);
  REQUIRE(full.ok());
  CHECK(*full != "ok");
}

// The permission bits of `path`.
mode_t FileMode(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("a new database, its -wal and its -shm are 0600 whatever the umask") {
  for (const mode_t mask : {mode_t{0}, mode_t{022}, mode_t{0277}}) {
    INFO("umask " << mask);
    TempDir dir;
    const std::string db = dir.path + "/trainctl.db";
    const mode_t before = umask(mask);
    absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(db);
    umask(before);
    REQUIRE(store.ok());
    Batch b;
    b.events.push_back(sched::Event{});
    b.events.back().type = "Test";
    REQUIRE((*store)->Commit(b).ok());
    for (const char* suffix : {"", "-wal", "-shm"}) {
      INFO(suffix);
      CHECK(FileMode(db + suffix) == 0600);
    }
  }
}

TEST_CASE("a read that meets a damaged database is DATA_LOSS naming the file and the remedy") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(db);
    REQUIRE(store.ok());
    Batch b;
    for (int i = 0; i < 400; ++i) {
      v1::Job job;
      job.set_id("j-" + std::to_string(i));
      job.set_project("a");
      job.set_state(v1::JOB_STATE_SUCCEEDED);
      job.mutable_spec()->set_display_name(std::string(2000, 'n'));
      b.jobs.push_back(job);
    }
    REQUIRE((*store)->Commit(b).ok());
  }
  // The last quarter of the pages overwritten: the schema, first in the file, stays readable,
  // so the store opens, as after a clean stop (no check), and its reads meet the damage.
  const auto size = std::filesystem::file_size(db);
  REQUIRE(size > 400 * 2000);
  OverwriteFrom(db, (size * 3 / 4) / 4096 * 4096);
  auto check = [&](const absl::Status& s) {
    CHECK(s.code() == absl::StatusCode::kDataLoss);
    CHECK_THAT(std::string(s.message()),
               Catch::StartsWith(db + " is damaged (SQLite: ") &&
                   Catch::Contains("`trainctld --check-db --data-dir " + dir.path + "`") &&
                   Catch::Contains("`trainctl admin backup`") &&
                   Catch::Contains("copy the backup over " + db + ", remove " + db + "-wal"));
  };
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(db);
  REQUIRE(store.ok());
  check((*store)->Load().status());
  absl::StatusOr<std::unique_ptr<SqliteJobArchive>> archive = SqliteJobArchive::Open(db);
  REQUIRE(archive.ok());
  absl::Status scanned = absl::OkStatus();
  for (int i = 0; i < 400 && scanned.ok(); ++i) {
    scanned = (*archive)->Get("j-" + std::to_string(i)).status();
  }
  check(scanned);
}

}  // namespace
}  // namespace trainctl::storage
