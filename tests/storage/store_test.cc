// The SQLite store against real database files in a temporary directory.
#include "storage/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/time_util.h"

namespace trainctl::storage {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/trainctl-store-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

v1::Job MakeJob(const std::string& id, int64_t create_ms) {
  v1::Job job;
  job.set_id(id);
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_RUNNING);
  *job.mutable_create_time() = MsToTimestamp(create_ms);
  job.mutable_spec()->set_display_name("train");
  v1::Replica* r = job.add_replicas();
  r->set_name("chief-0");
  r->set_exit_code(0);
  v1::Attempt* a = job.add_attempts();
  a->set_number(1);
  a->set_state(v1::JOB_STATE_RUNNING);
  a->add_nodes("node-a");
  a->add_nodes("node-b");
  return job;
}

TEST_CASE("a committed batch survives closing and reopening the database") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    Batch b;
    v1::Job job = MakeJob("j-1", 1000);
    b.jobs.push_back(job);
    b.attempts.push_back({"j-1", job.attempts(0)});
    sched::ReplicaRun run;
    run.run_id = "j-1/1/chief-0/0";
    run.job_id = "j-1";
    run.attempt = 1;
    run.replica = "chief-0";
    run.node = "node-a";
    run.exit_code = 3;
    b.runs.push_back(run);
    sched::Node n;
    n.name = "node-a";
    n.address = "127.0.0.1";
    n.allocatable = {3.5, 1024, 2};
    n.labels = {{"zone", "a"}, {"ib", "true"}};
    b.nodes.push_back(n);
    b.events.push_back({1000, "j-1", 1, "", "", "JobQueued", "submitted"});
    REQUIRE((*store)->Commit(b).ok());
  }
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == Store::kSchemaVersion);
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->jobs.size() == 1);
  const v1::Job& job = snap->jobs[0];
  CHECK(job.id() == "j-1");
  CHECK(job.spec().display_name() == "train");
  CHECK(job.replicas(0).has_exit_code());
  REQUIRE(job.attempts_size() == 1);
  CHECK(job.attempts(0).nodes_size() == 2);
  REQUIRE(snap->nodes.size() == 1);
  CHECK(snap->nodes[0].allocatable.cpu == 3.5);
  CHECK(snap->nodes[0].labels.at("zone") == "a");
  REQUIRE(snap->runs.size() == 1);
  CHECK(snap->runs[0].node == "node-a");
  auto events = (*store)->ListEvents({"j-1", "", "", 0, 10});
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  CHECK((*events)[0].reason == "submitted");
}

TEST_CASE("a failing batch leaves nothing half-written") {
  TempDir dir;
  auto store = Store::Open(dir.path + "/trainctl.db");
  REQUIRE(store.ok());
  Batch b;
  b.jobs.push_back(MakeJob("j-ok", 1));
  // An attempt for a job that does not exist violates the foreign key: the whole batch fails.
  v1::Attempt orphan;
  orphan.set_number(1);
  b.attempts.push_back({"j-missing", orphan});
  CHECK(!(*store)->Commit(b).ok());
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  CHECK(snap->jobs.empty());
}

TEST_CASE("updates replace rows; events only append") {
  TempDir dir;
  auto store = Store::Open(dir.path + "/trainctl.db");
  REQUIRE(store.ok());
  v1::Job job = MakeJob("j-1", 5);
  for (int i = 0; i < 3; ++i) {
    Batch b;
    job.set_state(i == 2 ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_RUNNING);
    b.jobs.push_back(job);
    b.events.push_back({10 + i, "j-1", 1, "", "node-a", "E", std::to_string(i)});
    REQUIRE((*store)->Commit(b).ok());
  }
  auto snap = (*store)->Load();
  REQUIRE(snap->jobs.size() == 1);
  CHECK(snap->jobs[0].state() == v1::JOB_STATE_SUCCEEDED);
  auto events = (*store)->ListEvents({"", "node-a", "", 0, 2});
  REQUIRE(events->size() == 2);  // the newest two, oldest first
  CHECK((*events)[0].reason == "1");
  CHECK((*events)[1].reason == "2");
}

TEST_CASE("a database from a newer trainctld is refused") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  REQUIRE(Store::Open(db).ok());
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_exec(raw, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto store = Store::Open(db);
  CHECK(store.status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("the database runs in WAL mode") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  REQUIRE(Store::Open(db).ok());
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
