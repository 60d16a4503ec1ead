// Opening the store: which files start a new cluster and which are refused, how a new database
// comes into place, and the checks of a database file.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

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
  const auto size = std::filesystem::file_size(db);
  REQUIRE(size > 8192);
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string junk(size - 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  absl::StatusOr<std::string> quick = SqliteStore::CheckFile(db, false);
  REQUIRE(quick.ok());
  CHECK(*quick != "ok");
  CHECK_FALSE(quick->empty());
  absl::StatusOr<std::string> full = SqliteStore::CheckFile(db, true);
  REQUIRE(full.ok());
  CHECK(*full != "ok");
}

}  // namespace
}  // namespace trainctl::storage
