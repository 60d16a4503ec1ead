// SqliteJobArchive: the JobArchive (storage/job_archive.h) of SQLite's store, on a read-only
// connection of its own. SQLite's WAL lets it read while the loop writes.
//
// Thread-safety: every method may be called from any thread; calls run one at a time.
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
#include "model/model.h"
#include "storage/job_archive.h"
#include "storage/job_rows.h"
#include "storage/statement.h"
#include "trainctl/v1/job.pb.h"

struct sqlite3;

namespace trainctl::storage {

class SqliteJobArchive final : public JobArchive {
 public:
  // Opens `path` read-only; the database must exist (the writing Store made it).
  static absl::StatusOr<std::unique_ptr<SqliteJobArchive>> Open(const std::string& path);
  ~SqliteJobArchive() override;
  SqliteJobArchive(const SqliteJobArchive&) = delete;
  SqliteJobArchive& operator=(const SqliteJobArchive&) = delete;

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
  explicit SqliteJobArchive(sqlite3* db);

  absl::Mutex mu_;
  sqlite3* const db_;
  StatementCache cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::storage
