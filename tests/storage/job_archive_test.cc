// Jobs read back from the database: start-up loads only live and recently ended jobs (at most
// the last ended N, chosen by the query, with their attempts and runs), and JobArchive's
// read-only connection finds the rest — one job, a newest-first scan by project and state that
// stops after its most rows, events through their indexes, a run's node for its log — and a
// create's request id. The [backend] tests run on SQLite and PostgreSQL
// (tests/storage/test_store.h).
#include "storage/job_archive.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "storage/schema.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/storage/temp_dir.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

// A job created at `create_ms` with one attempt and one run of replica worker-0.
void AddJob(Batch* b, const std::string& id, const std::string& project, v1::JobState state,
            int64_t create_ms, int64_t update_ms) {
  v1::Job job;
  job.set_id(id);
  job.set_project(project);
  job.set_state(state);
  job.add_replicas()->set_name("worker-0");
  *job.mutable_create_time() = MsToTimestamp(create_ms);
  *job.mutable_update_time() = MsToTimestamp(update_ms);
  b->jobs.push_back(job);
  v1::Attempt a;
  a.set_number(1);
  a.set_state(state);
  a.set_reason("attempt of " + id);
  b->attempts.push_back({id, a});
  sched::ReplicaRun run;
  run.run_id = id + "/1/worker-0/0";
  run.job_id = id;
  run.attempt = 1;
  run.replica = "worker-0";
  run.node = "node-" + id;
  b->runs.push_back(run);
}

// A store of the backend under test, with archives of it.
struct Db {
  Db() : store(location.Open()) {}
  std::unique_ptr<JobArchive> Archive() { return location.OpenArchive(); }

  TestStore location;
  std::unique_ptr<Store> store;
};

// The ids a scan visits, and where it says to go on.
struct Scanned {
  std::vector<std::string> ids;
  std::optional<JobArchive::Position> resume;
};

Scanned ScanAll(JobArchive& archive, const JobScan& scan, size_t stop_after = 1000) {
  Scanned out;
  auto resume = archive.Scan(scan, [&](int64_t, const std::string& id, const std::string& row) {
    REQUIRE(ParseJobRow(id, row).ok());
    if (out.ids.size() == stop_after) return false;
    out.ids.push_back(id);
    return true;
  });
  REQUIRE(resume.ok());
  out.resume = *resume;
  return out;
}

TEST_CASE("start-up loads the live jobs and those that ended since the cutoff, with their rows",
          "[backend]") {
  Db db;
  Batch b;
  AddJob(&b, "j-running", "a", v1::JOB_STATE_RUNNING, 100, 200);
  AddJob(&b, "j-queued", "a", v1::JOB_STATE_QUEUED, 50, 50);
  AddJob(&b, "j-old", "a", v1::JOB_STATE_SUCCEEDED, 10, 1000);
  AddJob(&b, "j-recent", "a", v1::JOB_STATE_FAILED, 20, 5000);
  REQUIRE(db.store->Commit(b).ok());

  absl::StatusOr<Snapshot> snap = db.store->Load(/*ended_since_ms=*/4000);
  REQUIRE(snap.ok());
  std::vector<std::string> ids;
  for (const v1::Job& job : snap->jobs) {
    ids.push_back(job.id());
    REQUIRE(job.attempts_size() == 1);
    CHECK(job.attempts(0).reason() == "attempt of " + job.id());
  }
  // Oldest first, as the core restores them.
  CHECK(ids == std::vector<std::string>{"j-recent", "j-queued", "j-running"});
  std::vector<std::string> runs;
  for (const sched::ReplicaRun& r : snap->runs) runs.push_back(r.job_id);
  std::sort(runs.begin(), runs.end());
  CHECK(runs == std::vector<std::string>{"j-queued", "j-recent", "j-running"});

  CHECK(db.store->Load(0)->jobs.size() == 4);
}

TEST_CASE("a load reads only the last ended jobs when many ended since the cutoff, in its query",
          "[backend]") {
  Db db;
  Batch b;
  AddJob(&b, "j-running", "a", v1::JOB_STATE_RUNNING, 100, 200);
  // A burst: 50 jobs that failed within one second, two of them in the same millisecond.
  for (int i = 0; i < 50; ++i) {
    AddJob(&b, absl::StrCat("j-burst-", 10 + i), "a", v1::JOB_STATE_FAILED, 1000 + i,
           5000 + i - (i == 49 ? 1 : 0));
  }
  AddJob(&b, "j-old", "a", v1::JOB_STATE_SUCCEEDED, 10, 1000);  // before the cutoff
  REQUIRE(db.store->Commit(b).ok());

  absl::StatusOr<Snapshot> snap = db.store->Load(/*ended_since_ms=*/4000, /*max_ended=*/3);
  REQUIRE(snap.ok());
  std::vector<std::string> ids;
  for (const v1::Job& job : snap->jobs) {
    ids.push_back(job.id());
    CHECK(job.attempts_size() == 1);
  }
  // The live job, and the three that ended last (j-burst-59 and j-burst-58 share a millisecond:
  // the id breaks the tie as retention's order does), oldest first.
  CHECK(ids == std::vector<std::string>{"j-running", "j-burst-57", "j-burst-58", "j-burst-59"});
  CHECK(snap->runs.size() == 4);
  CHECK(snap->last_create_ms == 1049);
  // None ended: the live jobs alone. No bound: every one since the cutoff.
  CHECK(db.store->Load(4000, 0)->jobs.size() == 1);
  CHECK(db.store->Load(4000)->jobs.size() == 51);
  // What was not loaded is still read from the database.
  absl::StatusOr<std::optional<v1::Job>> first = db.Archive()->Get("j-burst-10");
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->state() == v1::JOB_STATE_FAILED);
}

TEST_CASE("the archive reads a job with its attempts, and nothing for an unknown one",
          "[backend]") {
  Db db;
  Batch b;
  AddJob(&b, "j-1", "a", v1::JOB_STATE_SUCCEEDED, 10, 20);
  REQUIRE(db.store->Commit(b).ok());
  auto archive = db.Archive();
  absl::StatusOr<std::optional<v1::Job>> job = archive->Get("j-1");
  REQUIRE(job.ok());
  REQUIRE(job->has_value());
  CHECK((*job)->state() == v1::JOB_STATE_SUCCEEDED);
  REQUIRE((*job)->attempts_size() == 1);
  CHECK(archive->Get("j-none")->has_value() == false);
  // What the writer commits later is seen by the next read.
  Batch more;
  AddJob(&more, "j-2", "a", v1::JOB_STATE_FAILED, 30, 40);
  REQUIRE(db.store->Commit(more).ok());
  CHECK(archive->Get("j-2")->has_value());
}

TEST_CASE("a scan walks jobs newest first, by project and state, and goes on where it stopped",
          "[backend]") {
  Db db;
  Batch b;
  // Two share a create time: the id orders them.
  AddJob(&b, "j-a1", "a", v1::JOB_STATE_SUCCEEDED, 100, 100);
  AddJob(&b, "j-b1", "b", v1::JOB_STATE_FAILED, 200, 200);
  AddJob(&b, "j-a2", "a", v1::JOB_STATE_RUNNING, 300, 300);
  AddJob(&b, "j-a3", "a", v1::JOB_STATE_FAILED, 300, 300);
  AddJob(&b, "j-b2", "b", v1::JOB_STATE_SUCCEEDED, 400, 400);
  REQUIRE(db.store->Commit(b).ok());
  auto archive = db.Archive();

  JobScan all;
  CHECK(ScanAll(*archive, all).ids ==
        std::vector<std::string>{"j-b2", "j-a2", "j-a3", "j-b1", "j-a1"});
  CHECK(!ScanAll(*archive, all).resume.has_value());

  JobScan project;
  project.project = "a";
  CHECK(ScanAll(*archive, project).ids == std::vector<std::string>{"j-a2", "j-a3", "j-a1"});

  JobScan failed;
  failed.states = 1u << v1::JOB_STATE_FAILED;
  CHECK(ScanAll(*archive, failed).ids == std::vector<std::string>{"j-a3", "j-b1"});

  // After a position: the rest of its millisecond by id, then older ones.
  JobScan after;
  after.after = JobArchive::Position{300, "j-a2"};
  CHECK(ScanAll(*archive, after).ids == std::vector<std::string>{"j-a3", "j-b1", "j-a1"});

  // A scan that reads its most rows says where to go on, matching or not; one the visitor
  // stopped does not.
  JobScan bounded;
  bounded.states = 1u << v1::JOB_STATE_SUCCEEDED;
  bounded.max_rows = 2;
  Scanned first = ScanAll(*archive, bounded);
  CHECK(first.ids == std::vector<std::string>{"j-b2"});
  REQUIRE(first.resume.has_value());
  CHECK(*first.resume == JobArchive::Position{300, "j-a2"});
  CHECK(!ScanAll(*archive, all, /*stop_after=*/2).resume.has_value());
}

TEST_CASE("the archive locates a run's log: the last attempt's latest restart by default",
          "[backend]") {
  Db db;
  Batch b;
  AddJob(&b, "j-1", "a", v1::JOB_STATE_FAILED, 10, 20);
  sched::ReplicaRun again = b.runs[0];
  again.run_id = "j-1/2/worker-0/1";
  again.attempt = 2;
  again.restart = 1;
  again.node = "node-b";
  b.runs.push_back(again);
  REQUIRE(db.store->Commit(b).ok());
  auto archive = db.Archive();

  absl::StatusOr<RunLocation> latest = archive->LocateRun("j-1", "worker-0", 0, -1);
  REQUIRE(latest.ok());
  CHECK(latest->run_id == "j-1/2/worker-0/1");
  CHECK(latest->node == "node-b");
  CHECK(latest->finished);
  absl::StatusOr<RunLocation> first = archive->LocateRun("j-1", "worker-0", 1, 0);
  REQUIRE(first.ok());
  CHECK(first->node == "node-j-1");

  CHECK(archive->LocateRun("j-none", "worker-0", 0, -1).status().message() ==
        "job j-none not found");
  CHECK(archive->LocateRun("j-1", "chief-0", 0, -1).status().message() ==
        "job j-1 has no replica \"chief-0\"; its replicas are worker-0");
  CHECK(archive->LocateRun("j-1", "worker-0", 1, 5).status().message() ==
        "no run of replica worker-0 in attempt 1 restart 5 of job j-1");
}

TEST_CASE("the archive lists events of a job, a node or an actor, newest kept, oldest first",
          "[backend]") {
  Db db;
  Batch b;
  for (int i = 0; i < 5; ++i) {
    b.events.push_back({int64_t{1000} + i, i % 2 ? "j-1" : "j-2", 1, "worker-0",
                        i % 2 ? "node-a" : "node-b", "ReplicaStarted",
                        "started " + std::to_string(i), i == 4 ? "ops" : ""});
  }
  REQUIRE(db.store->Commit(b).ok());
  auto archive = db.Archive();
  auto reasons = [&](EventQuery q) {
    absl::StatusOr<std::vector<sched::Event>> events = archive->ListEvents(q);
    REQUIRE(events.ok());
    std::vector<std::string> out;
    for (const sched::Event& e : *events) out.push_back(e.reason);
    return out;
  };
  EventQuery job;
  job.job_id = "j-1";
  CHECK(reasons(job) == std::vector<std::string>{"started 1", "started 3"});
  EventQuery node;
  node.node = "node-b";
  node.limit = 2;
  CHECK(reasons(node) == std::vector<std::string>{"started 2", "started 4"});
  EventQuery actor;
  actor.actor = "ops";
  CHECK(reasons(actor) == std::vector<std::string>{"started 4"});
  CHECK(reasons(EventQuery{}).size() == 5);
}

TEST_CASE("a node's events are found across the blocks of its index, newest kept, oldest first",
          "[backend]") {
  // 10,000 events span three blocks of events_by_node_block; node-a has every 1,000th.
  Db db;
  Batch b;
  for (int i = 0; i < 10'000; ++i) {
    b.events.push_back({int64_t{i}, "j-1", 1, "worker-0", i % 1000 == 0 ? "node-a" : "node-b",
                        "ReplicaStarted", std::to_string(i), ""});
  }
  REQUIRE(db.store->Commit(b).ok());
  auto archive = db.Archive();
  auto reasons = [&](int32_t limit, int64_t since_ms, const std::string& node = "node-a") {
    EventQuery q;
    q.node = node;
    q.limit = limit;
    q.since_ms = since_ms;
    absl::StatusOr<std::vector<sched::Event>> events = archive->ListEvents(q);
    REQUIRE(events.ok());
    std::string out;
    for (const sched::Event& e : *events) out += (out.empty() ? "" : " ") + e.reason;
    return out;
  };
  CHECK(reasons(1000, 0) == "0 1000 2000 3000 4000 5000 6000 7000 8000 9000");
  CHECK(reasons(3, 0) == "7000 8000 9000");
  CHECK(reasons(1000, 4500) == "5000 6000 7000 8000 9000");
  CHECK(reasons(1000, 9001).empty());
  CHECK(reasons(1000, 0, "node-c").empty());
  CHECK(reasons(2, 0, "node-b") == "9998 9999");
}

TEST_CASE("a create's request id finds its job in the database within the window", "[backend]") {
  Db db;
  Batch b;
  AddJob(&b, "j-1", "a", v1::JOB_STATE_SUCCEEDED, 10'000, 20'000);
  b.jobs[0].set_creator("alice");
  b.jobs[0].set_request_id("req-1");
  b.jobs[0].set_request_hash("hash");
  REQUIRE(db.store->Commit(b).ok());
  absl::StatusOr<std::optional<v1::Job>> found = db.store->FindJobByRequest("alice", "req-1", 0);
  REQUIRE(found.ok());
  REQUIRE(found->has_value());
  CHECK((*found)->id() == "j-1");
  CHECK((*found)->attempts_size() == 1);
  // Another creator's id, or a job created before the window, is not it.
  CHECK(!db.store->FindJobByRequest("bob", "req-1", 0)->has_value());
  CHECK(!db.store->FindJobByRequest("alice", "req-1", 10'001)->has_value());
  CHECK(db.store->FindJob("j-1")->has_value());
  CHECK(!db.store->FindJob("j-2")->has_value());
}

TEST_CASE("the upgrade to schema 8 indexes the request ids of the last day's jobs") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  const int64_t now = absl::ToUnixMillis(absl::Now());
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
    for (int v = 0; v < 7; ++v) {
      REQUIRE(sqlite3_exec(raw, kMigrations[v], nullptr, nullptr, nullptr) == SQLITE_OK);
    }
    REQUIRE(sqlite3_exec(raw, "PRAGMA user_version=7", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(raw, "INSERT INTO jobs VALUES (?, 'a', 4, 0, ?, ?, ?)", -1, &st,
                               nullptr) == SQLITE_OK);
    for (const auto& [id, age_ms] :
         std::map<std::string, int64_t>{{"j-recent", 3'600'000}, {"j-old", 48 * 3'600'000LL}}) {
      v1::Job job;
      job.set_id(id);
      job.set_creator("alice");
      job.set_request_id("req-" + id);
      const std::string data = job.SerializeAsString();
      sqlite3_reset(st);
      sqlite3_bind_text(st, 1, id.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(st, 2, now - age_ms);
      sqlite3_bind_int64(st, 3, now - age_ms);
      sqlite3_bind_blob(st, 4, data.data(), static_cast<int>(data.size()), SQLITE_TRANSIENT);
      REQUIRE(sqlite3_step(st) == SQLITE_DONE);
    }
    sqlite3_finalize(st);
    sqlite3_close(raw);
  }
  auto store = SqliteStore::Open(db);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == Store::kSchemaVersion);
  absl::StatusOr<std::optional<v1::Job>> recent =
      (*store)->FindJobByRequest("alice", "req-j-recent", 0);
  REQUIRE(recent.ok());
  CHECK(recent->has_value());
  // Past the request window: its id no longer returns it, so it was left alone.
  CHECK(!(*store)->FindJobByRequest("alice", "req-j-old", 0)->has_value());
}

}  // namespace
}  // namespace trainctl::storage
