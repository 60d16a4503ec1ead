// The store against real databases: SQLite files in a temporary directory, and (the tests
// tagged [backend], run again by ctest with TRAINCTL_TEST_STORE=postgres) PostgreSQL databases.
#include "storage/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/time_util.h"
#include "model/model_proto.h"
#include "storage/job_archive.h"
#include "storage/sqlite_store.h"
#include "tests/common/proto_fill.h"
#include "tests/storage/store_reopen.h"
#include "tests/storage/temp_dir.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

// Fields not stored because they are computed when read. Every other field of a job, its
// attempts, a node's status and a quota must come back from the store as it was written.
const std::set<std::string> kComputedWhenRead = {"trainctl.v1.Job.queue_status"};

using reopen::CommitReopenLoad;
using reopen::MakeJob;
using reopen::Open;
using reopen::OpenAndLoad;

TEST_CASE("a committed batch survives closing and reopening the database", "[backend]") {
  TestStore db;
  {
    auto store = db.TryOpen();
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
    n.status.state = v1::NODE_STATE_ISOLATED;
    n.status.flapping = true;
    n.status.checks.emplace_back().set_phase("periodic");
    b.nodes.push_back(n);
    b.events.push_back({1000, "j-1", 1, "", "", "JobQueued", "submitted", "alice"});
    REQUIRE((*store)->Commit(b).ok());
  }
  auto store = db.TryOpen();
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
  CHECK(snap->nodes[0].status.state == v1::NODE_STATE_ISOLATED);
  CHECK(snap->nodes[0].status.flapping);
  CHECK(snap->nodes[0].status.checks.size() == 1);
  REQUIRE(snap->runs.size() == 1);
  CHECK(snap->runs[0].node == "node-a");
  auto archive = db.TryOpenArchive();
  REQUIRE(archive.ok());
  auto events = (*archive)->ListEvents({"j-1", "", "", 0, 10, ""});
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  CHECK((*events)[0].reason == "submitted");
  CHECK((*events)[0].actor == "alice");
  CHECK((*archive)->ListEvents({"", "", "", 0, 10, "alice"})->size() == 1);
  CHECK((*archive)->ListEvents({"", "", "", 0, 10, "bob"})->empty());
}

TEST_CASE("a load tells the latest creation time of every stored job, loaded or not", "[backend]") {
  TestStore db;
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  CHECK((*store)->Load()->last_create_ms == 0);  // no job yet
  Batch b;
  b.jobs.push_back(MakeJob("j-live", 5000));
  v1::Job ended = MakeJob("j-ended", 9000);  // the latest, ended long ago: not loaded
  ended.set_state(v1::JOB_STATE_SUCCEEDED);
  *ended.mutable_update_time() = MsToTimestamp(9500);
  b.jobs.push_back(ended);
  REQUIRE((*store)->Commit(b).ok());
  auto snap = (*store)->Load(/*ended_since_ms=*/100'000);
  REQUIRE(snap.ok());
  REQUIRE(snap->jobs.size() == 1);
  CHECK(snap->jobs[0].id() == "j-live");
  CHECK(snap->last_create_ms == 9000);
}

TEST_CASE("tokens round-trip, oldest first, and are replaced by id", "[backend]") {
  TestStore db;
  {
    auto store = db.TryOpen();
    REQUIRE(store.ok());
    TokenRow a;
    a.token.set_id("00000000000000aa");
    a.token.set_owner("alice");
    a.token.set_role(v1::ROLE_MEMBER);
    a.token.add_projects("team-a");
    a.hash = std::string(64, 'a');
    TokenRow b = a;
    b.token.set_id("00000000000000bb");
    b.token.set_owner("bob");
    b.hash = std::string(64, 'b');
    Batch first;
    first.tokens = {a, b};
    REQUIRE((*store)->Commit(first).ok());
    a.token.set_revoked(true);
    Batch second;
    second.tokens = {a};
    REQUIRE((*store)->Commit(second).ok());
  }
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->tokens.size() == 2);
  CHECK(snap->tokens[0].token.owner() == "alice");
  CHECK(snap->tokens[0].token.revoked());
  CHECK(snap->tokens[0].token.projects(0) == "team-a");
  CHECK(snap->tokens[0].hash == std::string(64, 'a'));
  CHECK(snap->tokens[1].token.owner() == "bob");
  CHECK_FALSE(snap->tokens[1].token.revoked());
}

TEST_CASE("a deleted node's row goes, and the certificates revoked for it stay revoked",
          "[backend]") {
  TestStore db;
  Batch add;
  for (const char* name : {"node-a", "node-b"}) {
    sched::Node n;
    n.name = name;
    n.status.revoked_certificates.push_back(std::string("fp-") + name);
    add.nodes.push_back(n);
  }
  CHECK(CommitReopenLoad(db, add).nodes.size() == 2);
  Batch del;
  del.deleted_nodes["node-a"] = {"fp-node-a", "fp-old-a"};
  Snapshot snap = CommitReopenLoad(db, del);
  REQUIRE(snap.nodes.size() == 1);
  CHECK(snap.nodes[0].name == "node-b");
  CHECK(snap.revoked_certificates == std::vector<std::string>{"fp-node-a", "fp-old-a"});
  // Deleting it again (a name registered and deleted twice) keeps one row per fingerprint.
  CHECK(CommitReopenLoad(db, del).revoked_certificates.size() == 2);
}

TEST_CASE("a failing batch leaves nothing half-written", "[backend]") {
  TestStore db;
  auto store = db.TryOpen();
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
  // The store works on after a failed commit: the same statements write the next batch.
  Batch next;
  next.jobs.push_back(MakeJob("j-next", 2));
  next.attempts.push_back({"j-next", next.jobs[0].attempts(0)});
  REQUIRE((*store)->Commit(next).ok());
  snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->jobs.size() == 1);
  CHECK(snap->jobs[0].attempts_size() == 1);
}

TEST_CASE("updates replace rows, events only append", "[backend]") {
  TestStore db;
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  auto archive = db.TryOpenArchive();
  REQUIRE(archive.ok());
  v1::Job job = MakeJob("j-1", 5);
  for (int i = 0; i < 3; ++i) {
    Batch b;
    job.set_state(i == 2 ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_RUNNING);
    b.jobs.push_back(job);
    b.events.push_back({10 + i, "j-1", 1, "", "node-a", "E", std::to_string(i), ""});
    REQUIRE((*store)->Commit(b).ok());
  }
  auto snap = (*store)->Load();
  REQUIRE(snap->jobs.size() == 1);
  CHECK(snap->jobs[0].state() == v1::JOB_STATE_SUCCEEDED);
  auto events = (*archive)->ListEvents({"", "node-a", "", 0, 2, ""});
  REQUIRE(events->size() == 2);  // the newest two, oldest first
  CHECK((*events)[0].reason == "1");
  CHECK((*events)[1].reason == "2");
}

TEST_CASE("quotas round-trip and are replaced by project", "[backend]") {
  TestStore db;
  {
    auto store = db.TryOpen();
    REQUIRE(store.ok());
    v1::Quota a;
    a.set_project("team-a");
    a.set_gpus(8);
    a.set_cohort("research");
    a.mutable_borrowing_limit()->set_gpus(4);
    a.set_queueing_strategy(v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
    *a.mutable_starvation_limit() = MsToDuration(600000);
    v1::Quota b;
    b.set_project("team-b");
    b.set_cpu(16.5);
    b.set_memory_mb(65536);
    b.set_max_running_jobs(3);
    Batch first;
    first.quotas = {b, a};
    REQUIRE((*store)->Commit(first).ok());
    // SetQuota replaces the whole row: team-a's gpus limit is gone.
    a.clear_gpus();
    a.set_max_running_jobs(1);
    Batch second;
    second.quotas = {a};
    REQUIRE((*store)->Commit(second).ok());
  }
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->quotas.size() == 2);
  const v1::Quota& a = snap->quotas[0];  // by project name
  CHECK(a.project() == "team-a");
  CHECK(!a.has_gpus());
  CHECK(a.max_running_jobs() == 1);
  CHECK(a.cohort() == "research");
  CHECK(a.borrowing_limit().gpus() == 4);
  CHECK(a.queueing_strategy() == v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
  CHECK(DurationToMs(a.starvation_limit()) == 600000);
  const v1::Quota& b = snap->quotas[1];
  CHECK(b.project() == "team-b");
  CHECK(b.cpu() == 16.5);
  CHECK(b.memory_mb() == 65536);
  CHECK(b.max_running_jobs() == 3);
  CHECK(!b.has_gpus());
}

TEST_CASE("every stored field of a job and its attempts survives closing and reopening",
          "[backend]") {
  TestStore db;
  v1::Job job;
  testing::FillEveryField(&job, kComputedWhenRead);
  // The store keys attempts by (job id, number) and loads them oldest first.
  REQUIRE(job.attempts_size() == 2);
  job.mutable_attempts(0)->set_number(1);
  job.mutable_attempts(1)->set_number(2);
  Batch b;
  b.jobs.push_back(job);
  for (const v1::Attempt& a : job.attempts()) b.attempts.push_back({job.id(), a});
  Snapshot snap = CommitReopenLoad(db, b);
  REQUIRE(snap.jobs.size() == 1);
  CHECK(testing::Differences(job, snap.jobs[0]) == "");
}

TEST_CASE("an attempt stored whole keeps its indexed columns filled", "[backend]") {
  TestStore db;
  v1::Job job = MakeJob("j-1", 1000);
  v1::Attempt* a = job.mutable_attempts(0);
  a->set_state(v1::JOB_STATE_FAILED);
  a->set_reason("lost");
  *a->mutable_start_time() = MsToTimestamp(1500);
  *a->mutable_end_time() = MsToTimestamp(2500);
  a->set_decision("RETRY_JOB");
  Batch b;
  b.jobs.push_back(job);
  b.attempts.push_back({"j-1", *a});
  CommitReopenLoad(db, b);
  CHECK(db.QueryInt("SELECT count(*) FROM attempts WHERE job_id = 'j-1' AND number = 1 AND "
                    "state = " +
                    std::to_string(v1::JOB_STATE_FAILED) +
                    " AND reason = 'lost' AND start_ms = 1500 AND end_ms = 2500 AND "
                    "nodes = 'node-a,node-b'") == 1);
}

TEST_CASE("every stored field of a node, its status message whole, survives a reopen",
          "[backend]") {
  TestStore db;
  sched::Node n;
  n.name = "node-a";
  n.address = "10.0.0.7";
  n.capacity = {64.5, 515000, 8};
  n.allocatable = {62.25, 500000, 7};
  n.labels = {{"zone", "b"}, {"ib", "true"}};
  n.agent_instance = "i-4711";
  n.registered = absl::FromUnixMillis(1700000000123);
  n.last_heartbeat = absl::FromUnixMillis(1700000004567);
  // Every field of its status: the API Node's fields from `state` on, but `reservation` (the
  // admission queue's, never stored).
  v1::Node status;
  testing::FillEveryField(&status);
  for (const char* field :
       {"name", "address", "connected", "capacity", "allocatable", "free", "labels", "replicas",
        "last_heartbeat_time", "register_time", "reservation"}) {
    status.GetReflection()->ClearField(&status, status.GetDescriptor()->FindFieldByName(field));
  }
  n.status = sched::NodeStatusFromProto(status);
  // connected, lost, draining, shutting_down and stale_runs are not stored: the core derives
  // them again when it restores the node (Core::Restore) and when its agent registers.
  Batch b;
  b.nodes.push_back(n);
  Snapshot snap = CommitReopenLoad(db, b);
  REQUIRE(snap.nodes.size() == 1);
  const sched::Node& got = snap.nodes[0];
  CHECK(got.name == n.name);
  CHECK(got.address == n.address);
  CHECK(got.capacity.cpu == n.capacity.cpu);
  CHECK(got.capacity.memory_mb == n.capacity.memory_mb);
  CHECK(got.capacity.gpus == n.capacity.gpus);
  CHECK(got.allocatable.cpu == n.allocatable.cpu);
  CHECK(got.allocatable.memory_mb == n.allocatable.memory_mb);
  CHECK(got.allocatable.gpus == n.allocatable.gpus);
  CHECK(got.labels == n.labels);
  CHECK(got.agent_instance == n.agent_instance);
  CHECK(got.registered == n.registered);
  CHECK(got.last_heartbeat == n.last_heartbeat);
  CHECK(testing::Differences(status, sched::ToProto(got.status)) == "");
}

TEST_CASE("every field of a quota survives a reopen", "[backend]") {
  TestStore db;
  v1::Quota q;
  testing::FillEveryField(&q);
  Batch b;
  b.quotas.push_back(q);
  Snapshot snap = CommitReopenLoad(db, b);
  REQUIRE(snap.quotas.size() == 1);
  CHECK(testing::Differences(q, snap.quotas[0]) == "");
}

}  // namespace
}  // namespace trainctl::storage
