#include "storage/sqlite_store.h"

#include <fcntl.h>
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
#include "common/status_macros.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"
#include "storage/batch_writer.h"
#include "storage/schema.h"
#include "storage/snapshot_reader.h"
#include "storage/sqlite_damage.h"
#include "storage/sqlite_process.h"
#include "storage/statement.h"

namespace trainctl::storage {
namespace {

static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == Store::kSchemaVersion);

constexpr BatchSql kSqliteBatchSql = {
    "INSERT OR REPLACE INTO nodes (name, address, capacity_cpu, capacity_mem_mb, capacity_gpus, "
    "alloc_cpu, alloc_mem_mb, alloc_gpus, labels, agent_instance, registered_ms, "
    "last_heartbeat_ms, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "INSERT OR IGNORE INTO revoked_certificates (fingerprint, node) VALUES (?,?)",
    "INSERT OR REPLACE INTO quotas (project, data) VALUES (?,?)",
};

constexpr SnapshotSql kSqliteSnapshotSql = {
    "SELECT id, data FROM jobs INDEXED BY jobs_live WHERE state NOT IN (4, 5, 7) UNION ALL "
    "SELECT id, data FROM (SELECT id, data FROM jobs INDEXED BY jobs_ended WHERE state IN "
    "(4, 5, 7) AND update_ms >= ? ORDER BY update_ms DESC, id DESC LIMIT ?)",
    "SELECT id, hash, data FROM tokens ORDER BY rowid",
};

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Connect(const std::string& path,
                                                                  bool create,
                                                                  const std::string& vfs) {
  sqlite3* db = nullptr;
  const int flags =
      SingleThreadOpenFlags(SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0));
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("cannot open database ", path, ": ", msg));
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(db, path, vfs));
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
  // Debian's SQLite zeroes every deleted row and freed page (SECURE_DELETE), so a job row
  // rewritten with its overflow pages wrote those pages twice. FAST still zeroes the deleted
  // content in the pages a change writes anyway, at no extra I/O.
  TC_RETURN_IF_ERROR(store->Exec("PRAGMA secure_delete=FAST"));
  // 32 MiB of pages (SQLite's default is 2 MiB): the indexes a turn's commit walks stay in
  // memory instead of being read again from the file on every commit.
  TC_RETURN_IF_ERROR(store->Exec("PRAGMA cache_size=-32768"));
  return store;
}

absl::Status SqliteStore::CreateNew(const std::string& path, const std::string& vfs) {
  const std::string fresh = path + ".new";
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (unlink((fresh + suffix).c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(
          absl::StrCat("cannot remove ", fresh, suffix, ": ", strerror(errno)));
    }
  }
  // Made 0600 before SQLite opens it, whatever the umask: SQLite would make it 0644 less the
  // umask, and it gives the -wal and -shm it creates beside a database the database's mode.
  const int fd = open(fresh.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("cannot create ", fresh, ": ", strerror(errno)));
  const bool made_private = fchmod(fd, 0600) == 0;
  const int chmod_errno = errno;
  close(fd);
  if (!made_private) {
    return absl::InternalError(
        absl::StrCat("cannot make ", fresh, " 0600: ", strerror(chmod_errno)));
  }
  {
    TC_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store, Connect(fresh, /*create=*/true, vfs));
    TC_RETURN_IF_ERROR(store->Migrate());
  }  // Closed: its WAL is checkpointed into the file and removed.
  if (rename(fresh.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", fresh, " to ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
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
  TC_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store, Connect(path, /*create=*/false, vfs));
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

absl::StatusOr<std::string> SqliteStore::CheckFile(const std::string& path, bool full) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("cannot open database ", path, ": ", msg));
  }
  std::vector<std::string> found;
  {
    Statement st(db, full ? "PRAGMA integrity_check" : "PRAGMA quick_check");
    absl::Status status = st.status();
    while (status.ok()) {
      absl::StatusOr<bool> row = st.Step();
      if (!row.ok()) {
        status = row.status();
        break;
      }
      if (!*row) break;
      found.push_back(st.Text(0));
    }
    // A page so damaged that the check cannot run is a finding too: SQLite's own words.
    if (!status.ok()) found.push_back(sqlite3_errmsg(db));
  }
  sqlite3_close(db);
  return absl::StrJoin(found, "\n");
}

SqliteStore::SqliteStore(sqlite3* db, std::string path, std::string vfs)
    : db_(db), path_(std::move(path)), vfs_(std::move(vfs)), cache_(db) {}

SqliteStore::~SqliteStore() {
  checkpointer_.reset();
  cache_.Clear();  // finalized before the connection closes
  sqlite3_close(db_);
}

absl::Status SqliteStore::StartCheckpointer(absl::Duration interval) {
  if (checkpointer_ != nullptr) return absl::OkStatus();
  TC_ASSIGN_OR_RETURN(checkpointer_, Checkpointer::Start(path_, vfs_, interval));
  return absl::OkStatus();
}

absl::Status SqliteStore::Exec(const char* sql) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return SqliteError(db_, "");
  return absl::OkStatus();
}

absl::StatusOr<int> SqliteStore::SchemaVersion() {
  Statement st(db_, "PRAGMA user_version");
  TC_RETURN_IF_ERROR(st.status());
  TC_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? static_cast<int>(st.Int(0)) : 0;
}

absl::Status SqliteStore::Migrate() {
  TC_ASSIGN_OR_RETURN(int version, SchemaVersion());
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the database has schema version ", version, ", newer than this trainctld supports (",
        kSchemaVersion, "); run a newer trainctld or restore a backup"));
  }
  if (version > 0 && version < kSchemaVersion) {
    spdlog::info(
        "upgrading the database from schema version {} to {}; on a large database a rebuilt "
        "index takes a while, and trainctld serves once it is done",
        version, kSchemaVersion);
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

absl::Status SqliteStore::FillRequestKeys() {
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

absl::StatusOr<Snapshot> SqliteStore::Load(int64_t ended_since_ms, int64_t max_ended) {
  return LoadSnapshot(cache_, kSqliteSnapshotSql, ended_since_ms, max_ended);
}

absl::Status SqliteStore::FailWrite(absl::Status s) {
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

absl::Status SqliteStore::ProbeWrite() {
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

absl::Status SqliteStore::Commit(Batch& batch) {
  if (batch.empty()) return absl::OkStatus();
  if (absl::Status begun = Exec("BEGIN IMMEDIATE"); !begun.ok()) return FailWrite(begun);
  absl::Status s = WriteBatch(cache_, kSqliteBatchSql, batch);
  if (s.ok()) s = Exec("COMMIT");
  return s.ok() ? s : FailWrite(s);
}

absl::StatusOr<std::string> SqliteStore::AdoptSecret(const std::string& name,
                                                     const std::string& candidate) {
  if (absl::Status begun = Exec("BEGIN IMMEDIATE"); !begun.ok()) return FailWrite(begun);
  absl::Status s = absl::OkStatus();
  std::string value;
  {
    absl::StatusOr<Statement*> insert =
        cache_.Get("INSERT OR IGNORE INTO cluster_secrets (name, value) VALUES (?, ?)");
    s = insert.ok() ? (*insert)->Run({name, Blob{candidate}}) : insert.status();
  }
  if (s.ok()) {
    absl::StatusOr<Statement*> read =
        cache_.Get("SELECT value FROM cluster_secrets WHERE name = ?");
    s = read.ok() ? (*read)->Bind({name}) : read.status();
    if (s.ok()) {
      absl::StatusOr<bool> row = (*read)->Step();
      s = row.ok() && !*row ? absl::DataLossError(absl::StrCat("the secret ", name, " vanished"))
                            : row.status();
      if (s.ok()) value = (*read)->Bytes(0);
      (*read)->Reset();
    }
  }
  if (s.ok()) s = Exec("COMMIT");
  if (!s.ok()) return FailWrite(s);
  return value;
}

absl::StatusOr<std::vector<EndedJob>> SqliteStore::EndedBefore(int64_t before_ms,
                                                               const EndedJob& after,
                                                               int32_t limit) {
  // Through the jobs_ended index alone, in its order (the planner might rather look up the
  // terminal jobs another way and sort them); its terms imply the index's WHERE.
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

absl::StatusOr<std::optional<v1::Job>> SqliteStore::FindJob(const std::string& id) {
  return ReadJob(cache_, id);
}

absl::StatusOr<std::optional<v1::Job>> SqliteStore::FindJobByRequest(const std::string& creator,
                                                                     const std::string& request_id,
                                                                     int64_t since_ms) {
  return ReadJobByRequest(cache_, creator, request_id, since_ms);
}

}  // namespace trainctl::storage
