// SqliteWorkdirStore: the WorkdirStore (storage/workdir_store.h) of SQLite's store, on a
// read-write connection of its own to the database the writing SqliteStore made (and migrated to
// schema 16). SQLite lets one connection write at a time: each of its transactions (a chunk of at
// most 1 MiB, a mark, a batch of deleted chunks) is short, and the loop's commits wait for it
// (and it for them) through the busy timeout, never for a whole upload.
//
// Thread-safety: every method may be called from any thread (storage/workdir_rows.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/statement.h"
#include "storage/workdir_rows.h"
#include "storage/workdir_store.h"

struct sqlite3;

namespace trainctl::storage {

class SqliteWorkdirStore final : public WorkdirStore, private WorkdirConnection {
 public:
  // Opens the database at `db_path` to read and write; it must exist at schema 16 or later
  // (SqliteStore::Open made and migrated it): FAILED_PRECONDITION otherwise.
  static absl::StatusOr<std::unique_ptr<SqliteWorkdirStore>> Open(const std::string& db_path);
  ~SqliteWorkdirStore() override;
  SqliteWorkdirStore(const SqliteWorkdirStore&) = delete;
  SqliteWorkdirStore& operator=(const SqliteWorkdirStore&) = delete;

  // WorkdirStore.
  absl::StatusOr<std::optional<WorkdirInfo>> Get(const std::string& project,
                                                 const std::string& digest) override {
    return rows_.Get(project, digest);
  }
  absl::StatusOr<bool> Put(const WorkdirInfo& info,
                           const std::function<absl::StatusOr<bool>(std::string*)>& next) override {
    return rows_.Put(info, next);
  }
  absl::Status Read(const std::string& project, const std::string& digest,
                    const std::function<absl::Status(const std::string&)>& visit) override {
    return rows_.Read(project, digest, visit);
  }
  absl::Status AddUse(const std::string& project, const std::string& digest,
                      const std::string& job_id, int64_t now_ms) override {
    return rows_.AddUse(project, digest, job_id, now_ms);
  }
  absl::StatusOr<std::vector<WorkdirInfo>> Sweep(int64_t now_ms, int64_t grace_ms) override {
    return rows_.Sweep(now_ms, grace_ms);
  }

 private:
  SqliteWorkdirStore(sqlite3* db, std::string path);

  // WorkdirConnection (called under rows_' lock).
  absl::Status Ready() override { return absl::OkStatus(); }
  bool Connected() override { return true; }
  // BEGIN IMMEDIATE, so that the transaction waits (busy timeout) for the write lock at once
  // rather than fail when it upgrades a read. RESOURCE_EXHAUSTED when the disk is full,
  // UNAVAILABLE on an I/O error or a write lock not had within the busy timeout.
  absl::Status Write(const std::function<absl::Status()>& body) override;

  absl::Status Exec(const char* sql);

  sqlite3* const db_;
  const std::string path_;
  StatementCache cache_;
  WorkdirRows<StatementCache> rows_;
};

}  // namespace trainctl::storage
