#include "storage/pg_store.h"

#include <libpq-fe.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"
#include "storage/batch_writer.h"
#include "storage/job_rows.h"
#include "storage/pg_schema.h"
#include "storage/snapshot_reader.h"

namespace trainctl::storage {
namespace {

// The advisory lock migrations hold (a constant of trainctl's own), so that two trainctld that
// start at once migrate one after the other.
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(8387236903567618668)";

constexpr BatchSql kPgBatchSql = {
    "INSERT INTO nodes (name, address, capacity_cpu, capacity_mem_mb, capacity_gpus, alloc_cpu, "
    "alloc_mem_mb, alloc_gpus, labels, agent_instance, registered_ms, last_heartbeat_ms, status) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (name) DO UPDATE SET "
    "address=excluded.address, capacity_cpu=excluded.capacity_cpu, "
    "capacity_mem_mb=excluded.capacity_mem_mb, capacity_gpus=excluded.capacity_gpus, "
    "alloc_cpu=excluded.alloc_cpu, alloc_mem_mb=excluded.alloc_mem_mb, "
    "alloc_gpus=excluded.alloc_gpus, labels=excluded.labels, "
    "agent_instance=excluded.agent_instance, registered_ms=excluded.registered_ms, "
    "last_heartbeat_ms=excluded.last_heartbeat_ms, status=excluded.status",
    "INSERT INTO revoked_certificates (fingerprint, node) VALUES (?,?) ON CONFLICT DO NOTHING",
    "INSERT INTO quotas (project, data) VALUES (?,?) ON CONFLICT (project) DO UPDATE SET "
    "data=excluded.data",
};

constexpr SnapshotSql kPgSnapshotSql = {
    "SELECT id, data FROM jobs WHERE state NOT IN (4, 5, 7) UNION ALL "
    "(SELECT id, data FROM jobs WHERE state IN (4, 5, 7) AND update_ms >= ? "
    "ORDER BY update_ms DESC, id DESC LIMIT ?)",
    "SELECT id, hash, data FROM tokens ORDER BY seq",
};

}  // namespace

bool IsPostgresUri(const std::string& location) {
  return absl::StartsWith(location, "postgres://") || absl::StartsWith(location, "postgresql://");
}

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& uri,
                                                       const std::string& application_name) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn,
                      PgConnection::Connect(uri, application_name));
  std::unique_ptr<PgStore> store(new PgStore(std::move(conn)));
  TC_RETURN_IF_ERROR(store->Migrate());
  return store;
}

PgStore::PgStore(std::unique_ptr<PgConnection> conn)
    : conn_(std::move(conn)), cache_(conn_.get()) {}

PgStore::~PgStore() { cache_.Clear(); }

template <typename Fn>
absl::Status PgStore::WriteTransaction(Fn body) {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  absl::Status s = conn_->Exec("BEGIN");
  // A leader's fence: its epoch checked, and the lease row share-locked, in this transaction, so
  // that a new leader's takeover waits for it and every later one of ours fails.
  if (s.ok() && fence_epoch_ > 0) {
    absl::StatusOr<PgStatement*> fence = cache_.Get("SELECT trainctl_fence(?)");
    s = fence.status();
    if (s.ok()) s = (*fence)->Bind({fence_epoch_});
    if (s.ok()) s = (*fence)->Step().status();
    cache_.ResetAll();
  }
  if (s.ok()) s = body();
  if (s.ok()) s = conn_->Exec("COMMIT");
  if (s.ok()) return s;
  cache_.ResetAll();
  conn_->RollBackOpen();
  if (IsFenced(s) && on_fenced_) on_fenced_(s);
  return s;
}

void PgStore::SetFence(int64_t epoch, std::function<void(const absl::Status&)> on_fenced) {
  fence_epoch_ = epoch;
  on_fenced_ = std::move(on_fenced);
}

absl::StatusOr<int> PgStore::SchemaVersion() {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  TC_ASSIGN_OR_RETURN(std::optional<std::string> table,
                      conn_->QueryValue("SELECT to_regclass('schema_version')::text"));
  if (!table.has_value()) return 0;
  TC_ASSIGN_OR_RETURN(std::optional<std::string> text,
                      conn_->QueryValue("SELECT max(version)::text FROM schema_version"));
  int version = 0;
  if (text.has_value() && !absl::SimpleAtoi(*text, &version)) {
    return absl::DataLossError(absl::StrCat("unreadable schema_version in ", conn_->where()));
  }
  return version;
}

absl::Status PgStore::Migrate() {
  constexpr int kCount = static_cast<int>(sizeof(kPgMigrations) / sizeof(kPgMigrations[0]));
  for (;;) {
    int applied = -1;
    absl::Status s = WriteTransaction([&]() -> absl::Status {
      TC_RETURN_IF_ERROR(conn_->Exec(kMigrationLock));
      TC_ASSIGN_OR_RETURN(int version, SchemaVersion());
      if (version > kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat(conn_->where(), " has schema version ", version,
                         ", newer than this trainctld supports (", kSchemaVersion,
                         "); run a newer trainctld or restore a backup"));
      }
      if (version == kSchemaVersion) return absl::OkStatus();
      if (version == 0) {
        TC_ASSIGN_OR_RETURN(
            std::optional<std::string> tables,
            conn_->QueryValue("SELECT count(*)::text FROM pg_tables WHERE schemaname = "
                              "current_schema()"));
        if (tables.has_value() && *tables != "0") {
          return absl::FailedPreconditionError(absl::StrCat(
              conn_->where(),
              " holds tables but not trainctl's schema (another program's?): give trainctld a "
              "database of its own, or an empty one to start an empty cluster"));
        }
      }
      const int step = version == 0 ? 0 : version - kPgFirstVersion + 1;
      if (step < 0 || step >= kCount) {
        return absl::FailedPreconditionError(absl::StrCat(
            conn_->where(), " has schema version ", version, ", which no PostgreSQL store had"));
      }
      const int to = step == 0 ? kPgFirstVersion : version + 1;
      if (version > 0) {
        spdlog::info(
            "upgrading {} from schema version {} to {}; on a large database a rebuilt index "
            "takes a while, and trainctld serves once it is done",
            conn_->where(), version, to);
      }
      absl::Status m = conn_->Exec(kPgMigrations[step]);
      if (m.ok()) {
        m = conn_->Exec(version == 0 ? absl::StrCat("INSERT INTO schema_version VALUES (", to, ")")
                                     : absl::StrCat("UPDATE schema_version SET version = ", to));
      }
      if (!m.ok()) {
        return absl::Status(
            m.code(), absl::StrCat("migrating the schema to version ", to, ": ", m.message()));
      }
      applied = to;
      return absl::OkStatus();
    });
    TC_RETURN_IF_ERROR(s);
    if (applied < 0) return absl::OkStatus();
  }
}

absl::StatusOr<Snapshot> PgStore::Load(int64_t ended_since_ms, int64_t max_ended) {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return LoadSnapshot(cache_, kPgSnapshotSql, ended_since_ms, max_ended);
}

absl::StatusOr<std::optional<v1::Job>> PgStore::FindJob(const std::string& id) {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return ReadJob(cache_, id);
}

absl::StatusOr<std::optional<v1::Job>> PgStore::FindJobByRequest(const std::string& creator,
                                                                 const std::string& request_id,
                                                                 int64_t since_ms) {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return ReadJobByRequest(cache_, creator, request_id, since_ms);
}

absl::Status PgStore::Commit(Batch& batch) {
  if (batch.empty()) return absl::OkStatus();
  bool pipeline_failed = false;
  absl::Status s = WriteTransaction([&] {
    // Every row's statement in one round trip; the first error is the batch's.
    TC_RETURN_IF_ERROR(conn_->StartPipeline());
    absl::Status written = WriteBatch(cache_, kPgBatchSql, batch);
    absl::Status finished = conn_->FinishPipeline();
    pipeline_failed = !finished.ok();
    return finished.ok() ? written : finished;
  });
  // After the rollback: which of its statements a failed pipeline left unprepared is unknown.
  if (pipeline_failed) conn_->ForgetPrepared();
  return s;
}

absl::Status PgStore::ProbeWrite() {
  return WriteTransaction(
      [&] { return conn_->Exec("UPDATE schema_version SET version = version"); });
}

absl::StatusOr<std::string> PgStore::AdoptSecret(const std::string& name,
                                                 const std::string& candidate) {
  std::string value;
  TC_RETURN_IF_ERROR(WriteTransaction([&]() -> absl::Status {
    TC_ASSIGN_OR_RETURN(PgStatement * insert,
                        cache_.Get("INSERT INTO cluster_secrets (name, value) VALUES (?, ?) ON "
                                   "CONFLICT (name) DO NOTHING"));
    TC_RETURN_IF_ERROR(insert->Run({name, Blob{candidate}}));
    TC_ASSIGN_OR_RETURN(PgStatement * read,
                        cache_.Get("SELECT value FROM cluster_secrets WHERE name = ?"));
    TC_RETURN_IF_ERROR(read->Bind({name}));
    TC_ASSIGN_OR_RETURN(bool row, read->Step());
    if (!row) return absl::DataLossError(absl::StrCat("the secret ", name, " vanished"));
    value = read->Bytes(0);
    read->Reset();
    return absl::OkStatus();
  }));
  return value;
}

absl::StatusOr<std::vector<EndedJob>> PgStore::EndedBefore(int64_t before_ms, const EndedJob& after,
                                                           int32_t limit) {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  // Through jobs_ended: its terms imply the index's WHERE.
  TC_ASSIGN_OR_RETURN(
      PgStatement * st,
      cache_.Get("SELECT update_ms, id FROM jobs WHERE state IN (4, 5, 7) AND update_ms < ?1 AND "
                 "(update_ms, id) > (?2, ?3) ORDER BY update_ms, id LIMIT ?4"));
  TC_RETURN_IF_ERROR(st->Bind({before_ms, after.update_ms, after.id, int64_t{limit}}));
  std::vector<EndedJob> jobs;
  TC_RETURN_IF_ERROR(ForEachRow(*st, [&](PgStatement& row) {
    jobs.push_back({row.Int(0), row.Text(1)});
    return absl::OkStatus();
  }));
  return jobs;
}

}  // namespace trainctl::storage
