// How trainctl words a damaged SQLite database, wherever SQLite finds the damage: when trainctld
// starts (the check after an unclean stop, or a later read when a clean stop skipped it), in a
// read or a commit while it runs, in `trainctld --check-db`. Every such error names the file and
// what the operator does about it (check it, restore a backup), so that whoever meets one, in
// trainctld's log or in a CLI's answer, can act.
//
//   if (IsDamage(sqlite3_errcode(db))) return DamagedDatabase(path, sqlite3_errmsg(db));
//   return SqliteError(db, "step");  // the same, or INTERNAL "sqlite step: ..." otherwise
#pragma once

#include <sqlite3.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace trainctl::storage {

// What to do about the damaged database file `db` (DATA_DIR/trainctl.db): how `trainctld
// --check-db` checks it, and how a backup (`trainctl admin backup`) is restored over it.
std::string RestoreAdvice(const std::string& db);

// Whether an SQLite result code (primary or extended) says the database file is damaged:
// SQLITE_CORRUPT, or SQLITE_NOTADB (its header overwritten).
bool IsDamage(int code);

// DATA_LOSS: "DB is damaged (SQLite: WHAT); " and RestoreAdvice(DB).
absl::Status DamagedDatabase(const std::string& db, absl::string_view what);

// The error of the call on `db` that just failed: DamagedDatabase naming its main file when
// SQLite found damage, else INTERNAL "sqlite CONTEXT: MESSAGE" ("sqlite: MESSAGE" without a
// context).
absl::Status SqliteError(sqlite3* db, absl::string_view context);

}  // namespace trainctl::storage
