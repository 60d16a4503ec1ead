// PgJobArchive: the JobArchive (storage/job_archive.h) of PostgreSQL's store (storage/pg_store.h),
// on a connection of its own. A call that reads more than one statement reads them in one
// REPEATABLE READ transaction, so it sees one consistent state. A lost connection makes the call
// that met it UNAVAILABLE; the next call reconnects.
//
// Thread-safety: every method may be called from any thread; calls run one at a time.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/job_archive.h"
#include "storage/pg_statement.h"

namespace trainctl::storage {

class PgJobArchive final : public JobArchive {
 public:
  // Connects to `uri`; the schema must exist (the writing PgStore made it).
  static absl::StatusOr<std::unique_ptr<PgJobArchive>> Open(const std::string& uri);
  ~PgJobArchive() override;
  PgJobArchive(const PgJobArchive&) = delete;
  PgJobArchive& operator=(const PgJobArchive&) = delete;

  // JobArchive.
  absl::StatusOr<std::optional<v1::Job>> Get(const std::string& id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::optional<Position>> Scan(const JobScan& scan, const Visit& visit) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status AddAttempts(v1::Job* job) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<sched::Event>> ListEvents(const EventQuery& q) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<sched::UsageHour>> ListUsage(const UsageQuery& q) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<StacksOfAttempt> ListStacks(const StacksQuery& q) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<RunLocation> LocateRun(const std::string& job_id, const std::string& replica,
                                        int32_t attempt, int32_t restart) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit PgJobArchive(std::unique_ptr<PgConnection> conn);
  // Runs `body` in a read-only REPEATABLE READ transaction (reconnecting first if needed).
  template <typename T, typename Fn>
  absl::StatusOr<T> ReadTransaction(Fn body) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::unique_ptr<PgConnection> conn_ ABSL_GUARDED_BY(mu_);
  PgStatementCache cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::storage
