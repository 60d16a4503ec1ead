// Store: the durable state of trainctld behind one narrow interface, with two implementations
// that behave the same: SqliteStore (storage/sqlite_store.h, one SQLite file in the data dir, the
// default) and PgStore (storage/pg_store.h, a PostgreSQL database named by a libpq URI).
//
// Tables: jobs (one row per job: indexed columns plus the Job message without its attempts),
// attempts (one row per attempt: the same, with the whole Attempt message; a row written before
// schema 4 has only the columns, and loads without its failure class, rule, replica, node,
// decision and budgets), replica_runs (every launched process), nodes, quotas (one Quota message
// per project that has its own), tokens (API tokens: the hash of each secret and its ApiToken
// message), revoked_certificates (those of deleted nodes), project_uids (each project's replica
// uid, written once: scheduler/project_uids.h), the append-only events table,
// leader_lease (one row: who leads trainctld sharing a PostgreSQL store, storage/pg_lease.h),
// cluster_secrets (secrets every trainctld of the cluster shares, by name), project_secrets
// (the secrets projects keep for their jobs, each value sealed: server/secret_box.h), and
// workdirs, workdir_chunks and workdir_uses (jobs' working directories, which WorkdirStore
// reads and writes on a connection of its own: storage/workdir_store.h); in PostgreSQL only,
// log_runs and log_pieces (the runs' logs, which PgLogStore keeps: storage/pg_log_store.h);
// usage_hours (the hourly usage rollup, scheduler/usage_rollup.h; kept beyond job retention and
// read by UsageQuery, storage/usage_query.h).
// The schema is versioned (kSchemaVersion, the same numbers in both dialects); opening a store
// applies every pending migration in order, each in its own transaction, and refuses a database
// written by a newer trainctld.
//
// A Store knows rows, not policy: it writes what the scheduler core decided and reads it back.
// Commit() applies one batch in a single transaction (group commit of a reconcile-loop turn):
// either all of it is durable when Commit returns OK, or none of it is.
//
// Errors use the same canonical codes in both backends: UNAVAILABLE when the database cannot be
// reached or the write failed in a way a later retry may not (an I/O error, a lost connection),
// RESOURCE_EXHAUSTED when its storage is full, FAILED_PRECONDITION for a database that is not
// trainctl's or is of a newer schema, DATA_LOSS for an unreadable row.
//
// Thread-safety: a Store is used by one thread at a time (the reconcile loop owns it).
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/model.h"
#include "storage/workdir_store.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::storage {

// An API token and the SHA-256 (hex) of its secret; the secret itself is never stored.
struct TokenRow {
  v1::ApiToken token;
  std::string hash;
};

// A project's secret as stored: its value sealed (server/secret_box.h), never in the clear, with
// the size of the value and when it was last set.
struct SecretRow {
  std::string project;
  std::string name;
  std::string sealed;
  int64_t size = 0;
  int64_t update_ms = 0;
};

// The whole persisted state, as loaded at start-up.
struct Snapshot {
  // Each job with its attempts, oldest first.
  std::vector<v1::Job> jobs;
  std::vector<sched::Node> nodes;
  std::vector<sched::ReplicaRun> runs;
  // The projects' own quotas, by project name.
  std::vector<v1::Quota> quotas;
  // Each project's replica uid.
  std::map<std::string, uint32_t> project_uids;
  // Each project's fair-share ledger.
  std::vector<sched::UsageLedger> project_usage;
  // The usage rollup's rows of the latest hour stored (scheduler/usage_rollup.h), to go on from.
  std::vector<sched::UsageHour> usage_hours;
  // Every project secret, by project and name.
  std::vector<SecretRow> secrets;
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
  // (project, uid) rows to insert: projects given their replica uid. A project's uid never
  // changes, and no two projects share one: either is a failed commit.
  std::vector<std::pair<std::string, uint32_t>> project_uids;
  // Fair-share ledger rows to upsert, keyed by their project.
  std::vector<sched::UsageLedger> project_usage;
  // Hourly usage rows to upsert whole, keyed by (hour, project, creator, node, labels).
  std::vector<sched::UsageHour> usage_hours;
  // When set (> 0): deletes at most kUsageExpireBatch (usage_rows.h) usage_hours rows of hours
  // before it, oldest first (trainctld --usage-retention).
  int64_t expire_usage_before_ms = 0;
  // Project secret rows to upsert, keyed by (project, name), and (project, name) of those to
  // delete (after the upserts).
  std::vector<SecretRow> secrets;
  std::vector<std::pair<std::string, std::string>> deleted_secrets;
  // Jobs created with a working directory: their uses, inserted unless already there, in the
  // transaction that creates the jobs.
  std::vector<WorkdirUse> workdir_uses;
  // Token rows to upsert, keyed by their id.
  std::vector<TokenRow> tokens;
  // Stacks captured before stops, to insert (a run's capture replaces an earlier one).
  std::vector<v1::ReplicaStacks> stacks;
  // Jobs to delete with their attempts, runs, stacks and events (after everything above is
  // written).
  std::vector<std::string> deleted_jobs;

  bool empty() const {
    return jobs.empty() && attempts.empty() && runs.empty() && nodes.empty() &&
           deleted_nodes.empty() && events.empty() && quotas.empty() && project_uids.empty() &&
           project_usage.empty() && usage_hours.empty() && expire_usage_before_ms <= 0 &&
           secrets.empty() && deleted_secrets.empty() && workdir_uses.empty() && tokens.empty() &&
           stacks.empty() && deleted_jobs.empty();
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
  static constexpr int kSchemaVersion = 19;

  virtual ~Store() = default;

  // The state trainctld starts from: every node, quota, token and revoked certificate, the live
  // jobs, and the terminal jobs whose row last changed at or after `ended_since_ms`, each with
  // its attempts and runs; of those terminal jobs, only the `max_ended` that changed last (by
  // update_ms, then id), chosen by the query itself. The other jobs stay in the database
  // (JobArchive reads them), so a start reads what is live and a bounded number of ended jobs,
  // however many the database keeps and however many ended at once.
  virtual absl::StatusOr<Snapshot> Load(int64_t ended_since_ms = 0,
                                        int64_t max_ended = kAllEnded) = 0;
  static constexpr int64_t kAllEnded = std::numeric_limits<int64_t>::max();

  // The job with its attempts; nullopt when there is none. For the loop's decisions about a job
  // the core no longer holds (JobArchive serves readers).
  virtual absl::StatusOr<std::optional<v1::Job>> FindJob(const std::string& id) = 0;
  // The newest job `creator` created with `request_id` since `since_ms`, with its attempts;
  // nullopt when none (RequestIndex, for jobs the core no longer holds).
  virtual absl::StatusOr<std::optional<v1::Job>> FindJobByRequest(const std::string& creator,
                                                                  const std::string& request_id,
                                                                  int64_t since_ms) = 0;

  // Applies `batch` atomically and durably, in one transaction. On failure nothing of it is
  // written, and the error says why in terms a caller can act on: RESOURCE_EXHAUSTED when the
  // storage is full, UNAVAILABLE on an I/O error or a lost connection. Each job's attempts (rows
  // of their own) are set aside while its row is written, and put back.
  virtual absl::Status Commit(Batch& batch) = 0;
  absl::Status Commit(Batch&& batch) { return Commit(batch); }

  // Whether writes work again after a failed Commit: a trivial write transaction commits (and,
  // for a file, its file system has room). The same errors as Commit.
  virtual absl::Status ProbeWrite() = 0;

  // At most `limit` terminal jobs (SUCCEEDED, FAILED, CANCELLED) whose row last changed before
  // `before_ms`, ordered by (update_ms, id) and after `after` in that order: what retention
  // deletes next. Reads an index of the terminal jobs alone, so its cost does not grow with the
  // jobs kept.
  virtual absl::StatusOr<std::vector<EndedJob>> EndedBefore(int64_t before_ms,
                                                            const EndedJob& after,
                                                            int32_t limit) = 0;

  virtual absl::StatusOr<int> SchemaVersion() = 0;

  // The secret stored under `name`; when there is none yet, stores `candidate` and returns it,
  // in one transaction, so that every trainctld sharing the database gets the same one whoever
  // came first. The same errors as Commit.
  virtual absl::StatusOr<std::string> AdoptSecret(const std::string& name,
                                                  const std::string& candidate) = 0;
};

}  // namespace trainctl::storage
