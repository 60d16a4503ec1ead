#include "storage/backup.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "storage/sqlite_store.h"

namespace trainctl::storage {
namespace {

struct CloseSqlite {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using SqliteDb = std::unique_ptr<sqlite3, CloseSqlite>;

absl::StatusOr<SqliteDb> OpenForBackup(const std::string& path, int flags, const char* purpose) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  SqliteDb db(raw);
  if (rc != SQLITE_OK) {
    return absl::InternalError(absl::StrCat("cannot open ", path, " ", purpose, ": ",
                                            raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  // A reader waits out the writer's brief exclusive moments (a WAL checkpoint's reset).
  sqlite3_busy_timeout(raw, 5000);
  return db;
}

absl::Status ExecSql(sqlite3* db, const std::string& path, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s =
        absl::InternalError(absl::StrCat(sql, " on ", path, ": ", err ? err : sqlite3_errmsg(db)));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

// Copies every page of `src` into `dst` within the read transaction `src` holds.
absl::Status CopyPages(sqlite3* src, sqlite3* dst, const std::string& source,
                       const std::string& dest, const BackupOptions& options, BackupInfo* info) {
  sqlite3_backup* backup = sqlite3_backup_init(dst, "main", src, "main");
  if (backup == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot back up ", source, " into ", dest, ": ", sqlite3_errmsg(dst)));
  }
  absl::Status status;
  for (;;) {
    if (options.cancelled && options.cancelled()) {
      status = absl::CancelledError(absl::StrCat("the backup of ", source, " was cancelled"));
      break;
    }
    const int rc = sqlite3_backup_step(backup, options.pages_per_step);
    ++info->steps;
    if (rc == SQLITE_DONE) break;
    if (rc == SQLITE_OK) continue;
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      usleep(10'000);  // a checkpoint's reset of the log: gone within milliseconds
      continue;
    }
    status = absl::InternalError(
        absl::StrCat("backing up ", source, " into ", dest, ": ", sqlite3_errstr(rc)));
    break;
  }
  info->pages = sqlite3_backup_pagecount(backup);
  const int finished = sqlite3_backup_finish(backup);
  if (status.ok() && finished != SQLITE_OK) {
    status = absl::InternalError(
        absl::StrCat("backing up ", source, " into ", dest, ": ", sqlite3_errmsg(dst)));
  }
  return status;
}

}  // namespace

absl::StatusOr<BackupInfo> BackupDatabase(const std::string& source, const std::string& dest,
                                          const BackupOptions& options) {
  BackupInfo info;
  {
    TC_ASSIGN_OR_RETURN(SqliteDb src, OpenForBackup(source, SQLITE_OPEN_READONLY, "to back it up"));
    TC_ASSIGN_OR_RETURN(
        SqliteDb dst,
        OpenForBackup(dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "to write a backup"));
    // The copy's state: one read transaction from the first step to the last (see backup.h).
    // Its first read fixes the snapshot.
    TC_RETURN_IF_ERROR(ExecSql(src.get(), source, "BEGIN; SELECT count(*) FROM sqlite_master;"));
    // The copy is made again if trainctld dies meanwhile: no need to sync it page by page.
    TC_RETURN_IF_ERROR(ExecSql(dst.get(), dest, "PRAGMA synchronous=OFF"));
    absl::Status copied = CopyPages(src.get(), dst.get(), source, dest, options, &info);
    // The read ends before anything else, so that checkpoints go on past it.
    ExecSql(src.get(), source, "COMMIT").IgnoreError();
    src.reset();
    TC_RETURN_IF_ERROR(copied);
    // The source's header says WAL; the copy becomes one self-contained file.
    TC_RETURN_IF_ERROR(ExecSql(dst.get(), dest, "PRAGMA journal_mode=DELETE"));
  }
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const std::string side = dest + suffix;
    if (unlink(side.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(absl::StrCat("cannot remove ", side, ": ", strerror(errno)));
    }
  }
  TC_ASSIGN_OR_RETURN(std::string found, SqliteStore::CheckFile(dest, /*full=*/true));
  if (found != "ok") {
    return absl::DataLossError(
        absl::StrCat("the backup of ", source, " failed SQLite's integrity_check: ", found));
  }
  struct stat st;
  if (stat(dest.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("cannot stat ", dest, ": ", strerror(errno)));
  }
  info.bytes = st.st_size;
  return info;
}

}  // namespace trainctl::storage
