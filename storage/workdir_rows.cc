// WorkdirRows (storage/workdir_rows.h): the statements both dialects share, and the logic of the
// WorkdirStore backends over them, instantiated for SQLite's and PostgreSQL's statement caches.
#include "storage/workdir_rows.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "storage/pg_statement.h"
#include "storage/statement.h"

namespace trainctl::storage {
// Named, not anonymous: the storage library is a unity build.
namespace workdir_rows_sql {

// The chunks an abandoned upload or a sweep deletes in one transaction (each at most 1 MiB): a
// short write, which delays the loop's commits little.
constexpr int64_t kDeleteBatch = 16;

constexpr char kGet[] =
    "SELECT size, upload_ms FROM workdirs WHERE project = ? AND digest = ? AND complete = 1";
constexpr char kClaim[] =
    "INSERT INTO workdirs (project, digest, size, upload_ms, complete) VALUES (?, ?, ?, ?, 0) "
    "ON CONFLICT (project, digest) DO UPDATE SET size = excluded.size, "
    "upload_ms = excluded.upload_ms, complete = 0";
constexpr char kRefresh[] =
    "UPDATE workdirs SET upload_ms = ?3 WHERE project = ?1 AND digest = ?2 AND upload_ms < ?3";
constexpr char kInsertChunk[] =
    "INSERT INTO workdir_chunks (project, digest, seq, data) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (project, digest, seq) DO UPDATE SET data = excluded.data";
constexpr char kTotals[] =
    "SELECT count(*), coalesce(sum(length(data)), 0) FROM workdir_chunks WHERE project = ? AND "
    "digest = ?";
constexpr char kMarkComplete[] =
    "UPDATE workdirs SET complete = 1 WHERE project = ? AND digest = ?";
constexpr char kMarkPartial[] = "UPDATE workdirs SET complete = 0 WHERE project = ? AND digest = ?";
constexpr char kFirstChunk[] =
    "SELECT min(seq) FROM workdir_chunks WHERE project = ? AND digest = ?";
constexpr char kDeleteChunksBelow[] =
    "DELETE FROM workdir_chunks WHERE project = ? AND digest = ? AND seq < ?";
constexpr char kDeleteRow[] = "DELETE FROM workdirs WHERE project = ? AND digest = ?";
constexpr char kReadChunk[] =
    "SELECT data FROM workdir_chunks WHERE project = ? AND digest = ? AND seq = ?";
constexpr char kAddUse[] =
    "INSERT INTO workdir_uses (project, digest, job_id, add_ms) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (project, digest, job_id) DO NOTHING";
constexpr char kCountUses[] = "SELECT count(*) FROM workdir_uses WHERE project = ? AND digest = ?";
constexpr char kDeleteStaleUses[] =
    "DELETE FROM workdir_uses WHERE add_ms < ? AND NOT EXISTS "
    "(SELECT 1 FROM jobs WHERE jobs.id = workdir_uses.job_id)";
constexpr char kUnused[] =
    "SELECT project, digest, size, upload_ms FROM workdirs WHERE upload_ms < ? AND NOT EXISTS "
    "(SELECT 1 FROM workdir_uses WHERE workdir_uses.project = workdirs.project AND "
    "workdir_uses.digest = workdirs.digest) ORDER BY project, digest";

// Runs `st` (bound already) and reads its one row with `read`; false when it returned none.
template <typename St, typename Fn>
absl::StatusOr<bool> StepOne(St* st, Fn read) {
  absl::StatusOr<bool> row = st->Step();
  if (row.ok() && *row) read(*st);
  st->Reset();
  return row;
}

}  // namespace workdir_rows_sql

template <typename Cache>
WorkdirRows<Cache>::Hold::Hold(WorkdirRows* rows, Key key, bool wait)
    : rows_(rows), key_(std::move(key)) {
  auto free = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return rows_->busy_.count(key_) == 0; };
  absl::MutexLock lock(&rows_->mu_);
  if (wait) rows_->mu_.Await(absl::Condition(&free));
  if (!free()) return;
  rows_->busy_.insert(key_);
  held_ = true;
}

template <typename Cache>
WorkdirRows<Cache>::Hold::~Hold() {
  if (!held_) return;
  absl::MutexLock lock(&rows_->mu_);
  rows_->busy_.erase(key_);
}

template <typename Cache>
absl::StatusOr<std::optional<typename WorkdirRows<Cache>::Row>> WorkdirRows<Cache>::FindForWrite(
    const std::string& project, const std::string& digest) {
  TC_ASSIGN_OR_RETURN(auto* st, cache_->Get(sql_.find_for_write));
  TC_RETURN_IF_ERROR(st->Bind({project, digest}));
  Row row;
  TC_ASSIGN_OR_RETURN(bool found, workdir_rows_sql::StepOne(st, [&](auto& r) {
                        row = {r.Int(0), r.Int(1), r.Int(2) != 0};
                      }));
  if (!found) return std::nullopt;
  return row;
}

template <typename Cache>
absl::StatusOr<std::optional<WorkdirInfo>> WorkdirRows<Cache>::Get(const std::string& project,
                                                                   const std::string& digest) {
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->Ready());
  TC_ASSIGN_OR_RETURN(auto* st, cache_->Get(workdir_rows_sql::kGet));
  TC_RETURN_IF_ERROR(st->Bind({project, digest}));
  WorkdirInfo info{project, digest, 0, 0};
  TC_ASSIGN_OR_RETURN(bool found, workdir_rows_sql::StepOne(st, [&](auto& r) {
                        info.size = r.Int(0);
                        info.upload_ms = r.Int(1);
                      }));
  if (!found) return std::nullopt;
  return info;
}

template <typename Cache>
absl::StatusOr<bool> WorkdirRows<Cache>::Put(const WorkdirInfo& info, const Next& next) {
  Hold hold(this, {info.project, info.digest}, /*wait=*/true);
  bool complete = false;
  bool replaces = false;
  {
    absl::MutexLock lock(&mu_);
    TC_RETURN_IF_ERROR(conn_->Ready());
    TC_RETURN_IF_ERROR(conn_->Write([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
      TC_ASSIGN_OR_RETURN(std::optional<Row> row, FindForWrite(info.project, info.digest));
      complete = row.has_value() && row->complete;
      if (complete) {
        // Kept another grace from this upload, which a job is about to use.
        TC_ASSIGN_OR_RETURN(auto* refresh, cache_->Get(workdir_rows_sql::kRefresh));
        return refresh->Run({info.project, info.digest, info.upload_ms});
      }
      replaces = row.has_value();
      TC_ASSIGN_OR_RETURN(auto* claim, cache_->Get(workdir_rows_sql::kClaim));
      return claim->Run({info.project, info.digest, info.size, info.upload_ms});
    }));
  }
  if (complete) return false;
  absl::Status s;
  if (replaces) {
    // An earlier upload's partial chunks, which this one replaces.
    absl::StatusOr<bool> cleared =
        DeleteChunks(info.project, info.digest, info.upload_ms, /*and_row=*/false);
    s = cleared.status();
    if (s.ok() && !*cleared) {
      s = absl::AbortedError(absl::StrCat("the upload of workdir ", info.digest, " of project ",
                                          info.project, " was taken over by another"));
    }
  }
  if (s.ok()) s = WriteChunks(info, next);
  if (s.ok()) return true;
  bool connected;
  {
    absl::MutexLock lock(&mu_);
    connected = conn_->Connected();
  }
  // Abandoned: its rows go now, or with the next Sweep or Put when the database cannot be
  // reached (the error returned is the one that abandoned it, not this cleanup's).
  if (connected) {
    DeleteChunks(info.project, info.digest, info.upload_ms, /*and_row=*/true).IgnoreError();
  }
  return s;
}

template <typename Cache>
absl::Status WorkdirRows<Cache>::WriteChunks(const WorkdirInfo& info, const Next& next) {
  const std::string what = absl::StrCat("workdir ", info.digest, " of project ", info.project);
  int64_t seq = 0;
  int64_t total = 0;
  std::string chunk;
  for (;;) {
    chunk.clear();
    TC_ASSIGN_OR_RETURN(const bool more, next(&chunk));
    const int64_t n = static_cast<int64_t>(chunk.size());
    if (n > kWorkdirChunkBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("a chunk of ", n, " bytes of ", what, ", over ", kWorkdirChunkBytes));
    }
    total += n;
    if (total > info.size || (!more && total != info.size)) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has ", more ? "more than " : "", total,
                                                     " bytes, not its size of ", info.size));
    }
    absl::MutexLock lock(&mu_);
    TC_RETURN_IF_ERROR(conn_->Ready());
    TC_RETURN_IF_ERROR(conn_->Write([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
      TC_ASSIGN_OR_RETURN(std::optional<Row> row, FindForWrite(info.project, info.digest));
      if (!row.has_value() || row->complete || row->upload_ms != info.upload_ms ||
          row->size != info.size) {
        return absl::AbortedError(absl::StrCat(
            "the partial ", what, " was deleted or taken over by another upload while written"));
      }
      if (n > 0) {
        TC_ASSIGN_OR_RETURN(auto* insert, cache_->Get(workdir_rows_sql::kInsertChunk));
        TC_RETURN_IF_ERROR(insert->Run({info.project, info.digest, seq, Blob{std::move(chunk)}}));
      }
      if (more) return absl::OkStatus();
      // The last chunk: every one is there (none deleted, none left of another upload).
      TC_ASSIGN_OR_RETURN(auto* totals, cache_->Get(workdir_rows_sql::kTotals));
      TC_RETURN_IF_ERROR(totals->Bind({info.project, info.digest}));
      int64_t count = 0;
      int64_t bytes = 0;
      TC_RETURN_IF_ERROR(workdir_rows_sql::StepOne(totals, [&](auto& r) {
                           count = r.Int(0);
                           bytes = r.Int(1);
                         }).status());
      const int64_t written = seq + (n > 0 ? 1 : 0);
      if (count != written || bytes != info.size) {
        return absl::AbortedError(absl::StrCat(what, " holds ", count, " chunks of ", bytes,
                                               " bytes, not the ", written, " of ", info.size,
                                               " written: another upload or a sweep changed it"));
      }
      TC_ASSIGN_OR_RETURN(auto* mark, cache_->Get(workdir_rows_sql::kMarkComplete));
      return mark->Run({info.project, info.digest});
    }));
    if (n > 0) ++seq;
    if (!more) return absl::OkStatus();
  }
}

template <typename Cache>
absl::StatusOr<bool> WorkdirRows<Cache>::DeleteChunks(const std::string& project,
                                                      const std::string& digest,
                                                      int64_t owner_upload_ms, bool and_row) {
  for (;;) {
    bool ours = true;
    bool done = false;
    absl::MutexLock lock(&mu_);
    TC_RETURN_IF_ERROR(conn_->Ready());
    TC_RETURN_IF_ERROR(conn_->Write([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
      TC_ASSIGN_OR_RETURN(std::optional<Row> row, FindForWrite(project, digest));
      if (row.has_value() ? row->complete || row->upload_ms != owner_upload_ms : !and_row) {
        ours = false;
        return absl::OkStatus();
      }
      TC_ASSIGN_OR_RETURN(auto* first, cache_->Get(workdir_rows_sql::kFirstChunk));
      TC_RETURN_IF_ERROR(first->Bind({project, digest}));
      std::optional<int64_t> seq;
      TC_RETURN_IF_ERROR(workdir_rows_sql::StepOne(first, [&](auto& r) {
                           if (!r.IsNull(0)) seq = r.Int(0);
                         }).status());
      if (seq.has_value()) {
        TC_ASSIGN_OR_RETURN(auto* del, cache_->Get(workdir_rows_sql::kDeleteChunksBelow));
        return del->Run({project, digest, *seq + workdir_rows_sql::kDeleteBatch});
      }
      done = true;
      ours = row.has_value();
      if (!and_row || !row.has_value()) return absl::OkStatus();
      TC_ASSIGN_OR_RETURN(auto* del, cache_->Get(workdir_rows_sql::kDeleteRow));
      return del->Run({project, digest});
    }));
    if (!ours || done) return ours;
  }
}

template <typename Cache>
absl::Status WorkdirRows<Cache>::Read(const std::string& project, const std::string& digest,
                                      const Visit& visit) {
  TC_ASSIGN_OR_RETURN(std::optional<WorkdirInfo> info, Get(project, digest));
  const std::string what = absl::StrCat("workdir ", digest, " of project ", project);
  if (!info.has_value()) return absl::NotFoundError(absl::StrCat("no ", what));
  int64_t read = 0;
  std::string chunk;
  // Chunk by chunk, each in a statement of its own: no read stays open while `visit` works.
  for (int64_t seq = 0; read < info->size; ++seq) {
    {
      absl::MutexLock lock(&mu_);
      TC_RETURN_IF_ERROR(conn_->Ready());
      TC_ASSIGN_OR_RETURN(auto* st, cache_->Get(workdir_rows_sql::kReadChunk));
      TC_RETURN_IF_ERROR(st->Bind({project, digest, seq}));
      TC_ASSIGN_OR_RETURN(bool found,
                          workdir_rows_sql::StepOne(st, [&](auto& r) { chunk = r.Bytes(0); }));
      if (!found) {
        return absl::AbortedError(absl::StrCat(what, " was deleted while it was read"));
      }
    }
    if (chunk.empty() || read + static_cast<int64_t>(chunk.size()) > info->size) {
      return absl::DataLossError(absl::StrCat("chunk ", seq, " of ", what, " has ", chunk.size(),
                                              " bytes, more than its size of ", info->size,
                                              " allows, or none"));
    }
    read += static_cast<int64_t>(chunk.size());
    TC_RETURN_IF_ERROR(visit(chunk));
  }
  return absl::OkStatus();
}

template <typename Cache>
absl::Status WorkdirRows<Cache>::AddUse(const std::string& project, const std::string& digest,
                                        const std::string& job_id, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->Ready());
  return conn_->Write([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    TC_ASSIGN_OR_RETURN(auto* add, cache_->Get(workdir_rows_sql::kAddUse));
    return add->Run({project, digest, job_id, now_ms});
  });
}

template <typename Cache>
absl::StatusOr<bool> WorkdirRows<Cache>::SweepOne(WorkdirInfo* info, int64_t cutoff_ms) {
  bool sweep = false;
  {
    absl::MutexLock lock(&mu_);
    TC_RETURN_IF_ERROR(conn_->Ready());
    TC_RETURN_IF_ERROR(conn_->Write([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
      // The row locked first, the uses counted after (a statement of its own, which sees a use
      // whose AddUse held the row until it committed).
      TC_ASSIGN_OR_RETURN(std::optional<Row> row, FindForWrite(info->project, info->digest));
      if (!row.has_value() || row->upload_ms >= cutoff_ms) return absl::OkStatus();
      TC_ASSIGN_OR_RETURN(auto* uses, cache_->Get(workdir_rows_sql::kCountUses));
      TC_RETURN_IF_ERROR(uses->Bind({info->project, info->digest}));
      int64_t count = 0;
      TC_RETURN_IF_ERROR(
          workdir_rows_sql::StepOne(uses, [&](auto& r) { count = r.Int(0); }).status());
      if (count > 0) return absl::OkStatus();
      sweep = true;
      info->size = row->size;
      info->upload_ms = row->upload_ms;
      if (!row->complete) return absl::OkStatus();
      TC_ASSIGN_OR_RETURN(auto* partial, cache_->Get(workdir_rows_sql::kMarkPartial));
      return partial->Run({info->project, info->digest});
    }));
  }
  if (!sweep) return false;
  return DeleteChunks(info->project, info->digest, info->upload_ms, /*and_row=*/true);
}

template <typename Cache>
absl::StatusOr<std::vector<WorkdirInfo>> WorkdirRows<Cache>::Sweep(int64_t now_ms,
                                                                   int64_t grace_ms) {
  const int64_t cutoff_ms = now_ms - grace_ms;
  std::vector<WorkdirInfo> unused;
  {
    absl::MutexLock lock(&mu_);
    TC_RETURN_IF_ERROR(conn_->Ready());
    TC_RETURN_IF_ERROR(conn_->Write([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
      TC_ASSIGN_OR_RETURN(auto* st, cache_->Get(workdir_rows_sql::kDeleteStaleUses));
      return st->Run({cutoff_ms});
    }));
    TC_ASSIGN_OR_RETURN(auto* st, cache_->Get(workdir_rows_sql::kUnused));
    TC_RETURN_IF_ERROR(st->Bind({cutoff_ms}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& r) {
      unused.push_back({r.Text(0), r.Text(1), r.Int(2), r.Int(3)});
      return absl::OkStatus();
    }));
  }
  std::vector<WorkdirInfo> deleted;
  for (WorkdirInfo& info : unused) {
    // One a Put (or another Sweep) of this store is writing is left to it.
    Hold hold(this, {info.project, info.digest}, /*wait=*/false);
    if (!hold.held()) continue;
    TC_ASSIGN_OR_RETURN(bool gone, SweepOne(&info, cutoff_ms));
    if (gone) deleted.push_back(std::move(info));
  }
  return deleted;
}

template class WorkdirRows<StatementCache>;
template class WorkdirRows<PgStatementCache>;

}  // namespace trainctl::storage
