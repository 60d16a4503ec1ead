#include "storage/sqlite_job_archive.h"

#include <sqlite3.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "storage/sqlite_process.h"

namespace trainctl::storage {

absl::StatusOr<std::unique_ptr<SqliteJobArchive>> SqliteJobArchive::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SingleThreadOpenFlags(SQLITE_OPEN_READONLY), nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("cannot open database ", path, " to read: ", msg));
  }
  // A reader waits out the writer's brief exclusive moments (a WAL checkpoint's reset).
  sqlite3_busy_timeout(db, 5000);
  return std::unique_ptr<SqliteJobArchive>(new SqliteJobArchive(db));
}

SqliteJobArchive::SqliteJobArchive(sqlite3* db) : db_(db), cache_(db) {}

SqliteJobArchive::~SqliteJobArchive() {
  {
    absl::MutexLock lock(&mu_);
    cache_.Clear();  // finalized before the connection closes
  }
  sqlite3_close(db_);
}

absl::StatusOr<std::optional<v1::Job>> SqliteJobArchive::Get(const std::string& id) {
  absl::MutexLock lock(&mu_);
  return ReadJob(cache_, id);
}

absl::StatusOr<std::optional<std::pair<int64_t, std::string>>> SqliteJobArchive::Scan(
    const JobScan& scan, const Visit& visit) {
  absl::MutexLock lock(&mu_);
  // Newest first through jobs_by_age or jobs_by_project; the position after a page's last job
  // is create_ms <= ?1 less the rows of that millisecond up to its id. States are matched here,
  // not in SQL, so that max_rows bounds the rows read, however rare the states asked for.
  const char* sql =
      scan.project.empty()
          ? "SELECT create_ms, id, state, data FROM jobs INDEXED BY jobs_by_age WHERE "
            "create_ms <= ?1 AND NOT (create_ms = ?1 AND id <= ?2) ORDER BY create_ms DESC, id "
            "LIMIT ?4"
          : "SELECT create_ms, id, state, data FROM jobs INDEXED BY jobs_by_project WHERE "
            "project = ?3 AND create_ms <= ?1 AND NOT (create_ms = ?1 AND id <= ?2) ORDER BY "
            "create_ms DESC, id LIMIT ?4";
  TC_ASSIGN_OR_RETURN(Statement * st, cache_.Get(sql));
  return ScanRows(*st, scan, visit);
}

absl::Status SqliteJobArchive::AddAttempts(v1::Job* job) {
  absl::MutexLock lock(&mu_);
  return ReadAttempts(cache_, job);
}

absl::StatusOr<std::vector<sched::Event>> SqliteJobArchive::ListEvents(const EventQuery& q) {
  absl::MutexLock lock(&mu_);
  return ReadEvents(cache_, q);
}

absl::StatusOr<std::vector<sched::UsageHour>> SqliteJobArchive::ListUsage(const UsageQuery& q) {
  absl::MutexLock lock(&mu_);
  return ReadUsage(cache_, q);
}

absl::StatusOr<StacksOfAttempt> SqliteJobArchive::ListStacks(const StacksQuery& q) {
  absl::MutexLock lock(&mu_);
  return ReadStacks(cache_, q);
}

absl::StatusOr<RunLocation> SqliteJobArchive::LocateRun(const std::string& job_id,
                                                        const std::string& replica, int32_t attempt,
                                                        int32_t restart) {
  absl::MutexLock lock(&mu_);
  TC_ASSIGN_OR_RETURN(std::optional<v1::Job> job, ReadJob(cache_, job_id));
  if (!job.has_value()) return LocateRunOf(job_id, job, {}, replica, attempt, restart);
  TC_ASSIGN_OR_RETURN(std::vector<sched::ReplicaRun> runs, ReadRuns(cache_, job_id));
  return LocateRunOf(job_id, job, runs, replica, attempt, restart);
}

}  // namespace trainctl::storage
