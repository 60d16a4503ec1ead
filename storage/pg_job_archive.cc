#include "storage/pg_job_archive.h"

#include <libpq-fe.h>

#include <cstdint>

#include "common/status_macros.h"
#include "storage/job_rows.h"

namespace trainctl::storage {

absl::StatusOr<std::unique_ptr<PgJobArchive>> PgJobArchive::Open(const std::string& uri) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn, PgConnection::Connect(uri));
  return std::unique_ptr<PgJobArchive>(new PgJobArchive(std::move(conn)));
}

PgJobArchive::PgJobArchive(std::unique_ptr<PgConnection> conn)
    : conn_(std::move(conn)), cache_(conn_.get()) {}

PgJobArchive::~PgJobArchive() {
  absl::MutexLock lock(&mu_);
  cache_.Clear();
}

template <typename T, typename Fn>
absl::StatusOr<T> PgJobArchive::ReadTransaction(Fn body) {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  TC_RETURN_IF_ERROR(conn_->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  absl::StatusOr<T> result = body();
  absl::Status ended = result.ok() ? conn_->Exec("COMMIT") : absl::OkStatus();
  if (!result.ok() || !ended.ok()) {
    cache_.ResetAll();
    conn_->RollBackOpen();
  }
  if (!ended.ok()) return ended;
  return result;
}

absl::StatusOr<std::optional<v1::Job>> PgJobArchive::Get(const std::string& id) {
  absl::MutexLock lock(&mu_);
  return ReadTransaction<std::optional<v1::Job>>(
      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return ReadJob(cache_, id); });
}

absl::StatusOr<std::optional<JobArchive::Position>> PgJobArchive::Scan(const JobScan& scan,
                                                                       const Visit& visit) {
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  // Newest first through jobs_by_age or jobs_by_project, as SqliteJobArchive::Scan; states are
  // matched here, so that max_rows bounds the rows read.
  const char* sql =
      scan.project.empty()
          ? "SELECT create_ms, id, state, data FROM jobs WHERE create_ms <= ?1 AND NOT "
            "(create_ms = ?1 AND id <= ?2) ORDER BY create_ms DESC, id LIMIT ?4"
          : "SELECT create_ms, id, state, data FROM jobs WHERE project = ?3 AND create_ms <= ?1 "
            "AND NOT (create_ms = ?1 AND id <= ?2) ORDER BY create_ms DESC, id LIMIT ?4";
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(sql));
  return ScanRows(*st, scan, visit);
}

absl::Status PgJobArchive::AddAttempts(v1::Job* job) {
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return ReadAttempts(cache_, job);
}

absl::StatusOr<std::vector<sched::Event>> PgJobArchive::ListEvents(const EventQuery& q) {
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return ReadEvents(cache_, q);
}

absl::StatusOr<std::vector<sched::UsageHour>> PgJobArchive::ListUsage(const UsageQuery& q) {
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return ReadUsage(cache_, q);
}

absl::StatusOr<StacksOfAttempt> PgJobArchive::ListStacks(const StacksQuery& q) {
  absl::MutexLock lock(&mu_);
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  return ReadStacks(cache_, q);
}

absl::StatusOr<RunLocation> PgJobArchive::LocateRun(const std::string& job_id,
                                                    const std::string& replica, int32_t attempt,
                                                    int32_t restart) {
  absl::MutexLock lock(&mu_);
  return ReadTransaction<RunLocation>(
      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::StatusOr<RunLocation> {
        TC_ASSIGN_OR_RETURN(std::optional<v1::Job> job, ReadJob(cache_, job_id));
        if (!job.has_value()) return LocateRunOf(job_id, job, {}, replica, attempt, restart);
        TC_ASSIGN_OR_RETURN(std::vector<sched::ReplicaRun> runs, ReadRuns(cache_, job_id));
        return LocateRunOf(job_id, job, runs, replica, attempt, restart);
      });
}

}  // namespace trainctl::storage
