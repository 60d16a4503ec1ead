// Online backups (storage/backup.h): a copy of a database that another thread keeps committing
// to is sound, self-contained, made in steps without starting over, and holds every job
// committed before the backup began; a cancelled or impossible backup says so.
#include "storage/backup.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "storage/sqlite_store.h"
#include "tests/common/sqlite_column.h"
#include "tests/storage/temp_dir.h"

namespace trainctl::storage {
namespace {

// The id of the i-th job.
std::string BackupJobId(int i) { return absl::StrCat("j-", 100000 + i); }

// A queued job with a 3 KiB reason: about a page of the database each.
v1::Job BackupJob(int i) {
  v1::Job job;
  job.set_id(BackupJobId(i));
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_queue_reason(std::string(3072, 'a' + i % 26));
  *job.mutable_create_time() = MsToTimestamp(1000 + i);
  *job.mutable_update_time() = MsToTimestamp(1000 + i);
  return job;
}

bool BackupFileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST_CASE("a backup beside a writer that never pauses is sound and holds what was committed") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  const std::string copy = dir.path + "/copy.db";
  auto store = SqliteStore::Open(db);
  REQUIRE(store.ok());
  // As trainctld runs it: checkpoints beside the commits.
  REQUIRE((*store)->StartCheckpointer(absl::Milliseconds(10)).ok());
  constexpr int kFirst = 2000;  // about 8 MiB: over a hundred steps of 64 pages
  for (int i = 0; i < kFirst; i += 100) {
    Batch b;
    for (int j = i; j < i + 100; ++j) b.jobs.push_back(BackupJob(j));
    REQUIRE((*store)->Commit(b).ok());
  }

  // The writer: one job per commit, as fast as it can, until told to stop.
  std::atomic<int> committed{kFirst};
  std::atomic<bool> stop{false};
  std::atomic<bool> commit_failed{false};
  std::thread writer([&] {
    for (int i = kFirst; !stop.load(); ++i) {
      Batch b;
      b.jobs.push_back(BackupJob(i));
      if (!(*store)->Commit(b).ok()) {
        commit_failed = true;
        return;
      }
      committed = i + 1;
    }
  });
  // Every step waits for one more commit, so the copy is made between commits all the way.
  BackupOptions options;
  options.pages_per_step = 64;
  int waits_timed_out = 0;
  int steps = 0;
  options.cancelled = [&] {
    // A copy that starts over after every commit would never end: stop it long before.
    if (++steps > 2000) return true;
    const int seen = committed.load();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (committed.load() == seen && !commit_failed.load()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ++waits_timed_out;
        break;
      }
      std::this_thread::yield();
    }
    return false;
  };
  const int before = committed.load();  // jobs 0..before-1 were committed before the backup
  absl::StatusOr<BackupInfo> info = BackupDatabase(db, copy, options);
  const int after = committed.load();
  stop = true;
  writer.join();
  REQUIRE_FALSE(commit_failed.load());
  REQUIRE(info.ok());
  CHECK(waits_timed_out == 0);
  // Made in steps, beside commits, and never started over (each restart would add the steps of
  // a whole copy).
  CHECK(info->pages > 2000);
  CHECK(info->steps > 30);
  CHECK(info->steps <= info->pages / 64 + 2);
  CHECK(after - before >= info->steps - 1);

  // One self-contained file, in rollback-journal mode, that passes integrity_check.
  CHECK_FALSE(BackupFileExists(copy + "-wal"));
  CHECK_FALSE(BackupFileExists(copy + "-shm"));
  CHECK(info->bytes > 0);
  CHECK(testing::SqliteColumn(copy, "PRAGMA journal_mode") == std::vector<std::string>{"delete"});
  CHECK(testing::SqliteColumn(copy, "PRAGMA integrity_check") == std::vector<std::string>{"ok"});
  // Every job committed before the backup began; and one state: no job committed after the
  // last one it holds is missing before it.
  const std::vector<std::string> ids =
      testing::SqliteColumn(copy, "SELECT id FROM jobs ORDER BY id");
  const std::set<std::string> held(ids.begin(), ids.end());
  int missing = 0;
  for (int i = 0; i < before; ++i) missing += held.count(BackupJobId(i)) == 0;
  CHECK(missing == 0);
  REQUIRE(ids.size() >= static_cast<size_t>(before));
  CHECK(ids.back() == BackupJobId(static_cast<int>(ids.size()) - 1));

  // Restored (opened by a Store, as trainctld would), it loads those jobs.
  store->reset();
  auto restored = SqliteStore::Open(copy);
  REQUIRE(restored.ok());
  absl::StatusOr<Snapshot> snapshot = (*restored)->Load();
  REQUIRE(snapshot.ok());
  CHECK(snapshot->jobs.size() == ids.size());
}

TEST_CASE("a cancelled backup, and one of a database that is not there, say so") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  {
    auto store = SqliteStore::Open(db);
    REQUIRE(store.ok());
    Batch b;
    for (int i = 0; i < 300; ++i) b.jobs.push_back(BackupJob(i));
    REQUIRE((*store)->Commit(b).ok());
  }
  BackupOptions options;
  options.pages_per_step = 16;
  int steps = 0;
  options.cancelled = [&] { return ++steps > 3; };
  absl::StatusOr<BackupInfo> cancelled = BackupDatabase(db, dir.path + "/copy.db", options);
  CHECK(cancelled.status().code() == absl::StatusCode::kCancelled);
  CHECK(cancelled.status().message() == absl::StrCat("the backup of ", db, " was cancelled"));

  absl::StatusOr<BackupInfo> missing =
      BackupDatabase(dir.path + "/none.db", dir.path + "/copy2.db", {});
  CHECK(missing.status().code() == absl::StatusCode::kInternal);
  CHECK(missing.status().message().find(dir.path + "/none.db") != absl::string_view::npos);
}

}  // namespace
}  // namespace trainctl::storage
