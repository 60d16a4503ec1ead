// Durable state of trainctld in one SQLite file (WAL mode).
//
// Tables: jobs (one row per job: indexed columns plus the Job message without its attempts),
// attempts (one row per attempt: the same, with the whole Attempt message; a row written before
// schema 4 has only the columns, and loads without its failure class, rule, replica, node,
// decision and budgets), replica_runs (every launched process), nodes, quotas (one Quota message
// per project that has its own), tokens (API tokens: the hash of each secret and its ApiToken
// message), revoked_certificates (those of deleted nodes), and the append-only events table.
// The schema is versioned; Open() applies every pending migration in order, each in its own
// transaction, and refuses a database written by a newer trainctld.
//
// Store knows rows, not policy: it writes what the scheduler core decided and reads it back.
// Commit() applies one batch in a single transaction (group commit of a reconcile-loop turn):
// either all of it is durable when Commit returns OK, or none of it is.
//
// Thread-safety: a Store is used by one thread at a time (the reconcile loop owns it).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/model.h"
#include "storage/checkpointer.h"
#include "storage/job_rows.h"
#include "storage/statement.h"
#include "trainctl/v1/job.pb.h"

struct sqlite3;

namespace trainctl::storage {

// An API token and the SHA-256 (hex) of its secret; the secret itself is never stored.
struct TokenRow {
  v1::ApiToken token;
  std::string hash;
};

// The whole persisted state, as loaded at start-up.
struct Snapshot {
  // Each job with its attempts, oldest first.
  std::vector<v1::Job> jobs;
  std::vector<sched::Node> nodes;
  std::vector<sched::ReplicaRun> runs;
  // The projects' own quotas, by project name.
  std::vector<v1::Quota> quotas;
  // Every API token, oldest first.
  std::vector<TokenRow> tokens;
  // Fingerprints of certificates revoked for nodes since deleted (a live node's are in its row).
  std::vector<std::string> revoked_certificates;
  // The latest creation time of any job the database holds, loaded or not (0: none).
  int64_t last_create_ms = 0;
};

// Everything one reconcile-loop turn changed.
struct Batch {
  // Job rows to upsert; their attempts are ignored here (see `attempts`).
  std::vector<v1::Job> jobs;
  // (job id, attempt) rows to upsert.
  std::vector<std::pair<std::string, v1::Attempt>> attempts;
  std::vector<sched::ReplicaRun> runs;
  std::vector<sched::Node> nodes;
  // Node rows to delete, each with the fingerprints revoked for it (kept in revoked_certificates).
  std::map<std::string, std::vector<std::string>> deleted_nodes;
  std::vector<sched::Event> events;
  // Quota rows to upsert, keyed by their `project`.
  std::vector<v1::Quota> quotas;
  // Token rows to upsert, keyed by their id.
  std::vector<TokenRow> tokens;
  // Jobs to delete with their attempts, runs and events (after everything above is written).
  std::vector<std::string> deleted_jobs;

  bool empty() const {
    return jobs.empty() && attempts.empty() && runs.empty() && nodes.empty() &&
           deleted_nodes.empty() && events.empty() && quotas.empty() && tokens.empty() &&
           deleted_jobs.empty();
  }
};

// A terminal job's id and when its row last changed (when it ended, or later).
struct EndedJob {
  int64_t update_ms = 0;
  std::string id;
};

class Store {
 public:
  // The schema version this build writes.
  static constexpr int kSchemaVersion = 8;

  // Opens the database at `path` and migrates it to kSchemaVersion. Only a missing file is a new
  // cluster: its database is made beside it (`path`.new) and renamed into place once its schema
  // is complete, so a crash never leaves a half-made file. An existing file must be a trainctl
  // database: an empty file, a file that is no SQLite database and another program's database
  // are FAILED_PRECONDITION naming the file, as is one written by a newer version; INTERNAL on
  // I/O errors.
  // `vfs` names the SQLite VFS to use ("": the default; tests inject write faults through one).
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                     const std::string& vfs = "");

  // Checks the database file at `path`, read-only: SQLite's quick_check (the structure of every
  // page), or with `full` its integrity_check (indexes against their tables too, slower).
  // Returns "ok", or what the check found, one problem per line. An error when the file cannot
  // be read as a database at all.
  static absl::StatusOr<std::string> CheckFile(const std::string& path, bool full);

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The state trainctld starts from: every node, quota, token and revoked certificate, the live
  // jobs, and the terminal jobs whose row last changed at or after `ended_since_ms`, each with
  // its attempts and runs. The other jobs stay on disk (JobArchive reads them), so a start reads
  // what is live, however many jobs the database keeps.
  absl::StatusOr<Snapshot> Load(int64_t ended_since_ms = 0);

  // The job with its attempts; nullopt when there is none. For the loop's decisions about a job
  // the core no longer holds (JobArchive serves readers).
  absl::StatusOr<std::optional<v1::Job>> FindJob(const std::string& id);
  // The newest job `creator` created with `request_id` since `since_ms`, with its attempts;
  // nullopt when none (RequestIndex, for jobs the core no longer holds).
  absl::StatusOr<std::optional<v1::Job>> FindJobByRequest(const std::string& creator,
                                                          const std::string& request_id,
                                                          int64_t since_ms);

  // Applies `batch` atomically and durably (synchronous=FULL). On failure nothing of it is
  // written, and the error says why in terms a caller can act on: RESOURCE_EXHAUSTED "no space
  // left on DIR (the data dir)" when the disk is full, UNAVAILABLE on an I/O error. Each job's
  // attempts (rows of their own) are set aside while its row is written, and put back.
  absl::Status Commit(Batch& batch);
  absl::Status Commit(Batch&& batch) { return Commit(batch); }

  // Whether writes work again after a failed Commit: the file system holds at least
  // kProbeMinFreeBytes free and a one-page write transaction commits. The same errors as Commit.
  absl::Status ProbeWrite();
  static constexpr int64_t kProbeMinFreeBytes = int64_t{4} << 20;

  // At most `limit` terminal jobs (SUCCEEDED, FAILED, CANCELLED) whose row last changed before
  // `before_ms`, ordered by (update_ms, id) and after `after` in that order: what retention
  // deletes next. Reads an index of the terminal jobs alone, so its cost does not grow with the
  // jobs kept.
  absl::StatusOr<std::vector<EndedJob>> EndedBefore(int64_t before_ms, const EndedJob& after,
                                                    int32_t limit);

  absl::StatusOr<int> SchemaVersion();

  // Moves most of the write-ahead log's checkpoint work off the commits: a Checkpointer of this
  // database copies the log every `interval` on its own thread from now until the store closes.
  absl::Status StartCheckpointer(absl::Duration interval);

 private:
  Store(sqlite3* db, std::string path, std::string vfs);
  // Opens a connection (creating the file with `create`) and sets its pragmas.
  static absl::StatusOr<std::unique_ptr<Store>> Connect(const std::string& path, bool create,
                                                        const std::string& vfs);
  // Makes a new database at `path` through `path`.new and a rename.
  static absl::Status CreateNew(const std::string& path, const std::string& vfs);
  absl::Status Exec(const char* sql);
  // Runs `run(statement, row)` for each of `rows` with the cached statement for `sql`; prepares
  // nothing when there are none.
  template <typename Rows, typename Fn>
  absl::Status RunEach(const char* sql, Rows&& rows, Fn run);
  absl::Status Migrate();
  // Fills request_key of the jobs created within the last day (migration 7 -> 8).
  absl::Status FillRequestKeys();
  // Ends a write transaction that failed with `s`: rolls back what is left of it and words the
  // error by SQLite's code (see Commit).
  absl::Status FailWrite(absl::Status s);

  sqlite3* const db_;
  const std::string path_;
  const std::string vfs_;
  StatementCache cache_;
  // Stopped before the connection closes.
  std::unique_ptr<Checkpointer> checkpointer_;
};

}  // namespace trainctl::storage
