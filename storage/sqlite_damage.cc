#include "storage/sqlite_damage.h"

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace trainctl::storage {

std::string RestoreAdvice(const std::string& db) {
  const std::string dir = std::filesystem::path(db).parent_path().string();
  return absl::StrCat("`trainctld --check-db --data-dir ", dir.empty() ? "." : dir,
                      "` checks it without starting; to restore a backup (`trainctl admin "
                      "backup` makes them): with trainctld stopped, copy the backup over ",
                      db, ", remove ", db, "-wal and ", db, "-shm, and start it again");
}

bool IsDamage(int code) {
  const int primary = code & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

absl::Status DamagedDatabase(const std::string& db, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat(db, " is damaged (SQLite: ", what, "); ", RestoreAdvice(db)));
}

absl::Status SqliteError(sqlite3* db, absl::string_view context) {
  const char* message = sqlite3_errmsg(db);
  if (IsDamage(sqlite3_extended_errcode(db))) {
    const char* file = sqlite3_db_filename(db, "main");
    return DamagedDatabase(file != nullptr && *file != '\0' ? file : "the database", message);
  }
  return absl::InternalError(
      absl::StrCat("sqlite", context.empty() ? "" : " ", context, ": ", message));
}

}  // namespace trainctl::storage
