// A libpq connection to trainctl's PostgreSQL database, and prepared statements on it with the
// interface of SQLite's Statement (storage/statement.h), so that the row code shared by both
// backends (storage/job_rows.h) runs unchanged on either. For storage/ only.
//
//   absl::StatusOr<std::unique_ptr<PgConnection>> conn = PgConnection::Connect(uri);
//   PgStatementCache cache(conn->get());
//   TC_ASSIGN_OR_RETURN(PgStatement * st, cache.Get("SELECT name FROM nodes WHERE name = ?"));
//   TC_RETURN_IF_ERROR(st->Bind({name}));
//   TC_ASSIGN_OR_RETURN(bool row, st->Step());
//
// SQL is written with SQLite's parameters (`?` numbered in order, or `?N`), translated to `$N`.
// A statement is prepared on the server at its first run, each parameter typed by the value
// first bound to it (text, bigint, double precision, bytea; a NULL lets the server infer it).
// Results come in binary; Int reads any integer column, Text and Bytes the raw bytes.
//
// Errors map SQLSTATEs to canonical codes: UNAVAILABLE when the connection is lost or the server
// refuses connections (class 08, 57P01-57P03, 53300), RESOURCE_EXHAUSTED for a full disk or out
// of memory (53100, 53200), ABORTED for serialization failures and deadlocks (40001, 40P01),
// INTERNAL otherwise. A lost connection is re-established by the next EnsureConnected();
// statements prepare themselves again on the new session.
//
// The fence of a leader's write transactions (trainctl_fence, storage/pg_schema.h) fails with
// FAILED_PRECONDITION carrying the kFencedPayload payload (IsFenced): its epoch has passed.
//
// Thread-safety: none; a connection and its statements are used by one thread at a time.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "storage/statement.h"

struct pg_conn;
struct pg_result;

namespace trainctl::storage {

inline constexpr char kFencedPayload[] = "trainctl/fenced";
// Whether `s` is the fence's error: another trainctld leads since this one's epoch.
inline bool IsFenced(const absl::Status& s) { return s.GetPayload(kFencedPayload).has_value(); }

class PgConnection {
 public:
  // Connects to `uri` (a libpq connection URI, postgres:// or postgresql://). UNAVAILABLE when
  // the server cannot be reached or refuses the connection, naming the server (not the
  // password).
  // `application_name` names the session in pg_stat_activity.
  static absl::StatusOr<std::unique_ptr<PgConnection>> Connect(
      const std::string& uri, const std::string& application_name = "trainctld");
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  pg_conn* raw() const { return conn_; }
  // "database DB at HOST", for messages.
  const std::string& where() const { return where_; }
  // Counts the sessions: a new one after each reconnect (prepared statements are per session).
  uint64_t session() const { return session_; }

  // Reconnects when the connection was lost; UNAVAILABLE when that fails.
  absl::Status EnsureConnected();

  // Runs `sql` (one or more statements without parameters).
  absl::Status Exec(const std::string& sql);
  // Runs `sql` and returns the first column of its first row ("" when there is none or NULL).
  absl::StatusOr<std::optional<std::string>> QueryValue(const std::string& sql);
  // After a failed transaction: ROLLBACK when the session is still in it (a lost connection or a
  // server that rolled back already needs none).
  void RollBackOpen();
  // OK when every one of `tables` exists; else FAILED_PRECONDITION naming `what` (e.g. "log
  // tables (schema version 17)") and saying to open the database with the store first, which
  // migrates it. For the stores that share the main store's database on connections of their own.
  absl::Status CheckTables(const std::vector<std::string>& tables, const std::string& what);

  // The error of `res` (may be null) as a canonical status, with `what` as its context.
  absl::Status Error(const std::string& what, const pg_result* res) const;

  // Pipeline mode, for the writes of a commit: between StartPipeline and FinishPipeline,
  // PgStatement::Run sends its statement without waiting for the server, so that a batch costs
  // one round trip rather than one per row. FinishPipeline waits for every result and returns
  // the first error (the statements after it were not run). REQUIRES: no statement reads rows
  // (Step) in between.
  absl::Status StartPipeline();
  absl::Status FinishPipeline();
  bool pipelined() const { return pipelined_; }
  // Counts a statement sent in pipeline mode; waits for the results when too many are pending,
  // so that neither side's socket buffer fills while the other waits.
  void Sent();

  // Forgets every prepared statement of this session (after an error in pipeline mode, which
  // statement it left unprepared is not known): each prepares itself again.
  void ForgetPrepared();

 private:
  PgConnection(pg_conn* conn, std::string where) : conn_(conn), where_(std::move(where)) {}
  // Sends a sync and reads every pending result and the sync's; keeps the first error.
  void Drain();

  pg_conn* const conn_;
  const std::string where_;
  uint64_t session_ = 1;
  bool pipelined_ = false;
  int pending_ = 0;
  absl::Status pipeline_error_;
};

class PgStatement {
 public:
  // `sql` must outlive the statement (a literal). `name` is unique on the connection.
  PgStatement(PgConnection* conn, std::string name, const char* sql);
  ~PgStatement();
  PgStatement(const PgStatement&) = delete;
  PgStatement& operator=(const PgStatement&) = delete;

  // Always OK: the statement is prepared at its first run, whose error Run or Step returns.
  const absl::Status& status() const { return status_; }

  // Drops the current result.
  void Reset();
  // Resets the statement and binds `values` to parameters 1..n.
  absl::Status Bind(std::initializer_list<Value> values);
  // Binds `values` and runs a statement that returns no rows; in pipeline mode only sends it
  // (PgConnection::FinishPipeline returns its error).
  absl::Status Run(std::initializer_list<Value> values);
  // Runs the bound statement at its first call; true while a row is available.
  absl::StatusOr<bool> Step();

  bool IsNull(int col) const;
  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  std::string Bytes(int col) const { return Text(col); }

 private:
  // Runs the statement with the bound values, preparing it first on a new session.
  absl::Status Execute();
  // The same in pipeline mode: sends it, and its preparation first, without waiting.
  absl::Status Send();

  PgConnection* const conn_;
  const std::string name_;
  const std::string sql_;  // with $N parameters
  absl::Status status_;
  uint64_t prepared_session_ = 0;
  // The bound values as libpq takes them; nulls_[i] marks a NULL.
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
  std::vector<int> formats_;
  std::vector<unsigned> types_;
  // values_ as libpq takes them (null pointers for NULLs), set by Bind.
  std::vector<const char*> pointers_;
  std::vector<int> lengths_;
  pg_result* result_ = nullptr;
  int row_ = -1;
};

// Prepared statements of one connection, keyed by the SQL literal's address (as StatementCache).
class PgStatementCache {
 public:
  using StatementType = PgStatement;

  explicit PgStatementCache(PgConnection* conn) : conn_(conn) {}
  absl::StatusOr<PgStatement*> Get(const char* sql);
  // Drops every statement's current result.
  void ResetAll();
  void Clear() { cached_.clear(); }

 private:
  PgConnection* const conn_;
  std::unordered_map<const char*, std::unique_ptr<PgStatement>> cached_;
};

// `sql` with SQLite's `?` and `?N` parameters written as PostgreSQL's `$N`.
std::string ToPgParameters(const char* sql);

}  // namespace trainctl::storage
