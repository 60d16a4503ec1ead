#include "storage/store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "storage/schema.h"
#include "storage/statement.h"

namespace trainctl::storage {
namespace {

static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == Store::kSchemaVersion);

std::string JoinLabels(const std::map<std::string, std::string>& labels) {
  std::vector<std::string> lines;
  for (const auto& [k, v] : labels) lines.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(lines, "\n");
}

std::map<std::string, std::string> SplitLabels(const std::string& text) {
  std::map<std::string, std::string> labels;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    labels[kv.first] = kv.second;
  }
  return labels;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Connect(const std::string& path, bool create,
                                                      const std::string& vfs) {
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("cannot open database ", path, ": ", msg));
  }
  std::unique_ptr<Store> store(new Store(db, path, vfs));
  sqlite3_busy_timeout(db, 5000);
  if (absl::Status wal = store->Exec("PRAGMA journal_mode=WAL"); !wal.ok()) {
    if (sqlite3_errcode(db) == SQLITE_NOTADB) {
      return absl::FailedPreconditionError(
          absl::StrCat(path,
                       " is not an SQLite database, so not trainctl's: restore trainctl.db from a "
                       "backup, or move the file away to start an empty cluster"));
    }
    return wal;
  }
  TC_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  TC_RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys=ON"));
  // 32 MiB of pages (SQLite's default is 2 MiB): the indexes a turn's commit walks stay in
  // memory instead of being read again from the file on every commit.
  TC_RETURN_IF_ERROR(store->Exec("PRAGMA cache_size=-32768"));
  return store;
}

absl::Status Store::CreateNew(const std::string& path, const std::string& vfs) {
  const std::string fresh = path + ".new";
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (unlink((fresh + suffix).c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(
          absl::StrCat("cannot remove ", fresh, suffix, ": ", strerror(errno)));
    }
  }
  {
    TC_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Connect(fresh, /*create=*/true, vfs));
    TC_RETURN_IF_ERROR(store->Migrate());
  }  // Closed: its WAL is checkpointed into the file and removed.
  if (rename(fresh.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", fresh, " to ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path,
                                                   const std::string& vfs) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return absl::InternalError(absl::StrCat("cannot read ", path, ": ", strerror(errno)));
    }
    TC_RETURN_IF_ERROR(CreateNew(path, vfs));
  } else if (st.st_size == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path,
                     " is empty, so not a trainctl database (only a missing file starts a new "
                     "cluster): restore it from a backup, or remove it to start an empty cluster"));
  }
  TC_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Connect(path, /*create=*/false, vfs));
  TC_ASSIGN_OR_RETURN(int version, store->SchemaVersion());
  if (version == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path,
        " is an SQLite database without trainctl's schema (another program's?): restore "
        "trainctl.db from a backup, or move the file away to start an empty cluster"));
  }
  TC_RETURN_IF_ERROR(store->Migrate());
  return store;
}

absl::StatusOr<std::string> Store::CheckFile(const std::string& path, bool full) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("cannot open database ", path, ": ", msg));
  }
  std::vector<std::string> found;
  absl::Status status;
  {
    Statement st(db, full ? "PRAGMA integrity_check" : "PRAGMA quick_check");
    status = st.status();
    while (status.ok()) {
      absl::StatusOr<bool> row = st.Step();
      if (!row.ok()) {
        status = row.status();
        break;
      }
      if (!*row) break;
      found.push_back(st.Text(0));
    }
  }
  sqlite3_close(db);
  // A page so damaged that the check cannot run is a finding too.
  if (!status.ok()) found.push_back(std::string(status.message()));
  return absl::StrJoin(found, "\n");
}

Store::Store(sqlite3* db, std::string path, std::string vfs)
    : db_(db), path_(std::move(path)), vfs_(std::move(vfs)), cache_(db) {}

Store::~Store() {
  checkpointer_.reset();
  cache_.Clear();  // finalized before the connection closes
  sqlite3_close(db_);
}

absl::Status Store::StartCheckpointer(absl::Duration interval) {
  if (checkpointer_ != nullptr) return absl::OkStatus();
  TC_ASSIGN_OR_RETURN(checkpointer_, Checkpointer::Start(path_, vfs_, interval));
  return absl::OkStatus();
}

absl::Status Store::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return absl::InternalError(absl::StrCat("sqlite: ", msg));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Store::SchemaVersion() {
  Statement st(db_, "PRAGMA user_version");
  TC_RETURN_IF_ERROR(st.status());
  TC_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? static_cast<int>(st.Int(0)) : 0;
}

absl::Status Store::Migrate() {
  TC_ASSIGN_OR_RETURN(int version, SchemaVersion());
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the database has schema version ", version, ", newer than this trainctld supports (",
        kSchemaVersion, "); run a newer trainctld or restore a backup"));
  }
  for (int v = version; v < kSchemaVersion; ++v) {
    TC_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    absl::Status s = Exec(kMigrations[v]);
    if (s.ok() && v + 1 == 8) s = FillRequestKeys();
    if (s.ok()) s = Exec(absl::StrCat("PRAGMA user_version=", v + 1).c_str());
    if (!s.ok()) {
      Exec("ROLLBACK").IgnoreError();
      return absl::InternalError(
          absl::StrCat("migrating the schema to version ", v + 1, ": ", s.message()));
    }
    TC_RETURN_IF_ERROR(Exec("COMMIT"));
  }
  return absl::OkStatus();
}

absl::Status Store::FillRequestKeys() {
  Statement read(db_, "SELECT id, data FROM jobs WHERE create_ms >= ?");
  Statement write(db_, "UPDATE jobs SET request_key = ? WHERE id = ?");
  TC_RETURN_IF_ERROR(read.status());
  TC_RETURN_IF_ERROR(write.status());
  TC_RETURN_IF_ERROR(read.Bind({absl::ToUnixMillis(absl::Now() - absl::Hours(24))}));
  return ForEachRow(read, [&](Statement& row) -> absl::Status {
    TC_ASSIGN_OR_RETURN(v1::Job job, ParseJobRow(row.Text(0), row.Bytes(1)));
    if (job.request_id().empty()) return absl::OkStatus();
    return write.Run({RequestKey(job.creator(), job.request_id()), job.id()});
  });
}

absl::StatusOr<Snapshot> Store::Load(int64_t ended_since_ms) {
  Snapshot snap;
  {
    // The live jobs through jobs_live, the recently ended ones through jobs_ended.
    Statement st(db_,
                 "SELECT id, data FROM jobs INDEXED BY jobs_live WHERE state NOT IN (4, 5, 7) "
                 "UNION ALL SELECT id, data FROM jobs INDEXED BY jobs_ended WHERE state IN "
                 "(4, 5, 7) AND update_ms >= ?");
    TC_RETURN_IF_ERROR(st.status());
    TC_RETURN_IF_ERROR(st.Bind({ended_since_ms}));
    TC_RETURN_IF_ERROR(ForEachRow(st, [&](Statement& row) -> absl::Status {
      TC_ASSIGN_OR_RETURN(v1::Job job, ParseJobRow(row.Text(0), row.Bytes(1)));
      snap.jobs.push_back(std::move(job));
      return absl::OkStatus();
    }));
  }
  {
    Statement st(db_, "SELECT MAX(create_ms) FROM jobs");  // through jobs_by_age
    TC_RETURN_IF_ERROR(st.status());
    TC_RETURN_IF_ERROR(ForEachRow(st, [&](Statement& row) -> absl::Status {
      if (!row.IsNull(0)) snap.last_create_ms = row.Int(0);
      return absl::OkStatus();
    }));
  }
  std::sort(snap.jobs.begin(), snap.jobs.end(), [](const v1::Job& a, const v1::Job& b) {
    const int64_t ta = TimestampToMs(a.create_time()), tb = TimestampToMs(b.create_time());
    return ta != tb ? ta < tb : a.id() < b.id();
  });
  for (v1::Job& job : snap.jobs) {
    TC_RETURN_IF_ERROR(ReadAttempts(cache_, &job));
    TC_ASSIGN_OR_RETURN(std::vector<sched::ReplicaRun> runs, ReadRuns(cache_, job.id()));
    for (sched::ReplicaRun& r : runs) snap.runs.push_back(std::move(r));
  }
  {
    Statement st(db_,
                 "SELECT name, address, capacity_cpu, capacity_mem_mb, capacity_gpus, alloc_cpu, "
                 "alloc_mem_mb, alloc_gpus, labels, agent_instance, registered_ms, "
                 "last_heartbeat_ms, status FROM nodes ORDER BY name");
    TC_RETURN_IF_ERROR(st.status());
    for (;;) {
      TC_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      sched::Node n;
      n.name = st.Text(0);
      n.address = st.Text(1);
      n.capacity = {st.Double(2), st.Int(3), st.Int(4)};
      n.allocatable = {st.Double(5), st.Int(6), st.Int(7)};
      n.labels = SplitLabels(st.Text(8));
      n.agent_instance = st.Text(9);
      n.registered_ms = st.Int(10);
      n.last_heartbeat_ms = st.Int(11);
      if (!n.status.ParseFromString(st.Bytes(12))) {
        return absl::DataLossError(absl::StrCat("the status of node ", n.name, " is corrupt"));
      }
      snap.nodes.push_back(std::move(n));
    }
  }
  {
    Statement st(db_, "SELECT project, data FROM quotas ORDER BY project");
    TC_RETURN_IF_ERROR(st.status());
    for (;;) {
      TC_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      v1::Quota quota;
      if (!quota.ParseFromString(st.Bytes(1))) {
        return absl::DataLossError(absl::StrCat("quota of ", st.Text(0), ": unreadable row"));
      }
      snap.quotas.push_back(std::move(quota));
    }
  }
  {
    Statement st(db_, "SELECT id, hash, data FROM tokens ORDER BY rowid");
    TC_RETURN_IF_ERROR(st.status());
    for (;;) {
      TC_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      TokenRow t;
      t.hash = st.Text(1);
      if (!t.token.ParseFromString(st.Bytes(2))) {
        return absl::DataLossError(absl::StrCat("token ", st.Text(0), ": unreadable row"));
      }
      snap.tokens.push_back(std::move(t));
    }
  }
  {
    Statement st(db_, "SELECT fingerprint FROM revoked_certificates ORDER BY fingerprint");
    TC_RETURN_IF_ERROR(st.status());
    for (;;) {
      TC_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      snap.revoked_certificates.push_back(st.Text(0));
    }
  }
  return snap;
}

absl::Status Store::FailWrite(absl::Status s) {
  const int code = sqlite3_errcode(db_) & 0xff;
  // A statement that failed mid-step is reset, so nothing of the transaction stays pending.
  cache_.ResetAll();
  // After a full disk or an I/O error SQLite may have rolled back already.
  if (sqlite3_get_autocommit(db_) == 0) Exec("ROLLBACK").IgnoreError();
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  if (code == SQLITE_FULL) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no space left on ", dir, " (the data dir) for ", path_, ": ", s.message()));
  }
  if (code == SQLITE_IOERR) {
    return absl::UnavailableError(absl::StrCat("I/O error writing ", path_, ": ", s.message()));
  }
  return s;
}

absl::Status Store::ProbeWrite() {
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) == 0) {
    const int64_t free_bytes =
        static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
    if (free_bytes < kProbeMinFreeBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "no space left on ", dir, " (the data dir) for ", path_, ": ", free_bytes / 1024,
          " KiB free, writes resume once ", kProbeMinFreeBytes >> 20, " MiB are"));
    }
  }
  // Rewrites the header page: one WAL frame, the smallest real write.
  absl::Status s = Exec("BEGIN IMMEDIATE");
  if (s.ok()) s = Exec(absl::StrCat("PRAGMA user_version=", kSchemaVersion).c_str());
  if (s.ok()) s = Exec("COMMIT");
  return s.ok() ? s : FailWrite(s);
}

template <typename Rows, typename Fn>
absl::Status Store::RunEach(const char* sql, Rows&& rows, Fn run) {
  if (rows.empty()) return absl::OkStatus();
  TC_ASSIGN_OR_RETURN(Statement * st, cache_.Get(sql));
  for (auto& row : rows) TC_RETURN_IF_ERROR(run(*st, row));
  return absl::OkStatus();
}

absl::Status Store::Commit(Batch& batch) {
  if (batch.empty()) return absl::OkStatus();
  if (absl::Status begun = Exec("BEGIN IMMEDIATE"); !begun.ok()) return FailWrite(begun);
  absl::Status s = [&]() -> absl::Status {
    TC_RETURN_IF_ERROR(
        RunEach("INSERT INTO jobs (id, project, state, priority, create_ms, update_ms, data, "
                "request_key) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
                "state=excluded.state, update_ms=excluded.update_ms, data=excluded.data",
                batch.jobs, [](Statement& st, v1::Job& job) {
                  // The row without the attempts, which have rows of their own; no copy.
                  google::protobuf::RepeatedPtrField<v1::Attempt> attempts;
                  attempts.Swap(job.mutable_attempts());
                  std::string data = job.SerializeAsString();
                  attempts.Swap(job.mutable_attempts());
                  return st.Run({job.id(), job.project(), int64_t{job.state()},
                                 int64_t{job.priority()}, TimestampToMs(job.create_time()),
                                 TimestampToMs(job.update_time()), Blob{std::move(data)},
                                 job.request_id().empty()
                                     ? Value(Null{})
                                     : Value(RequestKey(job.creator(), job.request_id()))});
                }));
    TC_RETURN_IF_ERROR(RunEach(
        "INSERT INTO attempts (job_id, number, state, reason, start_ms, end_ms, nodes, data) "
        "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(job_id, number) DO UPDATE SET "
        "state=excluded.state, reason=excluded.reason, start_ms=excluded.start_ms, "
        "end_ms=excluded.end_ms, nodes=excluded.nodes, data=excluded.data",
        batch.attempts, [](Statement& st, const std::pair<std::string, v1::Attempt>& row) {
          const v1::Attempt& a = row.second;
          return st.Run({row.first, int64_t{a.number()}, int64_t{a.state()}, a.reason(),
                         TimestampToMs(a.start_time()), TimestampToMs(a.end_time()),
                         absl::StrJoin(a.nodes(), ","), Blob{a.SerializeAsString()}});
        }));
    TC_RETURN_IF_ERROR(RunEach(
        // An update in place (not INSERT OR REPLACE, which deletes the row and inserts it again,
        // with its index entries): a run's row is written at its launch, start and end.
        "INSERT INTO replica_runs (run_id, job_id, attempt, replica, restart, node, state, pid, "
        "exit_code, signal, oom, message, start_ms, end_ms) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET node=excluded.node, "
        "state=excluded.state, pid=excluded.pid, exit_code=excluded.exit_code, "
        "signal=excluded.signal, oom=excluded.oom, message=excluded.message, "
        "start_ms=excluded.start_ms, end_ms=excluded.end_ms",
        batch.runs, [](Statement& st, const sched::ReplicaRun& r) {
          return st.Run({r.run_id, r.job_id, int64_t{r.attempt}, r.replica, int64_t{r.restart},
                         r.node, int64_t{r.state}, r.pid,
                         r.exit_code ? Value(int64_t{*r.exit_code}) : Value(Null{}),
                         r.signal ? Value(int64_t{*r.signal}) : Value(Null{}),
                         int64_t{r.oom_killed}, r.message, r.start_ms, r.end_ms});
        }));
    TC_RETURN_IF_ERROR(RunEach(
        "INSERT OR REPLACE INTO nodes (name, address, capacity_cpu, capacity_mem_mb, "
        "capacity_gpus, alloc_cpu, alloc_mem_mb, alloc_gpus, labels, agent_instance, "
        "registered_ms, last_heartbeat_ms, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        batch.nodes, [](Statement& st, const sched::Node& n) {
          return st.Run({n.name, n.address, n.capacity.cpu, n.capacity.memory_mb, n.capacity.gpus,
                         n.allocatable.cpu, n.allocatable.memory_mb, n.allocatable.gpus,
                         JoinLabels(n.labels), n.agent_instance, n.registered_ms,
                         n.last_heartbeat_ms, Blob{n.status.SerializeAsString()}});
        }));
    TC_RETURN_IF_ERROR(
        RunEach("DELETE FROM nodes WHERE name = ?", batch.deleted_nodes,
                [](Statement& st, const auto& deleted) { return st.Run({deleted.first}); }));
    for (const auto& [name, revoked] : batch.deleted_nodes) {
      TC_RETURN_IF_ERROR(
          RunEach("INSERT OR IGNORE INTO revoked_certificates (fingerprint, node) VALUES (?,?)",
                  revoked, [&name = name](Statement& st, const std::string& fp) {
                    return st.Run({fp, name});
                  }));
    }
    TC_RETURN_IF_ERROR(
        RunEach("INSERT INTO events (time_ms, job_id, attempt, replica, node, type, reason, actor) "
                "VALUES (?,?,?,?,?,?,?,?)",
                batch.events, [](Statement& st, const sched::Event& e) {
                  return st.Run({e.time_ms, e.job_id, int64_t{e.attempt}, e.replica, e.node, e.type,
                                 e.reason, e.actor});
                }));
    TC_RETURN_IF_ERROR(
        RunEach("INSERT INTO tokens (id, hash, data) VALUES (?,?,?) ON CONFLICT(id) DO UPDATE SET "
                "data=excluded.data",
                batch.tokens, [](Statement& st, const TokenRow& t) {
                  return st.Run({t.token.id(), t.hash, Blob{t.token.SerializeAsString()}});
                }));
    TC_RETURN_IF_ERROR(RunEach("INSERT OR REPLACE INTO quotas (project, data) VALUES (?,?)",
                               batch.quotas, [](Statement& st, const v1::Quota& q) {
                                 return st.Run({q.project(), Blob{q.SerializeAsString()}});
                               }));
    // Last: rows this turn wrote for a job it then deleted go too.
    for (const char* sql :
         {"DELETE FROM events WHERE job_id = ?", "DELETE FROM replica_runs WHERE job_id = ?",
          "DELETE FROM attempts WHERE job_id = ?", "DELETE FROM jobs WHERE id = ?"}) {
      TC_RETURN_IF_ERROR(RunEach(sql, batch.deleted_jobs, [](Statement& st, const std::string& id) {
        return st.Run({id});
      }));
    }
    return absl::OkStatus();
  }();
  if (s.ok()) s = Exec("COMMIT");
  return s.ok() ? s : FailWrite(s);
}

absl::StatusOr<std::vector<EndedJob>> Store::EndedBefore(int64_t before_ms, const EndedJob& after,
                                                         int32_t limit) {
  // Through the jobs_ended index alone, in its order (the planner would rather look up each
  // state in jobs_by_state and sort every terminal job); its terms imply the index's WHERE.
  TC_ASSIGN_OR_RETURN(
      Statement * st,
      cache_.Get("SELECT update_ms, id FROM jobs INDEXED BY jobs_ended WHERE state IN "
                 "(4, 5, 7) AND update_ms < ?1 AND (update_ms, id) > (?2, ?3) "
                 "ORDER BY update_ms, id LIMIT ?4"));
  TC_RETURN_IF_ERROR(st->Bind({before_ms, after.update_ms, after.id, int64_t{limit}}));
  std::vector<EndedJob> jobs;
  absl::Status status;
  for (;;) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) status = row.status();
    if (!row.ok() || !*row) break;
    jobs.push_back({st->Int(0), st->Text(1)});
  }
  st->Reset();  // ends its read
  if (!status.ok()) return status;
  return jobs;
}

absl::StatusOr<std::optional<v1::Job>> Store::FindJob(const std::string& id) {
  return ReadJob(cache_, id);
}

absl::StatusOr<std::optional<v1::Job>> Store::FindJobByRequest(const std::string& creator,
                                                               const std::string& request_id,
                                                               int64_t since_ms) {
  return ReadJobByRequest(cache_, creator, request_id, since_ms);
}

}  // namespace trainctl::storage
