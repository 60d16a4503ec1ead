// The backend the storage tests run against, so that one suite proves both behave the same:
// SQLite (a trainctl.db in a temporary directory), or, when TRAINCTL_TEST_PG names the directory
// of the test PostgreSQL server (tests/storage/pg_test_server.sh, the ctest fixture "postgres"),
// a fresh database on it for each TestStore. Tests that hold for both are tagged [backend]; ctest
// runs those a second time against PostgreSQL ("storage-pg: ...").
//
// With TRAINCTL_TEST_PG set and no server there, every test fails (REQUIRE): the PostgreSQL runs
// never pass by skipping.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "storage/job_archive.h"
#include "storage/store.h"
#include "tests/storage/temp_dir.h"

namespace trainctl::storage {

// Whether this run's backend is PostgreSQL.
bool UsePostgres();

// A new, empty database on the test PostgreSQL server (or the one whose directory is
// `server_dir`): its URI. REQUIREs the server.
std::string NewPgDatabase(const std::string& server_dir = "");

// Runs `sql` on the PostgreSQL database at `uri` on a connection of its own; returns the first
// column of its first row as an integer (0 when it returns none). REQUIREs the connection.
int64_t PgQueryInt(const std::string& uri, const std::string& sql);

class TestStore {
 public:
  // A fresh location: nothing is created until Open().
  TestStore();

  bool postgres() const { return !uri_.empty(); }
  // The SQLite file's path, or the PostgreSQL URI.
  const std::string& location() const { return postgres() ? uri_ : path_; }

  absl::StatusOr<std::unique_ptr<Store>> TryOpen() const;
  absl::StatusOr<std::unique_ptr<JobArchive>> TryOpenArchive() const;
  // REQUIREs that it opens.
  std::unique_ptr<Store> Open() const;
  std::unique_ptr<JobArchive> OpenArchive() const;
  // The first column of the first row `sql` returns, as an integer, read on a connection of its
  // own (count(*) and the like).
  int64_t QueryInt(const std::string& sql) const;
  // Runs `sql` (no result) on a connection of its own. REQUIREs that it succeeds.
  void Exec(const std::string& sql) const;

 private:
  TempDir dir_;
  std::string path_;
  std::string uri_;
};

}  // namespace trainctl::storage
