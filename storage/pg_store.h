// PgStore: the Store (storage/store.h) in a PostgreSQL database, for `trainctld --store
// postgres://USER@HOST/DB`. The same tables as SQLite's, in PostgreSQL's dialect
// (storage/pg_schema.h); the same rows, written and read by the code both share
// (storage/batch_writer.h, storage/snapshot_reader.h, storage/job_rows.h).
//
//   absl::StatusOr<std::unique_ptr<PgStore>> store = PgStore::Open("postgres://tc@db1/trainctl");
//
// Every Commit is one transaction (READ COMMITTED, synchronous_commit as the server sets it,
// durable by default): the group commit of a reconcile-loop turn, its rows' statements sent in
// libpq's pipeline mode (one round trip for the batch, not one per row). Write transactions run
// through one place (WriteTransaction), which runs a leader's fence first (SetFence: its lease
// epoch checked inside the same transaction), so that a deposed leader can never commit.
//
// A lost connection makes the call that met it UNAVAILABLE (nothing of a failed Commit is
// written: PostgreSQL rolls back a transaction whose session ended); the next call reconnects.
//
// Thread-safety: a PgStore is used by one thread at a time (the reconcile loop owns it).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/pg_statement.h"
#include "storage/store.h"

namespace trainctl::storage {

class PgStore final : public Store {
 public:
  // Connects to `uri` (postgres:// or postgresql://, any libpq connection URI) and migrates its
  // database to kSchemaVersion, each migration in its own transaction under an advisory lock
  // (two trainctld starting at once migrate once). An empty database is a new cluster. A
  // database with tables but without trainctl's schema_version, or of a newer schema, is
  // FAILED_PRECONDITION naming it; UNAVAILABLE when the server cannot be reached.
  // `application_name` names its session in pg_stat_activity (storage/pg_lease.h).
  static absl::StatusOr<std::unique_ptr<PgStore>> Open(
      const std::string& uri, const std::string& application_name = "trainctld");

  // Fencing, for the leader of trainctld sharing the database: from now on every write
  // transaction first checks, inside itself, that `epoch` is still the lease's (trainctl_fence,
  // storage/pg_schema.h). When another trainctld has taken the lease since, the write fails with
  // FAILED_PRECONDITION (IsFenced) and nothing of it is written, and `on_fenced` is called with
  // that error (it steps down). 0: no fence (the default).
  void SetFence(int64_t epoch, std::function<void(const absl::Status&)> on_fenced);

  ~PgStore() override;
  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  // Store. ProbeWrite is a trivial write transaction (the schema_version row rewritten).
  absl::StatusOr<Snapshot> Load(int64_t ended_since_ms = 0, int64_t max_ended = kAllEnded) override;
  absl::StatusOr<std::optional<v1::Job>> FindJob(const std::string& id) override;
  absl::StatusOr<std::optional<v1::Job>> FindJobByRequest(const std::string& creator,
                                                          const std::string& request_id,
                                                          int64_t since_ms) override;
  absl::Status Commit(Batch& batch) override;
  using Store::Commit;
  absl::Status ProbeWrite() override;
  absl::StatusOr<std::vector<EndedJob>> EndedBefore(int64_t before_ms, const EndedJob& after,
                                                    int32_t limit) override;
  absl::StatusOr<int> SchemaVersion() override;
  absl::StatusOr<std::string> AdoptSecret(const std::string& name,
                                          const std::string& candidate) override;

 private:
  explicit PgStore(std::unique_ptr<PgConnection> conn);
  absl::Status Migrate();
  // Runs `body` in one transaction and commits it; on any error rolls back what is left and
  // returns the error. Reconnects first when the connection was lost.
  template <typename Fn>
  absl::Status WriteTransaction(Fn body);

  const std::unique_ptr<PgConnection> conn_;
  PgStatementCache cache_;
  int64_t fence_epoch_ = 0;
  std::function<void(const absl::Status&)> on_fenced_;
};

// Whether `location` (a --store value) names a PostgreSQL database: postgres:// or
// postgresql://.
bool IsPostgresUri(const std::string& location);

}  // namespace trainctl::storage
