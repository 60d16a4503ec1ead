// trainctld's data dir: its small files and the checks of its database at start.
//
//   DATA_DIR/trainctl.db            the database (storage/sqlite_store.h); none with --store
//                                   (PostgreSQL), and then no check
//   DATA_DIR/trainctld.running      written at start, removed by a clean stop: when a start finds
//                                   it, the last stop was a crash, and the database is checked
//   DATA_DIR/trainctld.addr, .http-addr, admin.token   written whole (WriteFileAtomically,
//                                   server/pki.h)
#pragma once

#include <string>

#include "absl/status/status.h"

namespace trainctl::server {

// At start, before the database is opened: when the last stop was not clean, runs SQLite's
// quick_check on the database and refuses a damaged one (FAILED_PRECONDITION naming the file,
// what the check found, and how to restore a backup). Then marks the daemon running. A clean
// last stop skips the check, so a start stays fast.
absl::Status CheckAfterUncleanStop(const std::string& data_dir);

// At a clean stop: the next start needs no check.
void MarkCleanStop(const std::string& data_dir);

// `trainctld --check-db`: the full integrity_check of the data dir's database, printed. Returns
// the exit status: 0 when it is sound, 1 otherwise.
int RunCheckDb(const std::string& data_dir);

}  // namespace trainctl::server
