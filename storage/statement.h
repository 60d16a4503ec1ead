// A prepared SQLite statement with typed binding, for storage/ only.
//
//   Statement st(db, "SELECT name FROM nodes WHERE name = ?");
//   TC_RETURN_IF_ERROR(st.Bind({name}));
//   TC_ASSIGN_OR_RETURN(bool row, st.Step());
//   if (row) use(st.Text(0));
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "storage/sqlite_damage.h"

namespace trainctl::storage {

struct Null {};
struct Blob {
  std::string bytes;
};
using Value = std::variant<Null, int64_t, double, std::string, Blob>;

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      status_ = SqliteError(db, "prepare");
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Not OK when the SQL did not compile.
  const absl::Status& status() const { return status_; }

  // Ends the statement's current run (a cached statement keeps its compiled program).
  void Reset() { sqlite3_reset(stmt_); }

  // Resets the statement and binds `values` to parameters 1..n.
  absl::Status Bind(std::initializer_list<Value> values) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    int i = 1;
    for (const Value& v : values) {
      int rc = SQLITE_OK;
      if (std::holds_alternative<Null>(v)) {
        rc = sqlite3_bind_null(stmt_, i);
      } else if (const int64_t* n = std::get_if<int64_t>(&v)) {
        rc = sqlite3_bind_int64(stmt_, i, *n);
      } else if (const double* d = std::get_if<double>(&v)) {
        rc = sqlite3_bind_double(stmt_, i, *d);
      } else if (const std::string* s = std::get_if<std::string>(&v)) {
        rc = sqlite3_bind_text(stmt_, i, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
      } else {
        const std::string& b = std::get<Blob>(v).bytes;
        rc = sqlite3_bind_blob(stmt_, i, b.data(), static_cast<int>(b.size()), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) return Error("bind");
      ++i;
    }
    return absl::OkStatus();
  }

  // Binds `values` and runs a statement that returns no rows.
  absl::Status Run(std::initializer_list<Value> values) {
    absl::Status s = Bind(values);
    if (!s.ok()) return s;
    if (sqlite3_step(stmt_) != SQLITE_DONE) return Error("step");
    return absl::OkStatus();
  }

  // True when a row is available, false when done.
  absl::StatusOr<bool> Step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return Error("step");
  }

  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  std::string Bytes(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    return p ? std::string(static_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  // A damaged file is DATA_LOSS naming it and what to do (storage/sqlite_damage.h).
  absl::Status Error(const char* what) const { return SqliteError(db_, what); }

  sqlite3* const db_;
  sqlite3_stmt* stmt_ = nullptr;
  absl::Status status_;
};

// Steps `st` (bound already; a Statement or a PgStatement) through its rows, calling `row(st)` for
// each until one returns an error, then resets it, so that its read ends (a reader left open would
// keep the WAL from being checkpointed past it).
template <typename St, typename Fn>
absl::Status ForEachRow(St& st, Fn row) {
  absl::Status status;
  for (;;) {
    absl::StatusOr<bool> more = st.Step();
    if (!more.ok()) status = more.status();
    if (!more.ok() || !*more) break;
    status = row(st);
    if (!status.ok()) break;
  }
  st.Reset();
  return status;
}

// The prepared statements of one connection, each compiled on its first use and kept for the
// connection's life: the same few statements run over and over, and compiling them each time
// cost more than binding and running them. Keyed by the SQL literal's address, so each call
// site passes its own string literal. Callers reset what they run (Bind and ForEachRow do).
class StatementCache {
 public:
  using StatementType = Statement;

  explicit StatementCache(sqlite3* db) : db_(db) {}

  absl::StatusOr<Statement*> Get(const char* sql) {
    std::unique_ptr<Statement>& st = cached_[sql];
    if (st == nullptr) {
      auto prepared = std::make_unique<Statement>(db_, sql);
      if (!prepared->status().ok()) return prepared->status();
      st = std::move(prepared);
    }
    return st.get();
  }
  // Ends every statement's current run (after a failed write, before ROLLBACK).
  void ResetAll() {
    for (auto& [sql, st] : cached_) st->Reset();
  }
  // Finalizes every statement; call before the connection closes.
  void Clear() { cached_.clear(); }

 private:
  sqlite3* const db_;
  std::unordered_map<const char*, std::unique_ptr<Statement>> cached_;
};

}  // namespace trainctl::storage
