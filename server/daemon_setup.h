// The steps of trainctld's start that touch its data dir and store (server/daemon.h runs them):
// the data dir's lock, this process's instance id, the store and its archive, and the first
// admin token.
//
// Thread-safe: the functions keep no state.
#pragma once

#include <signal.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "server/daemon_flags.h"
#include "server/reconcile_loop.h"
#include "server/tokens.h"
#include "storage/job_archive.h"
#include "storage/log_store.h"
#include "storage/pg_store.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "storage/workdir_store.h"

namespace trainctl::server {

// Takes an exclusive lock on DIR/LOCK, so that two daemons never share one database, and writes
// this process's pid in it. Returns the file, which holds the lock until it is closed.
// INVALID_ARGUMENT when the file cannot be opened; FAILED_PRECONDITION when another process
// holds the lock.
absl::StatusOr<int> LockDataDir(const std::string& dir);

// This process's id, for the lease and its database sessions: "<data dir id>.<random>", the
// data dir's id kept in DATA_DIR/trainctld.id (storage/pg_lease.h: a lease held by an earlier
// process of the same data dir is taken at once).
absl::StatusOr<std::string> NewInstanceId(const std::string& data_dir);

// The store trainctld keeps its state in (--store, or the SQLite file in --data-dir), and the
// readers' archive of it.
struct OpenedStore {
  std::unique_ptr<storage::Store> store;
  // The same store when it is SQLite's (its checkpointer), else null.
  storage::SqliteStore* sqlite = nullptr;
  // The same store when it is PostgreSQL's (its fence), else null.
  storage::PgStore* pg = nullptr;
  std::unique_ptr<storage::JobArchive> archive;
  // The working directories, on a connection of their own.
  std::unique_ptr<storage::WorkdirStore> workdirs;
  // trainctld's copy of the replicas' logs: segment files (--log-dir) beside SQLite, rows in
  // PostgreSQL.
  std::unique_ptr<storage::LogStore> logs;
  // What logs call it: the file, or "the PostgreSQL store" (a URI may hold a password).
  std::string name;
};

// Opens the store, waiting while its database cannot be reached (UNAVAILABLE: PostgreSQL
// starting or restarting) rather than failing; a signal of `stop` but SIGHUP ends the wait
// (nullopt). `instance` names this process's database sessions (storage/pg_lease.h).
std::optional<absl::StatusOr<OpenedStore>> OpenStoreWhenReachable(const DaemonFlags& flags,
                                                                  const std::string& instance,
                                                                  const sigset_t& stop);

// At the first start with authentication: an admin token, stored (as a hash) through `loop`,
// which runs, and written to DIR/admin.token, mode 0600, for the operator to create everyone
// else's.
absl::Status WriteFirstAdminToken(const std::string& dir, ReconcileLoop* loop,
                                  TokenRegistry* tokens);

}  // namespace trainctl::server
