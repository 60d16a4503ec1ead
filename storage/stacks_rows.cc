// Reading replica_stacks rows (stacks_rows.h).
#include "storage/stacks_rows.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "storage/pg_statement.h"
#include "storage/statement.h"

namespace trainctl::storage {

template <typename Cache>
absl::StatusOr<StacksOfAttempt> ReadStacks(Cache& cache, const StacksQuery& q) {
  StacksOfAttempt out;
  out.attempt = q.attempt;
  if (out.attempt <= 0) {
    TC_ASSIGN_OR_RETURN(
        auto* latest,
        cache.Get("SELECT CAST(COALESCE(MAX(attempt), 0) AS BIGINT) FROM replica_stacks WHERE "
                  "job_id = ?"));
    TC_RETURN_IF_ERROR(latest->Bind({q.job_id}));
    TC_RETURN_IF_ERROR(ForEachRow(*latest, [&](auto& row) {
      out.attempt = static_cast<int32_t>(row.Int(0));
      return absl::OkStatus();
    }));
    if (out.attempt <= 0) return out;
  }
  TC_ASSIGN_OR_RETURN(auto* st,
                      cache.Get("SELECT run_id, data FROM replica_stacks WHERE job_id = ? AND "
                                "attempt = ? AND (? = '' OR replica = ?) ORDER BY run_id"));
  TC_RETURN_IF_ERROR(st->Bind({q.job_id, int64_t{out.attempt}, q.replica, q.replica}));
  TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
    v1::ReplicaStacks& s = out.stacks.emplace_back();
    if (!s.ParseFromString(row.Bytes(1))) {
      return absl::DataLossError(absl::StrCat("stacks of run ", row.Text(0), ": unreadable row"));
    }
    if (q.summary_only) {
      for (v1::ProcessStacks& p : *s.mutable_processes()) p.clear_text();
    }
    return absl::OkStatus();
  }));
  return out;
}

template absl::StatusOr<StacksOfAttempt> ReadStacks(StatementCache&, const StacksQuery&);
template absl::StatusOr<StacksOfAttempt> ReadStacks(PgStatementCache&, const StacksQuery&);

}  // namespace trainctl::storage
