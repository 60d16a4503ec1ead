// Writing a Batch (storage/store.h) as rows: the statements a commit runs, shared by SQLite's and
// PostgreSQL's stores so that both write the same rows. The caller holds the transaction.
//
// The SQL is SQLite's, which PostgreSQL runs too (its parameters translated, storage/
// pg_statement.h), except for the few statements in BatchSql that each dialect writes its own
// way.
#pragma once

#include "absl/status/status.h"
#include "storage/store.h"

namespace trainctl::storage {

// The statements that differ between dialects. Each is a string literal (statement caches key on
// its address).
struct BatchSql {
  // A whole nodes row by name (13 parameters: see WriteBatch), replaced when there is one.
  const char* upsert_node;
  // (fingerprint, node) into revoked_certificates, nothing when the fingerprint is there.
  const char* insert_revoked;
  // (project, data) into quotas, replaced when there is one.
  const char* upsert_quota;
};

// Writes every row of `batch` with the statements of `cache` (a StatementCache or a
// PgStatementCache) inside the caller's transaction: upserts first, then deletes, so that rows
// this turn wrote for a job it then deleted go too. Each job's attempts are set aside while its
// row is written, and put back. On error the caller rolls back.
template <typename Cache>
absl::Status WriteBatch(Cache& cache, const BatchSql& sql, Batch& batch);

}  // namespace trainctl::storage
