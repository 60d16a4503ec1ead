// SqliteStore: the Store (storage/store.h) in one SQLite file (WAL mode), trainctld's default,
// in DATA_DIR/trainctl.db. Commits are durable with synchronous=FULL. Wherever SQLite finds the
// file damaged (opening it, a read, a commit), the error is DATA_LOSS naming the file and how to
// check it and restore a backup (storage/sqlite_damage.h).
//
// Thread-safety: a SqliteStore is used by one thread at a time (the reconcile loop owns it).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/model.h"
#include "storage/checkpointer.h"
#include "storage/job_rows.h"
#include "storage/statement.h"
#include "storage/store.h"
#include "trainctl/v1/job.pb.h"

struct sqlite3;

namespace trainctl::storage {

class SqliteStore final : public Store {
 public:
  // Opens the database at `path` and migrates it to kSchemaVersion. Only a missing file is a new
  // cluster: its database is made beside it (`path`.new) and renamed into place once its schema
  // is complete, so a crash never leaves a half-made file; it is made 0600, whatever the umask,
  // and so are the -wal and -shm SQLite makes beside it. An existing file must be a trainctl
  // database: an empty file, a file that is no SQLite database and another program's database
  // are FAILED_PRECONDITION naming the file, as is one written by a newer version; INTERNAL on
  // I/O errors.
  // `vfs` names the SQLite VFS to use ("": the default; tests inject write faults through one).
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           const std::string& vfs = "");

  // Checks the database file at `path`, read-only: SQLite's quick_check (the structure of every
  // page), or with `full` its integrity_check (indexes against their tables too, slower).
  // Returns "ok", or what the check found, one problem per line. An error when the file cannot
  // be read as a database at all.
  static absl::StatusOr<std::string> CheckFile(const std::string& path, bool full);

  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // Store. Commit is durable with synchronous=FULL; its RESOURCE_EXHAUSTED says "no space left
  // on DIR (the data dir)".
  absl::StatusOr<Snapshot> Load(int64_t ended_since_ms = 0, int64_t max_ended = kAllEnded) override;
  absl::StatusOr<std::optional<v1::Job>> FindJob(const std::string& id) override;
  absl::StatusOr<std::optional<v1::Job>> FindJobByRequest(const std::string& creator,
                                                          const std::string& request_id,
                                                          int64_t since_ms) override;
  absl::Status Commit(Batch& batch) override;
  using Store::Commit;
  // Also checks that the file system holds at least kProbeMinFreeBytes free.
  absl::Status ProbeWrite() override;
  static constexpr int64_t kProbeMinFreeBytes = int64_t{4} << 20;
  absl::StatusOr<std::vector<EndedJob>> EndedBefore(int64_t before_ms, const EndedJob& after,
                                                    int32_t limit) override;
  absl::StatusOr<int> SchemaVersion() override;
  absl::StatusOr<std::string> AdoptSecret(const std::string& name,
                                          const std::string& candidate) override;

  // Moves most of the write-ahead log's checkpoint work off the commits: a Checkpointer of this
  // database copies the log every `interval` on its own thread from now until the store closes.
  absl::Status StartCheckpointer(absl::Duration interval);

 private:
  SqliteStore(sqlite3* db, std::string path, std::string vfs);
  // Opens a connection (creating the file with `create`) and sets its pragmas.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Connect(const std::string& path, bool create,
                                                              const std::string& vfs);
  // Makes a new database at `path` through `path`.new and a rename.
  static absl::Status CreateNew(const std::string& path, const std::string& vfs);
  absl::Status Exec(const char* sql);
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
