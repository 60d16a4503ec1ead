// The store's schema: databases written by earlier trainctld versions migrate and keep their
// rows, a newer one is refused, and SQLite runs in WAL mode.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "model/model_proto.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/common/proto_fill.h"
#include "tests/storage/store_reopen.h"
#include "tests/storage/temp_dir.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

using reopen::CommitReopenLoad;
using reopen::MakeJob;
using reopen::Open;
using reopen::OpenAndLoad;

// The schema as trainctld 0.1.0 shipped it (version 1), frozen here so that the migration test
// starts from what real databases hold even if the code's copy were ever edited by mistake.
constexpr char kSchemaV1[] = R"sql(
    CREATE TABLE jobs (
      id TEXT PRIMARY KEY, project TEXT NOT NULL, state INTEGER NOT NULL,
      priority INTEGER NOT NULL, create_ms INTEGER NOT NULL, update_ms INTEGER NOT NULL,
      data BLOB NOT NULL);
    CREATE INDEX jobs_by_state ON jobs(state, priority, create_ms);
    CREATE TABLE attempts (
      job_id TEXT NOT NULL REFERENCES jobs(id), number INTEGER NOT NULL,
      state INTEGER NOT NULL, reason TEXT NOT NULL, start_ms INTEGER NOT NULL,
      end_ms INTEGER NOT NULL, nodes TEXT NOT NULL, PRIMARY KEY (job_id, number));
    CREATE TABLE replica_runs (
      run_id TEXT PRIMARY KEY, job_id TEXT NOT NULL REFERENCES jobs(id),
      attempt INTEGER NOT NULL, replica TEXT NOT NULL, restart INTEGER NOT NULL,
      node TEXT NOT NULL, state INTEGER NOT NULL, pid INTEGER NOT NULL, exit_code INTEGER,
      signal INTEGER, oom INTEGER NOT NULL, message TEXT NOT NULL, start_ms INTEGER NOT NULL,
      end_ms INTEGER NOT NULL);
    CREATE INDEX runs_by_job ON replica_runs(job_id, attempt);
    CREATE TABLE nodes (
      name TEXT PRIMARY KEY, address TEXT NOT NULL, capacity_cpu REAL NOT NULL,
      capacity_mem_mb INTEGER NOT NULL, capacity_gpus INTEGER NOT NULL, alloc_cpu REAL NOT NULL,
      alloc_mem_mb INTEGER NOT NULL, alloc_gpus INTEGER NOT NULL, labels TEXT NOT NULL,
      agent_instance TEXT NOT NULL, registered_ms INTEGER NOT NULL,
      last_heartbeat_ms INTEGER NOT NULL);
    CREATE TABLE events (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, time_ms INTEGER NOT NULL, job_id TEXT NOT NULL,
      attempt INTEGER NOT NULL, replica TEXT NOT NULL, node TEXT NOT NULL, type TEXT NOT NULL,
      reason TEXT NOT NULL);
    CREATE INDEX events_by_job ON events(job_id, seq);
    CREATE INDEX events_by_node ON events(node, seq);
)sql";

// What migrations 1 -> 2 and 2 -> 3 added, frozen like kSchemaV1: with it, a database as
// trainctld wrote it at schema version 3.
constexpr char kSchemaV1ToV3[] = R"sql(
    CREATE TABLE quotas (project TEXT PRIMARY KEY, data BLOB NOT NULL);
    ALTER TABLE nodes ADD COLUMN status BLOB NOT NULL DEFAULT x'';
)sql";

void ExecRaw(sqlite3* raw, const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(raw, sql, nullptr, nullptr, &err);
  INFO(sql << ": " << (err != nullptr ? err : ""));
  sqlite3_free(err);
  REQUIRE(rc == SQLITE_OK);
}

// Writes `job` (attempts left out) as the jobs row of every schema version so far holds it.
void InsertJobRow(sqlite3* raw, v1::Job job) {
  job.clear_attempts();
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(raw,
                             "INSERT INTO jobs (id, project, state, priority, create_ms, "
                             "update_ms, data) VALUES (?, 'team-a', 3, 0, 1000, 1000, ?)",
                             -1, &st, nullptr) == SQLITE_OK);
  const std::string data = job.SerializeAsString();
  sqlite3_bind_text(st, 1, job.id().data(), static_cast<int>(job.id().size()), SQLITE_TRANSIENT);
  sqlite3_bind_blob(st, 2, data.data(), static_cast<int>(data.size()), SQLITE_TRANSIENT);
  REQUIRE(sqlite3_step(st) == SQLITE_DONE);
  sqlite3_finalize(st);
}

TEST_CASE("a database at schema version 1 migrates to the current one and keeps its rows") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, kSchemaV1, nullptr, nullptr, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "PRAGMA user_version=1", nullptr, nullptr, nullptr) == SQLITE_OK);
    InsertJobRow(raw, MakeJob("j-old", 1000));
    REQUIRE(sqlite3_exec(raw, "INSERT INTO attempts VALUES ('j-old', 1, 3, '', 1000, 0, 'node-a')",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw,
                         "INSERT INTO nodes VALUES ('node-a', 'a.local', 4, 4096, 0, 4, 4096, 0, "
                         "'', 'i-1', 1000, 2000)",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
  }
  auto store = SqliteStore::Open(db);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == Store::kSchemaVersion);
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->jobs.size() == 1);
  CHECK(snap->jobs[0].id() == "j-old");
  CHECK(snap->jobs[0].spec().display_name() == "train");
  REQUIRE(snap->jobs[0].attempts_size() == 1);
  CHECK(snap->jobs[0].attempts(0).nodes(0) == "node-a");
  CHECK(snap->quotas.empty());
  // Nodes from before schema 3 have no status yet: READY is derived when they register.
  REQUIRE(snap->nodes.size() == 1);
  CHECK(snap->nodes[0].last_heartbeat == absl::FromUnixMillis(2000));
  CHECK(snap->nodes[0].status.state == v1::NODE_STATE_UNSPECIFIED);

  // The new table works, and opening again migrates nothing twice.
  v1::Quota quota;
  quota.set_project("team-a");
  quota.set_gpus(2);
  Batch b;
  b.quotas.push_back(quota);
  b.project_uids = {{"team-a", 65536}};                         // schema 13
  b.project_usage.emplace_back().project = "team-a";            // schema 14
  b.secrets.push_back({"team-a", "WANDB", "sealed", 6, 1000});  // schema 15
  REQUIRE((*store)->Commit(b).ok());
  store->reset();
  auto again = SqliteStore::Open(db);
  REQUIRE(again.ok());
  snap = (*again)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->quotas.size() == 1);
  CHECK(snap->quotas[0].gpus() == 2);
  CHECK(snap->project_uids == std::map<std::string, uint32_t>{{"team-a", 65536}});
  REQUIRE(snap->project_usage.size() == 1);
  REQUIRE(snap->secrets.size() == 1);
  CHECK(snap->jobs.size() == 1);
  again->reset();

  // Schema 11 dropped the index of jobs by state, which no read used; 12 indexes a node's
  // events by block.
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(raw,
                             "SELECT group_concat(name) FROM sqlite_master WHERE name IN "
                             "('jobs_by_state', 'events_by_node', 'events_by_node_block')",
                             -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) ==
        "events_by_node_block");
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST_CASE("a database at schema version 3 keeps its attempts, and new ones are stored whole") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
    ExecRaw(raw, kSchemaV1);
    ExecRaw(raw, kSchemaV1ToV3);
    ExecRaw(raw, "PRAGMA user_version=3");
    InsertJobRow(raw, MakeJob("j-old", 1000));
    // Attempt 1 ended (retried), attempt 2 runs: the columns are all a version 3 row has.
    ExecRaw(raw,
            "INSERT INTO attempts VALUES ('j-old', 1, 5, 'Replica worker-0 exited with a "
            "non-zero status of 134.', 1000, 2500, 'node-a,node-b')");
    ExecRaw(raw, "INSERT INTO attempts VALUES ('j-old', 2, 3, '', 3000, 0, 'node-b')");
    sqlite3_close(raw);
  }
  Snapshot snap = OpenAndLoad(db);
  REQUIRE(snap.jobs.size() == 1);
  REQUIRE(snap.jobs[0].attempts_size() == 2);
  const v1::Attempt& first = snap.jobs[0].attempts(0);
  CHECK(first.number() == 1);
  CHECK(first.state() == v1::JOB_STATE_FAILED);
  CHECK(first.reason() == "Replica worker-0 exited with a non-zero status of 134.");
  CHECK(TimestampToMs(first.start_time()) == 1000);
  CHECK(TimestampToMs(first.end_time()) == 2500);
  REQUIRE(first.nodes_size() == 2);
  CHECK(first.nodes(1) == "node-b");
  CHECK(first.decision().empty());  // never stored before schema 4
  CHECK(snap.jobs[0].attempts(1).state() == v1::JOB_STATE_RUNNING);

  // Attempt 2 ends after the upgrade and attempt 3 starts: both are stored whole, next to the
  // old row of attempt 1.
  v1::Attempt second = snap.jobs[0].attempts(1);
  second.set_state(v1::JOB_STATE_FAILED);
  second.set_failure_class("TRANSIENT");
  second.set_matched_rule("default: transient exit code 134");
  second.set_replica("worker-0");
  second.set_node("node-b");
  second.set_decision("RETRY_JOB");
  second.mutable_budgets_left()->set_job_retries(1);
  v1::Attempt third;
  third.set_number(3);
  third.set_state(v1::JOB_STATE_PENDING);
  third.add_nodes("node-c");
  Batch b;
  b.attempts = {{"j-old", second}, {"j-old", third}};
  Snapshot after = CommitReopenLoad(db, b);
  REQUIRE(after.jobs.size() == 1);
  REQUIRE(after.jobs[0].attempts_size() == 3);
  CHECK(testing::Differences(first, after.jobs[0].attempts(0)) == "");
  CHECK(testing::Differences(second, after.jobs[0].attempts(1)) == "");
  CHECK(testing::Differences(third, after.jobs[0].attempts(2)) == "");
}

TEST_CASE("a database from a newer trainctld is refused", "[backend]") {
  TestStore db;
  REQUIRE(db.TryOpen().ok());
  db.Exec(db.postgres() ? "UPDATE schema_version SET version = 99" : "PRAGMA user_version=99");
  auto store = db.TryOpen();
  CHECK(store.status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("the database runs in WAL mode") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  REQUIRE(SqliteStore::Open(db).ok());
  CHECK(std::filesystem::exists(db));
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &st, nullptr);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) == "wal");
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

}  // namespace
}  // namespace trainctl::storage
