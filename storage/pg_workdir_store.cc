// PgWorkdirStore (storage/pg_workdir_store.h): its connection, its transactions, and the
// statements whose SQL is PostgreSQL's own.
#include "storage/pg_workdir_store.h"

#include <libpq-fe.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace trainctl::storage {
// Named, not anonymous: the storage library is a unity build.
namespace pg_workdir_store_internal {

// READ COMMITTED: the row lock orders the Puts and Sweeps of one workdir, and each statement
// after it sees what the transaction that held it committed.
constexpr WorkdirSql kPgWorkdirSql = {
    "SELECT size, upload_ms, complete FROM workdirs WHERE project = ? AND digest = ? FOR UPDATE",
};

}  // namespace pg_workdir_store_internal

absl::StatusOr<std::unique_ptr<PgWorkdirStore>> PgWorkdirStore::Open(
    const std::string& uri, const std::string& application_name) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn,
                      PgConnection::Connect(uri, application_name));
  TC_RETURN_IF_ERROR(conn->CheckTables({"workdirs", "workdir_chunks", "workdir_uses"},
                                       "workdirs tables (schema version 16)"));
  return std::unique_ptr<PgWorkdirStore>(new PgWorkdirStore(std::move(conn)));
}

PgWorkdirStore::PgWorkdirStore(std::unique_ptr<PgConnection> conn)
    : conn_(std::move(conn)),
      cache_(conn_.get()),
      rows_(&cache_, this, pg_workdir_store_internal::kPgWorkdirSql) {}

PgWorkdirStore::~PgWorkdirStore() { cache_.Clear(); }

bool PgWorkdirStore::Connected() { return PQstatus(conn_->raw()) == CONNECTION_OK; }

absl::Status PgWorkdirStore::Write(const std::function<absl::Status()>& body) {
  absl::Status s = conn_->Exec("BEGIN");
  if (s.ok()) s = body();
  if (s.ok()) s = conn_->Exec("COMMIT");
  if (s.ok()) return s;
  cache_.ResetAll();
  conn_->RollBackOpen();
  return s;
}

}  // namespace trainctl::storage
