// JobArchive: reads of jobs from trainctld's database on a connection of its own, for the API's
// readers (get, list, events, logs of jobs that left the scheduler's memory), so that no read
// waits for, or slows, the reconcile loop that owns the writing Store. Each backend has its own:
// SqliteJobArchive (storage/sqlite_job_archive.h) and PgJobArchive (storage/pg_job_archive.h).
// Each call reads one consistent state of the database, as of the last commit before it began.
//
//   absl::StatusOr<std::unique_ptr<SqliteJobArchive>> archive = SqliteJobArchive::Open(db_path);
//   absl::StatusOr<std::optional<v1::Job>> job = (*archive)->Get("j-1");
//
// Thread-safety: every method may be called from any thread; calls run one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/model.h"
#include "storage/job_rows.h"
#include "storage/stacks_rows.h"
#include "storage/usage_rows.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::storage {

// Which jobs a scan visits, newest first (by create time, then id).
struct JobScan {
  // "": every project.
  std::string project;
  // Bit (1 << state) for each state wanted; 0: every state.
  uint32_t states = 0;
  // Only jobs after this one in the order (a page token's position); unset: from the newest.
  std::optional<std::pair<int64_t, std::string>> after;
  // The most rows one scan reads, matching or not.
  int32_t max_rows = 10'000;
};

// Where a run's log lives (see Core::LocateRun).
struct RunLocation {
  std::string node;
  std::string run_id;
  bool finished = false;
};

class JobArchive {
 public:
  virtual ~JobArchive() = default;

  // The job with its attempts; nullopt when there is none.
  virtual absl::StatusOr<std::optional<v1::Job>> Get(const std::string& id) = 0;

  // Calls `visit(create_ms, id, data)` for each job `scan` matches, in its order, with the job's
  // row (ParseJobRow reads it), until `visit` returns false (it took what it wanted) or max_rows
  // rows were read. Returns where a later scan goes on when max_rows rows were read before the
  // end (the last row read, matching or not); unset when the scan reached the end or `visit`
  // stopped it. Runs under the archive's lock: `visit` must not call it.
  using Position = std::pair<int64_t, std::string>;
  using Visit = std::function<bool(int64_t create_ms, const std::string& id, const std::string&)>;
  virtual absl::StatusOr<std::optional<Position>> Scan(const JobScan& scan, const Visit& visit) = 0;

  // Appends `job`'s attempts to it (a job Scan returned, for the full view).
  virtual absl::Status AddAttempts(v1::Job* job) = 0;

  virtual absl::StatusOr<std::vector<sched::Event>> ListEvents(const EventQuery& q) = 0;

  // The hourly usage rows `q` asks for, summed per key (ReadUsage, usage_rows.h).
  virtual absl::StatusOr<std::vector<sched::UsageHour>> ListUsage(const UsageQuery& q) = 0;

  // The stacks captured before the stops of one attempt of a job (ReadStacks, stacks_rows.h).
  virtual absl::StatusOr<StacksOfAttempt> ListStacks(const StacksQuery& q) = 0;

  // Where the log of (job, replica, attempt, restart) lives, like Core::LocateRun for a job the
  // core no longer holds: attempt 0 means the job's last attempt, restart < 0 the latest run of
  // that attempt. NOT_FOUND naming what is missing.
  virtual absl::StatusOr<RunLocation> LocateRun(const std::string& job_id,
                                                const std::string& replica, int32_t attempt,
                                                int32_t restart) = 0;
};

// JobArchive::Scan over `st`, a statement (a Statement or a PgStatement) whose rows are
// (create_ms, id, state, data) newest first, at most scan.max_rows of them, after scan.after;
// it binds (after_ms, after_id, project, max_rows) as ?1..?4 and resets `st` before it returns.
template <typename St>
absl::StatusOr<std::optional<JobArchive::Position>> ScanRows(St& st, const JobScan& scan,
                                                             const JobArchive::Visit& visit);

// LocateRun's answer from the job's row (nullopt: no such job) and its runs, as both archives
// read them.
absl::StatusOr<RunLocation> LocateRunOf(const std::string& job_id,
                                        const std::optional<v1::Job>& job,
                                        const std::vector<sched::ReplicaRun>& runs,
                                        const std::string& replica, int32_t attempt,
                                        int32_t restart);

}  // namespace trainctl::storage
