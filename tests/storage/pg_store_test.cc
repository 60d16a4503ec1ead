// What only PostgreSQL's store has: its server's errors mapped to canonical codes, another
// program's database refused, a lost connection re-established. The [postgres] tests run only in
// ctest's PostgreSQL pass (TRAINCTL_TEST_PG, tests/storage/test_store.h).
#include "storage/pg_store.h"

#include <catch2/catch.hpp>
#include <string>

#include "storage/pg_job_archive.h"
#include "storage/pg_statement.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

Batch OneNode(const std::string& name) {
  Batch b;
  sched::Node n;
  n.name = name;
  n.allocatable = {1.25, 512, 0};
  b.nodes.push_back(n);
  return b;
}

TEST_CASE("SQLite's parameters are written as PostgreSQL's, quoted text left alone") {
  CHECK(ToPgParameters("SELECT ? , ?, '?' FROM t WHERE a = ?") ==
        "SELECT $1 , $2, '?' FROM t WHERE a = $3");
  CHECK(ToPgParameters("a = ?1 AND (?2 = '' OR b = ?2) LIMIT ?12") ==
        "a = $1 AND ($2 = '' OR b = $2) LIMIT $12");
}

TEST_CASE("a store in a database of another program's tables is refused", "[postgres]") {
  TestStore db;
  db.Exec("CREATE TABLE invoices (id INTEGER)");
  auto store = db.TryOpen();
  INFO(store.status().ToString());
  CHECK(store.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(store.status().message().find("not trainctl's schema") != std::string::npos);
}

TEST_CASE("a server that cannot be reached is UNAVAILABLE, naming it", "[postgres]") {
  auto store = PgStore::Open("postgresql:///nothing?host=/nonexistent-dir&connect_timeout=2");
  INFO(store.status().ToString());
  CHECK(store.status().code() == absl::StatusCode::kUnavailable);
  CHECK(PgJobArchive::Open("postgresql:///nothing?host=/nonexistent-dir").status().code() ==
        absl::StatusCode::kUnavailable);
}

TEST_CASE("a second start migrates nothing and keeps the schema version", "[postgres]") {
  TestStore db;
  db.Open();
  std::unique_ptr<Store> again = db.Open();
  CHECK(*again->SchemaVersion() == Store::kSchemaVersion);
  CHECK(db.QueryInt("SELECT count(*) FROM schema_version") == 1);
}

TEST_CASE("a lost connection fails the commit as UNAVAILABLE, and the next call reconnects",
          "[postgres]") {
  TestStore db;
  std::unique_ptr<Store> store = db.Open();
  std::unique_ptr<JobArchive> archive = db.OpenArchive();
  REQUIRE(store->Commit(OneNode("node-a")).ok());
  REQUIRE(archive->Get("j-none").ok());
  // The server ends every other session of the database (as a restart of it would).
  db.QueryInt(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
      "current_database() AND pid <> pg_backend_pid()");
  absl::Status lost = store->Commit(OneNode("node-b"));
  INFO(lost.ToString());
  CHECK(lost.code() == absl::StatusCode::kUnavailable);
  CHECK(archive->Get("j-none").status().code() == absl::StatusCode::kUnavailable);
  // The loop probes until a write works: the probe reconnects, and commits work again.
  REQUIRE(store->ProbeWrite().ok());
  REQUIRE(store->Commit(OneNode("node-c")).ok());
  CHECK(archive->Get("j-none").ok());
  absl::StatusOr<Snapshot> snap = store->Load();
  REQUIRE(snap.ok());
  std::vector<std::string> names;
  for (const sched::Node& n : snap->nodes) names.push_back(n.name);
  CHECK(names == std::vector<std::string>{"node-a", "node-c"});  // node-b's commit wrote nothing
  CHECK(snap->nodes[0].allocatable.cpu == 1.25);
}

}  // namespace
}  // namespace trainctl::storage
