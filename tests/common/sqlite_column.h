// The rows of a one-column query on an SQLite file, for tests that open what trainctl wrote
// (a backup, a data dir's database) as any SQLite client would.
//
//   CHECK(SqliteColumn(path, "PRAGMA integrity_check") == std::vector<std::string>{"ok"});
#pragma once

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace trainctl::testing {

// Opens `path` read-only and returns the first column of each row `sql` gives, as text.
// REQUIREs that the file opens and the SQL compiles.
inline std::vector<std::string> SqliteColumn(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  const int prepared = sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
  std::vector<std::string> rows;
  while (prepared == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(st, 0);
    rows.emplace_back(text == nullptr ? "" : reinterpret_cast<const char*>(text));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  REQUIRE(prepared == SQLITE_OK);
  return rows;
}

}  // namespace trainctl::testing
