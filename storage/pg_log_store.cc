// PgLogStore (storage/pg_log_store.h): its connection, its transactions, and the statements
// over log_runs and log_pieces.
#include "storage/pg_log_store.h"

#include <libpq-fe.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "storage/log_rules.h"

namespace trainctl::storage {
// Named, not anonymous: the storage library is a unity build.
namespace pg_log_store_internal {

// How many pieces a read fetches at most in one statement, and TailOffset in each of its.
constexpr int64_t kReadRows = 256;
constexpr int64_t kTailRows = 8;

constexpr char kFindRun[] =
    "SELECT job_id, node, stored, file_size, final, last_ms, bytes FROM log_runs "
    "WHERE run_id = ?";
constexpr char kFindRunForUpdate[] =
    "SELECT job_id, node, stored, file_size, final, last_ms, bytes FROM log_runs "
    "WHERE run_id = ? FOR UPDATE";
constexpr char kInsertRun[] =
    "INSERT INTO log_runs (run_id, job_id, node, stored, file_size, final, last_ms, bytes) "
    "VALUES (?, ?, ?, 0, 0, 0, 0, ?) ON CONFLICT (run_id) DO NOTHING";
constexpr char kUpdateRun[] =
    "UPDATE log_runs SET stored = ?, file_size = ?, final = ?, last_ms = ?, bytes = ? "
    "WHERE run_id = ?";
constexpr char kInsertPiece[] =
    "INSERT INTO log_pieces (run_id, start_offset, next_offset, time_ms, gap, data) "
    "VALUES (?, ?, ?, ?, ?, ?)";
// The pieces with bytes in [?2, ?3), each's part there (a gap's marker whole), in order.
constexpr char kReadPieces[] =
    "SELECT start_offset, next_offset, gap, CASE WHEN gap <> 0 THEN data ELSE "
    "substring(data FROM (greatest(?2 - start_offset, 0) + 1)::int "
    "FOR (least(next_offset, ?3) - greatest(start_offset, ?2))::int) END "
    "FROM log_pieces WHERE run_id = ?1 AND next_offset > ?2 AND start_offset < ?3 "
    "ORDER BY start_offset LIMIT ?4";
// The pieces that start before ?2, from the last back (a gap without its marker).
constexpr char kPiecesBefore[] =
    "SELECT start_offset, next_offset, gap, CASE WHEN gap <> 0 THEN '\\x'::bytea ELSE data END "
    "FROM log_pieces WHERE run_id = ?1 AND start_offset < ?2 "
    "ORDER BY start_offset DESC LIMIT ?3";
constexpr char kFirstSince[] =
    "SELECT start_offset FROM log_pieces WHERE run_id = ? AND time_ms >= ? AND start_offset < ? "
    "ORDER BY start_offset LIMIT 1";
constexpr char kLockJobRuns[] = "SELECT run_id FROM log_runs WHERE job_id = ? FOR UPDATE";
constexpr char kDeleteJobPieces[] =
    "DELETE FROM log_pieces WHERE run_id IN (SELECT run_id FROM log_runs WHERE job_id = ?)";
constexpr char kDeleteJobRuns[] = "DELETE FROM log_runs WHERE job_id = ?";
constexpr char kJobs[] =
    "SELECT job_id, sum(bytes)::bigint, max(last_ms), min(final) FROM log_runs GROUP BY job_id";

absl::Status NoCopy(const std::string& run_id) {
  return absl::NotFoundError(absl::StrCat("the store holds no log of run ", run_id));
}

}  // namespace pg_log_store_internal

absl::StatusOr<std::unique_ptr<PgLogStore>> PgLogStore::Open(const std::string& uri,
                                                             const std::string& application_name) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn,
                      PgConnection::Connect(uri, application_name));
  TC_RETURN_IF_ERROR(
      conn->CheckTables({"log_runs", "log_pieces"}, "log tables (schema version 17)"));
  return std::unique_ptr<PgLogStore>(new PgLogStore(std::move(conn)));
}

PgLogStore::PgLogStore(std::unique_ptr<PgConnection> conn)
    : conn_(std::move(conn)), cache_(conn_.get()) {}

PgLogStore::~PgLogStore() {
  absl::MutexLock lock(&mu_);
  cache_.Clear();
}

absl::Status PgLogStore::Write(const std::function<absl::Status()>& body) {
  absl::Status s = conn_->Exec("BEGIN");
  if (s.ok()) s = body();
  if (s.ok()) s = conn_->Exec("COMMIT");
  if (s.ok()) return s;
  cache_.ResetAll();
  conn_->RollBackOpen();
  return s;
}

absl::StatusOr<std::optional<LogRunState>> PgLogStore::FindRun(const std::string& run_id,
                                                               bool for_update) {
  using namespace pg_log_store_internal;
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(for_update ? kFindRunForUpdate : kFindRun));
  TC_RETURN_IF_ERROR(st->Bind({run_id}));
  absl::StatusOr<bool> row = st->Step();
  std::optional<LogRunState> state;
  if (row.ok() && *row) {
    state.emplace();
    state->job_id = st->Text(0);
    state->node = st->Text(1);
    state->stored = st->Int(2);
    state->file_size = st->Int(3);
    state->final = st->Int(4) != 0;
    state->last_ms = st->Int(5);
    state->bytes = st->Int(6);
  }
  st->Reset();
  if (!row.ok()) return row.status();
  return state;
}

absl::StatusOr<LogRunState> PgLogStore::RequireRun(const std::string& run_id) {
  TC_RETURN_IF_ERROR(ParseLogRunId(run_id).status());
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  TC_ASSIGN_OR_RETURN(std::optional<LogRunState> state, FindRun(run_id, /*for_update=*/false));
  if (!state.has_value()) return pg_log_store_internal::NoCopy(run_id);
  return *std::move(state);
}

absl::StatusOr<LogRunState> PgLogStore::Append(const std::string& node, const std::string& job_id,
                                               const v1::LogPiece& piece) {
  using namespace pg_log_store_internal;
  TC_RETURN_IF_ERROR(CheckLogPiece(node, job_id, piece));
  const std::string& run_id = piece.run_id();
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  LogRunState result;
  TC_RETURN_IF_ERROR(Write([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    TC_ASSIGN_OR_RETURN(std::optional<LogRunState> found, FindRun(run_id, /*for_update=*/true));
    const bool created = !found.has_value();
    if (created) {
      TC_ASSIGN_OR_RETURN(PgStatement * insert, cache_.Get(kInsertRun));
      TC_RETURN_IF_ERROR(insert->Run({run_id, job_id, node, kRowBytes}));
      TC_ASSIGN_OR_RETURN(found, FindRun(run_id, /*for_update=*/true));
      if (!found.has_value()) {
        return absl::InternalError(
            absl::StrCat("the log_runs row of run ", run_id, " is missing right after its insert"));
      }
    }
    LogRunState state = *std::move(found);
    TC_RETURN_IF_ERROR(CheckLogNode(state, node, run_id));
    const LogPieceEffect effect = ApplyLogPiece(piece, &state);
    if (effect.taken && piece.next_offset() > piece.offset()) {
      TC_ASSIGN_OR_RETURN(PgStatement * insert, cache_.Get(kInsertPiece));
      TC_RETURN_IF_ERROR(insert->Run({run_id, piece.offset(), piece.next_offset(), piece.time_ms(),
                                      int64_t{piece.gap()}, Blob{piece.data()}}));
      state.bytes += kRowBytes + static_cast<int64_t>(piece.data().size());
    }
    if (effect.changed) {
      TC_ASSIGN_OR_RETURN(PgStatement * update, cache_.Get(kUpdateRun));
      TC_RETURN_IF_ERROR(update->Run({state.stored, state.file_size, int64_t{state.final},
                                      state.last_ms, state.bytes, run_id}));
    }
    result = std::move(state);
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<std::optional<LogRunState>> PgLogStore::State(const std::string& run_id) {
  TC_RETURN_IF_ERROR(ParseLogRunId(run_id).status());
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return FindRun(run_id, /*for_update=*/false);
}

absl::StatusOr<LogSlice> PgLogStore::Read(const std::string& run_id, int64_t offset,
                                          int64_t max_bytes) {
  using namespace pg_log_store_internal;
  TC_RETURN_IF_ERROR(CheckLogRead(run_id, offset, max_bytes));
  absl::MutexLock lock(&mu_);
  LogSlice slice;
  TC_ASSIGN_OR_RETURN(slice.state, RequireRun(run_id));
  slice.next_offset = offset;
  const int64_t stored = slice.state.stored;
  if (offset >= stored) return slice;
  const int64_t end = max_bytes >= stored - offset ? stored : offset + max_bytes;
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kReadPieces));
  TC_RETURN_IF_ERROR(st->Bind({run_id, offset, end, kReadRows}));
  absl::Status s;
  for (;;) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) s = row.status();
    if (!row.ok() || !*row) break;
    const int64_t start = st->Int(0);
    const int64_t next = st->Int(1);
    if (st->Int(2) != 0) {  // a gap: its marker alone
      if (slice.data.empty()) {
        slice.data = st->Bytes(3);
        slice.next_offset = next;
      }
      break;
    }
    if (start > slice.next_offset) break;  // not following on (cannot be: pieces follow on)
    slice.data += st->Bytes(3);
    slice.next_offset = std::min(next, end);
  }
  st->Reset();
  TC_RETURN_IF_ERROR(s);
  return slice;
}

absl::StatusOr<int64_t> PgLogStore::OffsetSince(const std::string& run_id, int64_t since_ms) {
  using namespace pg_log_store_internal;
  absl::MutexLock lock(&mu_);
  TC_ASSIGN_OR_RETURN(LogRunState state, RequireRun(run_id));
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kFirstSince));
  TC_RETURN_IF_ERROR(st->Bind({run_id, since_ms, state.stored}));
  absl::StatusOr<bool> row = st->Step();
  const int64_t offset = row.ok() && *row ? st->Int(0) : state.stored;
  st->Reset();
  if (!row.ok()) return row.status();
  return offset;
}

absl::StatusOr<int64_t> PgLogStore::TailOffset(const std::string& run_id, int lines) {
  using namespace pg_log_store_internal;
  absl::MutexLock lock(&mu_);
  TC_ASSIGN_OR_RETURN(LogRunState state, RequireRun(run_id));
  LogTailCounter tail(lines, state.stored);
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kPiecesBefore));
  for (int64_t before = state.stored; !tail.done();) {
    TC_RETURN_IF_ERROR(st->Bind({run_id, before, kTailRows}));
    absl::Status s;
    int rows = 0;
    while (!tail.done()) {
      absl::StatusOr<bool> row = st->Step();
      if (!row.ok()) s = row.status();
      if (!row.ok() || !*row) break;
      ++rows;
      before = st->Int(0);
      if (st->Int(2) != 0) {
        tail.Gap(before, st->Int(1));
      } else {
        tail.Written(before, st->Bytes(3));
      }
    }
    st->Reset();
    TC_RETURN_IF_ERROR(s);
    if (rows < kTailRows) break;
  }
  return tail.result();
}

absl::Status PgLogStore::DeleteJob(const std::string& job_id) {
  using namespace pg_log_store_internal;
  TC_RETURN_IF_ERROR(CheckLogJobId(job_id));
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return Write([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    // The runs' rows first: an Append under way finishes before the pieces go, one after finds
    // no row.
    TC_ASSIGN_OR_RETURN(PgStatement * lock_runs, cache_.Get(kLockJobRuns));
    TC_RETURN_IF_ERROR(lock_runs->Bind({job_id}));
    absl::StatusOr<bool> row;
    do {
      row = lock_runs->Step();
    } while (row.ok() && *row);
    lock_runs->Reset();
    TC_RETURN_IF_ERROR(row.status());
    TC_ASSIGN_OR_RETURN(PgStatement * pieces, cache_.Get(kDeleteJobPieces));
    TC_RETURN_IF_ERROR(pieces->Run({job_id}));
    TC_ASSIGN_OR_RETURN(PgStatement * runs, cache_.Get(kDeleteJobRuns));
    return runs->Run({job_id});
  });
}

absl::StatusOr<std::vector<LogJobUsage>> PgLogStore::Jobs() {
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(pg_log_store_internal::kJobs));
  TC_RETURN_IF_ERROR(st->Bind({}));
  std::vector<LogJobUsage> jobs;
  absl::StatusOr<bool> row;
  for (row = st->Step(); row.ok() && *row; row = st->Step()) {
    jobs.push_back({st->Text(0), st->Int(1), st->Int(2), st->Int(3) != 0});
  }
  st->Reset();
  TC_RETURN_IF_ERROR(row.status());
  return jobs;
}

}  // namespace trainctl::storage
