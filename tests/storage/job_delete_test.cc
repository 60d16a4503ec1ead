// Deleting jobs from the store: a deleted job's rows go from every table, and retention finds
// the terminal jobs that ended before a time, oldest first, a batch at a time. The [backend]
// tests run on SQLite and PostgreSQL (tests/storage/test_store.h).
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/storage/temp_dir.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

v1::Job JobRow(const std::string& id, v1::JobState state, int64_t update_ms) {
  v1::Job job;
  job.set_id(id);
  job.set_project("team-a");
  job.set_state(state);
  *job.mutable_create_time() = MsToTimestamp(update_ms - 500);
  *job.mutable_update_time() = MsToTimestamp(update_ms);
  return job;
}

// A job row with an attempt, a run and an event of its own.
void AddJob(Batch* b, const std::string& id, v1::JobState state, int64_t update_ms) {
  b->jobs.push_back(JobRow(id, state, update_ms));
  v1::Attempt a;
  a.set_number(1);
  a.set_state(state);
  b->attempts.push_back({id, a});
  sched::ReplicaRun run;
  run.run_id = id + "/1/worker-0/0";
  run.job_id = id;
  run.attempt = 1;
  run.replica = "worker-0";
  run.node = "node-a";
  b->runs.push_back(run);
  b->events.push_back({update_ms, id, 1, "worker-0", "node-a", "ReplicaStarted", "started", ""});
}

// Rows of `table` whose `column` is `value`, read through a connection of its own.
int64_t CountRows(const TestStore& db, const std::string& table, const std::string& column,
                  const std::string& value) {
  return db.QueryInt("SELECT count(*) FROM " + table + " WHERE " + column + " = '" + value + "'");
}

std::vector<std::string> Ids(const std::vector<EndedJob>& jobs) {
  std::vector<std::string> ids;
  for (const EndedJob& j : jobs) ids.push_back(j.id);
  return ids;
}

TEST_CASE("a deleted job's row, attempts, runs and events are gone, and no other job's",
          "[backend]") {
  TestStore db;
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  Batch b;
  AddJob(&b, "j-old", v1::JOB_STATE_SUCCEEDED, 1000);
  AddJob(&b, "j-kept", v1::JOB_STATE_FAILED, 2000);
  b.events.push_back({3000, "", 0, "", "node-a", "NodeCordoned", "maintenance", "ops"});
  REQUIRE((*store)->Commit(b).ok());

  Batch del;
  del.deleted_jobs = {"j-old"};
  REQUIRE((*store)->Commit(del).ok());

  CHECK(CountRows(db, "jobs", "id", "j-old") == 0);
  CHECK(CountRows(db, "attempts", "job_id", "j-old") == 0);
  CHECK(CountRows(db, "replica_runs", "job_id", "j-old") == 0);
  CHECK(CountRows(db, "events", "job_id", "j-old") == 0);
  CHECK(CountRows(db, "jobs", "id", "j-kept") == 1);
  CHECK(CountRows(db, "attempts", "job_id", "j-kept") == 1);
  CHECK(CountRows(db, "replica_runs", "job_id", "j-kept") == 1);
  CHECK(CountRows(db, "events", "job_id", "j-kept") == 1);
  CHECK(CountRows(db, "events", "node", "node-a") == 2);  // j-kept's and the node's own

  absl::StatusOr<Snapshot> snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->jobs.size() == 1);
  CHECK(snap->jobs[0].id() == "j-kept");
  CHECK(snap->runs.size() == 1);
}

TEST_CASE("rows a turn writes for a job it also deletes are not left behind", "[backend]") {
  TestStore db;
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  Batch b;
  AddJob(&b, "j-1", v1::JOB_STATE_CANCELLED, 1000);
  b.deleted_jobs = {"j-1"};
  REQUIRE((*store)->Commit(b).ok());
  CHECK(CountRows(db, "jobs", "id", "j-1") == 0);
  CHECK(CountRows(db, "events", "job_id", "j-1") == 0);
  CHECK(CountRows(db, "replica_runs", "job_id", "j-1") == 0);
}

TEST_CASE("retention finds terminal jobs that ended before a time, oldest first, in batches",
          "[backend]") {
  TestStore db;
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  Batch b;
  b.jobs.push_back(JobRow("j-c", v1::JOB_STATE_CANCELLED, 3000));
  b.jobs.push_back(JobRow("j-a", v1::JOB_STATE_SUCCEEDED, 1000));
  b.jobs.push_back(JobRow("j-b", v1::JOB_STATE_FAILED, 2000));
  b.jobs.push_back(JobRow("j-b2", v1::JOB_STATE_FAILED, 2000));
  b.jobs.push_back(JobRow("j-late", v1::JOB_STATE_SUCCEEDED, 9000));
  // Live jobs are never due, however old.
  b.jobs.push_back(JobRow("j-running", v1::JOB_STATE_RUNNING, 500));
  b.jobs.push_back(JobRow("j-queued", v1::JOB_STATE_QUEUED, 500));
  b.jobs.push_back(JobRow("j-cancelling", v1::JOB_STATE_CANCELLING, 500));
  REQUIRE((*store)->Commit(b).ok());

  absl::StatusOr<std::vector<EndedJob>> all = (*store)->EndedBefore(5000, EndedJob{}, 100);
  REQUIRE(all.ok());
  CHECK(Ids(*all) == std::vector<std::string>{"j-a", "j-b", "j-b2", "j-c"});
  CHECK(all->front().update_ms == 1000);

  // Two at a time, each batch going on after the last one's final job (ties by id).
  absl::StatusOr<std::vector<EndedJob>> first = (*store)->EndedBefore(5000, EndedJob{}, 2);
  REQUIRE(first.ok());
  CHECK(Ids(*first) == std::vector<std::string>{"j-a", "j-b"});
  absl::StatusOr<std::vector<EndedJob>> second = (*store)->EndedBefore(5000, first->back(), 2);
  REQUIRE(second.ok());
  CHECK(Ids(*second) == std::vector<std::string>{"j-b2", "j-c"});
  absl::StatusOr<std::vector<EndedJob>> rest = (*store)->EndedBefore(5000, second->back(), 2);
  REQUIRE(rest.ok());
  CHECK(rest->empty());

  // The statement is reset after each read: a commit right after one is not blocked by it.
  Batch del;
  del.deleted_jobs = {"j-a"};
  REQUIRE((*store)->Commit(del).ok());
  absl::StatusOr<std::vector<EndedJob>> after = (*store)->EndedBefore(1500, EndedJob{}, 100);
  REQUIRE(after.ok());
  CHECK(after->empty());
}

TEST_CASE("the retention query reads the index of terminal jobs in its order, sorting nothing") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  REQUIRE(SqliteStore::Open(db).ok());
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  // Store::EndedBefore's query (whose INDEXED BY makes its prepare fail if the index could not
  // serve it: the tests above would fail then).
  REQUIRE(sqlite3_prepare_v2(raw,
                             "EXPLAIN QUERY PLAN SELECT update_ms, id FROM jobs INDEXED BY "
                             "jobs_ended WHERE state IN (4, 5, 7) AND update_ms < 1 AND "
                             "(update_ms, id) > (0, '') ORDER BY update_ms, id LIMIT 5",
                             -1, &st, nullptr) == SQLITE_OK);
  std::string plan;
  while (sqlite3_step(st) == SQLITE_ROW) {
    plan += reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
    plan += "\n";
  }
  sqlite3_finalize(st);
  sqlite3_close(raw);
  INFO(plan);
  CHECK(plan.find("jobs_ended") != std::string::npos);
  CHECK(plan.find("TEMP B-TREE") == std::string::npos);  // no sort: the index's order
}

}  // namespace
}  // namespace trainctl::storage
