// Checkpointer: copies the write-ahead log of trainctld's database into the database file on a
// thread and connection of its own, so that the reconcile loop's commits seldom have to.
//
// In WAL mode SQLite checkpoints inside the commit that takes the log past 1,000 pages: that
// commit copies the pages and syncs the database file, several milliseconds on the loop's
// thread. This thread runs a PASSIVE checkpoint every few milliseconds, which never waits for the
// writer or the readers, so when the commit's own checkpoint comes, the pages are mostly copied
// already. That one must stay: only a checkpoint that finds every page copied lets the next write
// start the log over, and against a writer that commits without pause, a checkpoint on another
// connection never does (the log then grows without end: 1.5 GB in a minute of bench_scale).
// A checkpoint that fails (a full disk) is logged and tried again at the next interval; the log
// keeps every committed change until then, so nothing is lost.
//
// Thread-safety: Start and the destructor from one thread; the work is on its own thread.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace trainctl::storage {

class Checkpointer {
 public:
  // Opens its connection to the database at `path` (through `vfs`, "" for SQLite's default)
  // and starts its thread, which checkpoints every `interval` while there are pages to copy, and
  // 20 times less often while there are none.
  static absl::StatusOr<std::unique_ptr<Checkpointer>> Start(const std::string& path,
                                                             const std::string& vfs,
                                                             absl::Duration interval);
  // Stops the thread (a checkpoint under way finishes first) and closes the connection.
  ~Checkpointer();

  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Checkpoints now, on the caller's thread: for tests.
  absl::Status CheckpointNow();
  // Checkpoints that copied at least one page, since the start.
  int64_t checkpoints() const;

 private:
  Checkpointer(sqlite3* db, std::string path, absl::Duration interval);
  void Run();

  sqlite3* const db_;
  const std::string path_;
  const absl::Duration interval_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t checkpoints_ ABSL_GUARDED_BY(mu_) = 0;
  // The last failure logged, so that a lasting one is logged once.
  std::string last_error_;
  std::thread thread_;
};

}  // namespace trainctl::storage
