// trainctld's data dir: its small files and the checks of its database at start.
//
//   DATA_DIR/trainctl.db            the database (storage/sqlite_store.h); none with --store
//                                   (PostgreSQL), and then no check
//   DATA_DIR/trainctld.running      written at start, removed by a clean stop: when a start finds
//                                   it, the last stop was a crash, and the database is checked
//   DATA_DIR/trainctld.addr, .http-addr, admin.token   written whole (WriteFileAtomically,
//                                   server/pki.h)
// The database holds every job's secret env values and the token hashes: the dir is trainctld's
// alone (0700), and so is every file trainctld writes in it (0600), whatever the umask.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace trainctl::server {

// The modes of the data dir and of the files trainctld writes in it.
inline constexpr mode_t kDataDirMode = 0700;
inline constexpr mode_t kDataFileMode = 0600;

// The default --checkpoint-root: DATA_DIR-checkpoints, beside the data dir rather than in it,
// since replicas running as their project's uid cannot enter a 0700 data dir
// ("/var/lib/trainctl" gives "/var/lib/trainctl-checkpoints").
std::string DefaultCheckpointRoot(const std::string& data_dir);

// At start, before anything in the data dir is opened: creates it (its missing parents as the
// umask makes them) with mode kDataDirMode. When it exists with permissions for the group or
// others, and for each regular file directly in it that has some (the database, its -wal and
// -shm, keys and tokens, files of an older trainctld), logs a warning naming it, its mode and
// the new one, and takes those permissions away. Symbolic links and subdirectories (a PKI dir, a
// checkpoint root an operator put there) are left as they are. An error names what cannot be made
// private.
absl::Status SecureDataDir(const std::string& data_dir);

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
