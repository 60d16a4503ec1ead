// WorkdirRows: what both WorkdirStore backends (storage/workdir_store.h) share: Put, Get, Read,
// AddUse and Sweep over the rows of workdirs, workdir_chunks and workdir_uses (schema 16), run on
// one connection's statement cache (StatementCache for SQLite, PgStatementCache for PostgreSQL).
// A backend supplies the few statements whose SQL differs (WorkdirSql) and its transactions
// (WorkdirConnection), and holds a WorkdirRows to which its methods delegate. For storage/ only.
//
// How the rows are written:
//   - Put claims (project, digest) in a transaction of its own (the workdirs row, complete = 0,
//     with its size and upload_ms), deletes an earlier partial upload's chunks, then writes each
//     chunk in a transaction that first checks the row is still its claim (complete = 0 and its
//     upload_ms and size): a Sweep or another trainctld's Put may have taken it since. The last
//     transaction checks the chunks add up to the size, and marks the row complete.
//   - Chunks are numbered from 0 without gaps (an empty chunk from `next` is not stored).
//   - Deleting a workdir (an abandoned Put, Sweep) deletes its chunks a few at a time, each batch
//     in a transaction of its own, and its row last, so that a crash leaves a partial row that
//     the next Sweep finds; Sweep first marks a complete one partial, so that no Get, Read or
//     AddUse finds it while it goes.
//   - Sweep locks the row (PostgreSQL: FOR UPDATE) before it counts the uses, in a statement of its
//     own, so that it sees every use committed before it; a Put that finds the workdir complete
//     raises its upload_ms under the same lock, so that Sweep either deletes it first (and the Put
//     uploads it again) or sees the new time.
//
// Thread-safety: every method may be called from any thread. The statements run one call at a
// time, under the lock of this WorkdirRows (WorkdirConnection is called only under it), but
// `next` and `visit` run outside it. A Put or Sweep of a (project, digest) waits for (Put) or
// skips (Sweep) one that another call of this WorkdirRows is writing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/workdir_store.h"

namespace trainctl::storage {

// The statements whose SQL differs between SQLite and PostgreSQL.
struct WorkdirSql {
  // (project, digest) -> size, upload_ms, complete of the workdirs row, locked for the rest of
  // the write transaction.
  const char* find_for_write;
};

// What WorkdirRows needs of a backend's connection. Called only under WorkdirRows' lock.
class WorkdirConnection {
 public:
  virtual ~WorkdirConnection() = default;
  // Before a call's statements: reconnects a lost connection (UNAVAILABLE when that fails).
  virtual absl::Status Ready() = 0;
  // Whether the connection works without reconnecting: an abandoned Put deletes its rows only
  // then (else they are left to Sweep, or to the next Put of the same workdir).
  virtual bool Connected() = 0;
  // Runs `body` in a write transaction and commits it; rolls back when either fails, and
  // returns the error as a canonical status.
  virtual absl::Status Write(const std::function<absl::Status()>& body) = 0;
};

template <typename Cache>
class WorkdirRows {
 public:
  using Next = std::function<absl::StatusOr<bool>(std::string*)>;
  using Visit = std::function<absl::Status(const std::string&)>;

  // `cache` and `conn` are the same connection's; both outlive this.
  WorkdirRows(Cache* cache, WorkdirConnection* conn, const WorkdirSql& sql)
      : cache_(cache), conn_(conn), sql_(sql) {}
  WorkdirRows(const WorkdirRows&) = delete;
  WorkdirRows& operator=(const WorkdirRows&) = delete;

  // WorkdirStore's methods.
  absl::StatusOr<std::optional<WorkdirInfo>> Get(const std::string& project,
                                                 const std::string& digest)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<bool> Put(const WorkdirInfo& info, const Next& next) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Read(const std::string& project, const std::string& digest, const Visit& visit)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status AddUse(const std::string& project, const std::string& digest,
                      const std::string& job_id, int64_t now_ms) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<WorkdirInfo>> Sweep(int64_t now_ms, int64_t grace_ms)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Key = std::pair<std::string, std::string>;  // (project, digest)
  // A workdirs row.
  struct Row {
    int64_t size = 0;
    int64_t upload_ms = 0;
    bool complete = false;
  };

  // Marks `key` as written by this call until destroyed, waiting first while another call has it
  // (or, with `wait` false, giving up: held() is then false).
  class Hold {
   public:
    Hold(WorkdirRows* rows, Key key, bool wait);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    bool held() const { return held_; }

   private:
    WorkdirRows* const rows_;
    const Key key_;
    bool held_ = false;
  };

  // The workdirs row of (project, digest), locked for the transaction (in Write's body).
  absl::StatusOr<std::optional<Row>> FindForWrite(const std::string& project,
                                                  const std::string& digest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the chunks `next` yields for the row Put claimed, and marks it complete.
  absl::Status WriteChunks(const WorkdirInfo& info, const Next& next) ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes the chunks of (project, digest) a batch at a time, then (with `and_row`) its row, as
  // long as the row is the partial one whose upload began at `owner_upload_ms`. False when it is
  // not (or, without `and_row`, is gone): another call took it over, and it was left alone.
  absl::StatusOr<bool> DeleteChunks(const std::string& project, const std::string& digest,
                                    int64_t owner_upload_ms, bool and_row) ABSL_LOCKS_EXCLUDED(mu_);
  // Sweeps the unused workdir `info` if its row is still one to sweep (older than `cutoff_ms`,
  // no use): true when it was deleted, with *info set from its row.
  absl::StatusOr<bool> SweepOne(WorkdirInfo* info, int64_t cutoff_ms) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  Cache* const cache_ ABSL_PT_GUARDED_BY(mu_);
  WorkdirConnection* const conn_ ABSL_PT_GUARDED_BY(mu_);
  const WorkdirSql sql_;
  // The (project, digest) a Put or Sweep of this WorkdirRows is writing.
  std::set<Key> busy_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::storage
