#include "server/data_dir.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/pki.h"
#include "storage/sqlite_store.h"

namespace trainctl::server {
namespace {

constexpr char kRunningMarker[] = "/trainctld.running";
constexpr char kDatabase[] = "/trainctl.db";

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string RestoreAdvice(const std::string& db) {
  return absl::StrCat("to restore a backup: keep trainctld stopped, copy the backup over ", db,
                      ", remove ", db, "-wal and ", db,
                      "-shm, and start it again (`trainctld --check-db --data-dir DIR` checks a "
                      "data dir without starting)");
}

}  // namespace

absl::Status CheckAfterUncleanStop(const std::string& data_dir) {
  const std::string marker = data_dir + kRunningMarker;
  const std::string db = data_dir + kDatabase;
  if (Exists(marker) && Exists(db)) {
    spdlog::warn("the last stop of trainctld was not clean: checking {} (quick_check)", db);
    absl::StatusOr<std::string> found = storage::SqliteStore::CheckFile(db, /*full=*/false);
    if (!found.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(db, " cannot be checked after an unclean stop: ", found.status().message(),
                       "; ", RestoreAdvice(db)));
    }
    if (*found != "ok") {
      return absl::FailedPreconditionError(absl::StrCat(
          db, " is damaged (SQLite's quick_check found: ", *found, "); ", RestoreAdvice(db)));
    }
    spdlog::info("{} is sound", db);
  }
  return WriteFileAtomically(marker, absl::StrCat(getpid(), "\n"), 0644);
}

void MarkCleanStop(const std::string& data_dir) {
  const std::string marker = data_dir + kRunningMarker;
  if (unlink(marker.c_str()) != 0 && errno != ENOENT) {
    spdlog::warn("cannot remove {}: {}", marker, strerror(errno));
  }
}

int RunCheckDb(const std::string& data_dir) {
  const std::string db = data_dir + kDatabase;
  if (!Exists(db)) {
    std::cerr << "trainctld: " << db << " does not exist\n";
    return 1;
  }
  absl::StatusOr<std::string> found = storage::SqliteStore::CheckFile(db, /*full=*/true);
  if (!found.ok()) {
    std::cerr << "trainctld: " << db << ": " << found.status().message() << "\n";
    return 1;
  }
  if (*found == "ok") {
    std::cout << db << ": ok\n";
    return 0;
  }
  std::cout << db << " is damaged; SQLite's integrity_check found:\n" << *found << "\n";
  std::cout << RestoreAdvice(db) << "\n";
  return 1;
}

}  // namespace trainctl::server
