// SqliteWorkdirStore (storage/sqlite_workdir_store.h): its connection, its transactions, and the
// statements whose SQL is SQLite's own.
#include "storage/sqlite_workdir_store.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "storage/sqlite_damage.h"
#include "storage/sqlite_process.h"

namespace trainctl::storage {
// Named, not anonymous: the storage library is a unity build.
namespace sqlite_workdir_store_internal {

// BEGIN IMMEDIATE takes the write lock, so a plain SELECT reads the row as it stays.
constexpr WorkdirSql kSqliteWorkdirSql = {
    "SELECT size, upload_ms, complete FROM workdirs WHERE project = ? AND digest = ?",
};

}  // namespace sqlite_workdir_store_internal

absl::StatusOr<std::unique_ptr<SqliteWorkdirStore>> SqliteWorkdirStore::Open(
    const std::string& db_path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(db_path.c_str(), &db, SingleThreadOpenFlags(SQLITE_OPEN_READWRITE), nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(
        absl::StrCat("cannot open database ", db_path, " for workdirs: ", msg));
  }
  std::unique_ptr<SqliteWorkdirStore> store(new SqliteWorkdirStore(db, db_path));
  // As the loop's connection: its writes wait for the loop's commits, each as durable.
  sqlite3_busy_timeout(db, 5000);
  TC_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  TC_RETURN_IF_ERROR(store->Exec("PRAGMA secure_delete=FAST"));
  Statement tables(db,
                   "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                   "('workdirs', 'workdir_chunks', 'workdir_uses')");
  TC_RETURN_IF_ERROR(tables.status());
  TC_ASSIGN_OR_RETURN(bool row, tables.Step());
  if (!row || tables.Int(0) != 3) {
    return absl::FailedPreconditionError(
        absl::StrCat(db_path,
                     " has no workdirs tables (schema version 16): open it with the store "
                     "first, which migrates it"));
  }
  return store;
}

SqliteWorkdirStore::SqliteWorkdirStore(sqlite3* db, std::string path)
    : db_(db),
      path_(std::move(path)),
      cache_(db),
      rows_(&cache_, this, sqlite_workdir_store_internal::kSqliteWorkdirSql) {}

SqliteWorkdirStore::~SqliteWorkdirStore() {
  cache_.Clear();  // finalized before the connection closes
  sqlite3_close(db_);
}

absl::Status SqliteWorkdirStore::Exec(const char* sql) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return SqliteError(db_, sql);
  }
  return absl::OkStatus();
}

absl::Status SqliteWorkdirStore::Write(const std::function<absl::Status()>& body) {
  absl::Status s = Exec("BEGIN IMMEDIATE");
  if (s.ok()) s = body();
  if (s.ok()) s = Exec("COMMIT");
  if (s.ok()) return s;
  // SQLite's own failures are INTERNAL (SqliteError); the body's own verdicts pass unchanged.
  const int code = s.code() == absl::StatusCode::kInternal ? sqlite3_errcode(db_) & 0xff : 0;
  cache_.ResetAll();
  // After a full disk or an I/O error SQLite may have rolled back already.
  if (sqlite3_get_autocommit(db_) == 0) Exec("ROLLBACK").IgnoreError();
  if (code == SQLITE_FULL) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no space left for ", path_, " (writing a workdir): ", s.message()));
  }
  if (code == SQLITE_IOERR || code == SQLITE_BUSY || code == SQLITE_LOCKED) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path_, " (a workdir) now: ", s.message()));
  }
  return s;
}

}  // namespace trainctl::storage
