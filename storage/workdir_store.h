// WorkdirStore: the working directories jobs are submitted with (JobSpec.workdir), kept in
// trainctld's database beside the jobs (so a PostgreSQL failover keeps them) but on a connection
// of its own, so that an upload or a fetch of many megabytes never waits for, or delays, the
// reconcile loop that owns the writing Store. Each backend has its own: SqliteWorkdirStore
// (storage/sqlite_workdir_store.h) and PgWorkdirStore (storage/pg_workdir_store.h), both on
// WorkdirRows (storage/workdir_rows.h), which says how the rows are written.
//
// An archive is kept once per (project, digest), in chunks of at most kWorkdirChunkBytes, each
// written in a transaction of its own; the workdirs row is marked complete only after its last
// chunk, so a crash mid-upload leaves nothing a job can use (and Sweep removes it).
//
//   absl::StatusOr<std::unique_ptr<SqliteWorkdirStore>> store = SqliteWorkdirStore::Open(db);
//   (*store)->Put(info, [&](std::string* chunk) { ... return more; });
//   (*store)->AddUse("team-a", digest, "j-1", now_ms);   // the Batch's workdir_uses do this
//   (*store)->Read("team-a", digest, [&](const std::string& chunk) { ...; return OkStatus(); });
//   (*store)->Sweep(now_ms, grace_ms);                     // periodically, by the leader
//
// A use ties a workdir to a job: Sweep deletes a use whose job is no longer in the jobs table
// (deleted) once it is older than the grace, and a workdir with no use left whose upload is
// older than the grace.
//
// Thread-safety: every method may be called from any thread. Their statements run one call at a
// time on the store's connection, but `next` and `visit` run outside that, so that a slow client
// holds up no other call. A Put of a (project, digest) that another call of the same store is
// writing waits for it to end (and returns false when that completed it); `next` must therefore
// not Put its own workdir. A Sweep leaves alone what a Put of the same store is writing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace trainctl::storage {

// The most one chunk row holds.
inline constexpr int64_t kWorkdirChunkBytes = 1 << 20;

struct WorkdirInfo {
  std::string project;
  // "sha256:<64 lowercase hex digits>".
  std::string digest;
  int64_t size = 0;
  int64_t upload_ms = 0;
};

// A job that uses a workdir: written in the transaction that creates the job (Batch::workdir_uses),
// so no crash leaves a job without its use.
struct WorkdirUse {
  std::string project;
  std::string digest;
  std::string job_id;
  int64_t add_ms = 0;
};

class WorkdirStore {
 public:
  virtual ~WorkdirStore() = default;

  // The complete workdir (project, digest), or nullopt when there is none (or only a partial
  // one).
  virtual absl::StatusOr<std::optional<WorkdirInfo>> Get(const std::string& project,
                                                         const std::string& digest) = 0;

  // Stores info's archive, whose bytes `next` yields in order: each call fills *chunk (at most
  // kWorkdirChunkBytes; the store writes it) and returns true while there are more bytes after
  // it, false with the last one (which may be empty); an error from `next` abandons the put
  // (the partial rows are deleted) and is returned. When (project, digest) is already complete,
  // `next` is not called and the result is false (its upload_ms is raised to info.upload_ms, so
  // that the grace Sweep gives an unused workdir runs from this upload); otherwise true once the
  // last chunk and the
  // complete mark committed. The caller has checked the digest and size (the store does not
  // hash); the store does check that no chunk exceeds kWorkdirChunkBytes and that the chunks add
  // up to info.size (INVALID_ARGUMENT, abandoned, when not). An earlier put of (project, digest)
  // left partial (a crash, a lost connection) is replaced. ABORTED (abandoned) when the partial
  // rows were deleted (Sweep) or taken over (another trainctld's Put) while written.
  virtual absl::StatusOr<bool> Put(
      const WorkdirInfo& info, const std::function<absl::StatusOr<bool>(std::string*)>& next) = 0;

  // Streams the complete workdir's chunks in order to `visit`; an error from `visit` stops and is
  // returned. NOT_FOUND when there is no complete (project, digest); ABORTED when it is deleted
  // while read (a Sweep). Each chunk is read by a statement of its own: no read stays open.
  virtual absl::Status Read(const std::string& project, const std::string& digest,
                            const std::function<absl::Status(const std::string&)>& visit) = 0;

  // Records that job `job_id` uses (project, digest), whether or not the workdir is there (a use
  // of a missing one is harmless: Sweep deletes it once the job is gone). Idempotent: a use
  // already recorded keeps its first add_ms, and nothing is written.
  virtual absl::Status AddUse(const std::string& project, const std::string& digest,
                              const std::string& job_id, int64_t now_ms) = 0;

  // Deletes uses whose job is gone and that are older than `grace_ms` (added more than
  // `grace_ms` before `now_ms`), then workdirs (complete or not) with no use whose upload began
  // more than `grace_ms` before `now_ms`. Returns the workdirs deleted (their rows as they were).
  // Deletes a workdir's chunks a few at a time, each batch in a transaction of its own.
  virtual absl::StatusOr<std::vector<WorkdirInfo>> Sweep(int64_t now_ms, int64_t grace_ms) = 0;
};

}  // namespace trainctl::storage
