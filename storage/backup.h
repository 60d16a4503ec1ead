// Online backups of trainctld's database: a consistent copy of the SQLite file, taken while the
// reconcile loop keeps committing through its Store, with SQLite's backup API.
//
//   absl::StatusOr<BackupInfo> info = BackupDatabase(data_dir + "/trainctl.db", tmp_path, {});
//
// The copy is read on a read-only connection of its own, inside one read transaction held from
// the first page to the last, so it is the database as of the moment that transaction began:
// every change committed before then, none after. The database is in WAL mode, where a reader
// neither waits for the writer nor holds it back; while the copy lasts, checkpoints cannot go past
// the state it reads, and the log grows by what the loop commits meanwhile. The copy is made in
// steps of `pages_per_step` pages, and between steps `cancelled` may end it. (Without the held
// transaction, SQLite would start the copy over after every commit of another connection, and
// against a loop that commits every few milliseconds it would never end.)
//
// The copy comes out in rollback-journal mode, a single self-contained file: no -wal or -shm
// beside it, readable by `sqlite3 FILE` anywhere, and trainctld turns WAL on again when it opens
// a restored one. It is checked with SQLite's full integrity_check before BackupDatabase returns.
//
// Thread-safety: a free function; any number may run at once (trainctld runs one at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace trainctl::storage {

struct BackupOptions {
  // Pages copied per step: 256 pages are 1 MiB at SQLite's default page size of 4 KiB.
  int pages_per_step = 256;
  // Asked before each step; true ends the backup with CANCELLED. Unset: never.
  std::function<bool()> cancelled;
};

struct BackupInfo {
  // The copy's size on disk.
  int64_t bytes = 0;
  // Its pages, and the backup steps that copied them.
  int64_t pages = 0;
  int64_t steps = 0;
};

// Copies the database at `source` (which must exist) into `dest`, a new or empty file, and
// checks the copy with integrity_check. On success `dest` holds the copy alone (no -wal,
// -shm or -journal beside it). Errors: CANCELLED when `cancelled` said so; DATA_LOSS when the
// copy fails its integrity_check (naming what it found); INTERNAL on I/O errors (naming the file
// and SQLite's message). After an error `dest` may hold part of a copy: the caller removes it.
absl::StatusOr<BackupInfo> BackupDatabase(const std::string& source, const std::string& dest,
                                          const BackupOptions& options);

}  // namespace trainctl::storage
