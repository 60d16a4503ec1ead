// What the store tests share: opening the store of a SQLite file or of the backend under test,
// reopening it as a restarted trainctld would, and a job to store.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "common/time_util.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage::reopen {

// The store of a SQLite file, or of the backend under test.
inline absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& sqlite_path) {
  auto store = SqliteStore::Open(sqlite_path);
  if (!store.ok()) return store.status();
  return std::unique_ptr<Store>(*std::move(store));
}
inline absl::StatusOr<std::unique_ptr<Store>> Open(const TestStore& db) { return db.TryOpen(); }

// Opens the database at `db` as a starting trainctld does (migrating it to the current schema)
// and loads it.
template <typename Db>
Snapshot OpenAndLoad(const Db& db) {
  auto store = Open(db);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == Store::kSchemaVersion);
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  return *std::move(snap);
}

// Commits `batch` to the database at `db`, closes it, and loads what a restarted trainctld would.
template <typename Db>
Snapshot CommitReopenLoad(const Db& db, Batch batch) {
  {
    auto store = Open(db);
    REQUIRE(store.ok());
    REQUIRE((*store)->Commit(batch).ok());
  }
  return OpenAndLoad(db);
}

inline v1::Job MakeJob(const std::string& id, int64_t create_ms) {
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

}  // namespace trainctl::storage::reopen
