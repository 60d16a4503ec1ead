// Reading the Snapshot (storage/store.h) a start loads, from the rows of either backend: what
// SQLite's and PostgreSQL's stores share, so that both load the same state.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "storage/store.h"

namespace trainctl::storage {

// The queries that differ between dialects. Each is a string literal (statement caches key on
// its address).
struct SnapshotSql {
  // (id, data) of the live jobs and of the terminal ones whose row changed at or after the first
  // parameter, at most the second parameter of those, the last changed, through the jobs_live
  // and jobs_ended indexes.
  const char* jobs_to_load;
  // (id, hash, data) of every token, in the order they were first stored.
  const char* tokens_oldest_first;
};

// The snapshot Store::Load(ended_since_ms, max_ended) returns, read with the statements of `cache`
// (a StatementCache or a PgStatementCache). Not in a transaction of its own: the caller loads
// before it writes.
template <typename Cache>
absl::StatusOr<Snapshot> LoadSnapshot(Cache& cache, const SnapshotSql& sql, int64_t ended_since_ms,
                                      int64_t max_ended);

}  // namespace trainctl::storage
