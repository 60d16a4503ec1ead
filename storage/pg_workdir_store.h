// PgWorkdirStore: the WorkdirStore (storage/workdir_store.h) of PostgreSQL's store
// (storage/pg_store.h), on a connection of its own, so that an upload or a fetch never waits for
// the loop's session (nor it for them). Its writes are not fenced by the leader lease: a chunk is
// content named by its digest, whoever writes it, and a write that races another trainctld's is
// found by its checks (storage/workdir_rows.h). A lost connection makes the call that met it
// UNAVAILABLE; the next call reconnects.
//
// Thread-safety: every method may be called from any thread (storage/workdir_rows.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/pg_statement.h"
#include "storage/workdir_rows.h"
#include "storage/workdir_store.h"

namespace trainctl::storage {

class PgWorkdirStore final : public WorkdirStore, private WorkdirConnection {
 public:
  // Connects to `uri`; the schema must be at version 16 or later (PgStore::Open migrated it):
  // FAILED_PRECONDITION otherwise. `application_name` names the session in pg_stat_activity
  // (storage/pg_lease.h).
  static absl::StatusOr<std::unique_ptr<PgWorkdirStore>> Open(
      const std::string& uri, const std::string& application_name = "trainctld");
  ~PgWorkdirStore() override;
  PgWorkdirStore(const PgWorkdirStore&) = delete;
  PgWorkdirStore& operator=(const PgWorkdirStore&) = delete;

  // WorkdirStore.
  absl::StatusOr<std::optional<WorkdirInfo>> Get(const std::string& project,
                                                 const std::string& digest) override {
    return rows_.Get(project, digest);
  }
  absl::StatusOr<bool> Put(const WorkdirInfo& info,
                           const std::function<absl::StatusOr<bool>(std::string*)>& next) override {
    return rows_.Put(info, next);
  }
  absl::Status Read(const std::string& project, const std::string& digest,
                    const std::function<absl::Status(const std::string&)>& visit) override {
    return rows_.Read(project, digest, visit);
  }
  absl::Status AddUse(const std::string& project, const std::string& digest,
                      const std::string& job_id, int64_t now_ms) override {
    return rows_.AddUse(project, digest, job_id, now_ms);
  }
  absl::StatusOr<std::vector<WorkdirInfo>> Sweep(int64_t now_ms, int64_t grace_ms) override {
    return rows_.Sweep(now_ms, grace_ms);
  }

 private:
  explicit PgWorkdirStore(std::unique_ptr<PgConnection> conn);

  // WorkdirConnection (called under rows_' lock).
  absl::Status Ready() override { return conn_->EnsureConnected(); }
  bool Connected() override;
  // BEGIN (READ COMMITTED) ... COMMIT; rows are locked by the statements (FOR UPDATE).
  absl::Status Write(const std::function<absl::Status()>& body) override;

  const std::unique_ptr<PgConnection> conn_;
  PgStatementCache cache_;
  WorkdirRows<PgStatementCache> rows_;
};

}  // namespace trainctl::storage
