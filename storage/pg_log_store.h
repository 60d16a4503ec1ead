// PgLogStore: the LogStore (storage/log_store.h) of PostgreSQL's store (storage/pg_store.h), in
// its tables log_runs (a row per run: job, node, stored, file_size, final, last_ms, bytes) and
// log_pieces (a row per piece taken with bytes of the log, keyed by run and offset; schema 17),
// so that a failover to another trainctld keeps the copies. Applies storage/log_rules.h's rules.
//
// On a connection of its own, so that shipping or reading logs never waits for the loop's
// session (nor it for them). Append is one transaction that locks the run's row (FOR UPDATE)
// before it decides, so two trainctlds (or calls) that take pieces of one run take each once; it
// is not fenced by the leader lease, as the offsets it checks under that lock keep the copy
// whole whoever writes. A piece of no length has no row (its run's row says all it does).
// `bytes` counts each row as its data's size plus kRowBytes. A read fetches only the pieces it
// returns (the part of each it needs); TailOffset fetches pieces from the end a few at a time.
// A lost connection makes the call that met it UNAVAILABLE; the next call reconnects.
//
// Thread-safety: every method may be called from any thread; the calls run one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/log_store.h"
#include "storage/pg_statement.h"

namespace trainctl::storage {

class PgLogStore final : public LogStore {
 public:
  // What a row takes beside its data, as `bytes` counts it.
  static constexpr int64_t kRowBytes = 64;

  // Connects to `uri`; the schema must be at version 17 or later (PgStore::Open migrated it):
  // FAILED_PRECONDITION otherwise. `application_name` names the session in pg_stat_activity.
  static absl::StatusOr<std::unique_ptr<PgLogStore>> Open(
      const std::string& uri, const std::string& application_name = "trainctld");
  ~PgLogStore() override;
  PgLogStore(const PgLogStore&) = delete;
  PgLogStore& operator=(const PgLogStore&) = delete;

  absl::StatusOr<LogRunState> Append(const std::string& node, const std::string& job_id,
                                     const v1::LogPiece& piece) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::optional<LogRunState>> State(const std::string& run_id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<LogSlice> Read(const std::string& run_id, int64_t offset,
                                int64_t max_bytes) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> OffsetSince(const std::string& run_id, int64_t since_ms) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> TailOffset(const std::string& run_id, int lines) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteJob(const std::string& job_id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<LogJobUsage>> Jobs() override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit PgLogStore(std::unique_ptr<PgConnection> conn);

  // The log_runs row of `run_id` (with `for_update`, locked for the transaction).
  absl::StatusOr<std::optional<LogRunState>> FindRun(const std::string& run_id, bool for_update)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The row, NOT_FOUND when there is none; reconnects first.
  absl::StatusOr<LogRunState> RequireRun(const std::string& run_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // BEGIN ... COMMIT around `body`; rolls back when either fails.
  absl::Status Write(const std::function<absl::Status()>& body) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::unique_ptr<PgConnection> conn_ ABSL_PT_GUARDED_BY(mu_);
  PgStatementCache cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::storage
