#include "tests/storage/test_store.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "storage/pg_job_archive.h"
#include "storage/pg_store.h"
#include "storage/sqlite_job_archive.h"
#include "storage/sqlite_store.h"

namespace trainctl::storage {
namespace {

// The test server's directory: its socket is there, and its superuser role is trainctl.
std::string PgServerDir() {
  const char* dir = std::getenv("TRAINCTL_TEST_PG");
  INFO(
      "TRAINCTL_TEST_PG names the test PostgreSQL server's directory "
      "(tests/storage/pg_test_server.sh start DIR)");
  REQUIRE(dir != nullptr);
  return dir;
}

std::string PgUri(const std::string& database, const std::string& server_dir = "") {
  return absl::StrCat("postgresql:///", database,
                      "?host=", server_dir.empty() ? PgServerDir() : server_dir, "&user=trainctl");
}

}  // namespace

int64_t PgQueryInt(const std::string& uri, const std::string& sql) {
  PGconn* conn = PQconnectdb(uri.c_str());
  INFO(PQerrorMessage(conn));
  REQUIRE(PQstatus(conn) == CONNECTION_OK);
  PGresult* res = PQexec(conn, sql.c_str());
  INFO(sql << ": " << PQresultErrorMessage(res));
  const ExecStatusType st = PQresultStatus(res);
  CHECK((st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK));
  int64_t value = 0;
  if (st == PGRES_TUPLES_OK && PQntuples(res) > 0 && !PQgetisnull(res, 0, 0)) {
    value = std::strtoll(PQgetvalue(res, 0, 0), nullptr, 10);
  }
  PQclear(res);
  PQfinish(conn);
  return value;
}

bool UsePostgres() {
  const char* dir = std::getenv("TRAINCTL_TEST_PG");
  return dir != nullptr && *dir != '\0';
}

std::string NewPgDatabase(const std::string& server_dir) {
  static std::atomic<int> counter{0};
  const std::string name = absl::StrCat("t_", getpid(), "_", counter++);
  PgQueryInt(PgUri("postgres", server_dir), absl::StrCat("CREATE DATABASE ", name));
  return PgUri(name, server_dir);
}

TestStore::TestStore() : path_(dir_.path + "/trainctl.db") {
  if (UsePostgres()) uri_ = NewPgDatabase();
}

absl::StatusOr<std::unique_ptr<Store>> TestStore::TryOpen() const {
  if (postgres()) {
    absl::StatusOr<std::unique_ptr<PgStore>> store = PgStore::Open(uri_);
    if (!store.ok()) return store.status();
    return std::unique_ptr<Store>(*std::move(store));
  }
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_);
  if (!store.ok()) return store.status();
  return std::unique_ptr<Store>(*std::move(store));
}

std::unique_ptr<Store> TestStore::Open() const {
  absl::StatusOr<std::unique_ptr<Store>> store = TryOpen();
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return *std::move(store);
}

absl::StatusOr<std::unique_ptr<JobArchive>> TestStore::TryOpenArchive() const {
  if (postgres()) {
    auto opened = PgJobArchive::Open(uri_);
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<JobArchive>(*std::move(opened));
  }
  auto opened = SqliteJobArchive::Open(path_);
  if (!opened.ok()) return opened.status();
  return std::unique_ptr<JobArchive>(*std::move(opened));
}

std::unique_ptr<JobArchive> TestStore::OpenArchive() const {
  absl::StatusOr<std::unique_ptr<JobArchive>> archive = TryOpenArchive();
  INFO(archive.status().ToString());
  REQUIRE(archive.ok());
  return *std::move(archive);
}

void TestStore::Exec(const std::string& sql) const {
  if (postgres()) {
    PgQueryInt(uri_, sql);
    return;
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path_.c_str(), &raw) == SQLITE_OK);
  INFO(sql << ": " << sqlite3_errmsg(raw));
  CHECK(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);
}

int64_t TestStore::QueryInt(const std::string& sql) const {
  if (postgres()) return PgQueryInt(uri_, sql);
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  INFO(sql << ": " << sqlite3_errmsg(raw));
  REQUIRE(sqlite3_prepare_v2(raw, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  int64_t value = 0;
  if (sqlite3_step(st) == SQLITE_ROW) value = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return value;
}

}  // namespace trainctl::storage
