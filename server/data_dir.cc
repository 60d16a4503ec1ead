#include "server/data_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/pki.h"
#include "storage/sqlite_damage.h"
#include "storage/sqlite_store.h"

namespace trainctl::server {
namespace {

constexpr char kRunningMarker[] = "/trainctld.running";
constexpr char kDatabase[] = "/trainctl.db";

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Takes the group's and others' permissions away from `name` in `dir` (whose mode is `mode`),
// with a warning.
absl::Status TakeAwayOthers(int dir, const char* name, const std::string& path, mode_t mode) {
  const mode_t tightened = mode & ~mode_t{077};
  if (fchmodat(dir, name, tightened, 0) != 0) {
    return absl::PermissionDeniedError(
        absl::StrFormat("cannot change the mode of %s from %04o: %s", path, mode, strerror(errno)));
  }
  spdlog::warn("{} had mode {:04o}, open to other users of this host: changed to {:04o}", path,
               mode, tightened);
  return absl::OkStatus();
}

}  // namespace

std::string DefaultCheckpointRoot(const std::string& data_dir) {
  std::filesystem::path dir = std::filesystem::path(data_dir).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "/var/lib/trainctl/"
  return dir.string() + "-checkpoints";
}

absl::Status SecureDataDir(const std::string& data_dir) {
  struct stat st;
  if (stat(data_dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return absl::InternalError(
          absl::StrCat("cannot read --data-dir ", data_dir, ": ", strerror(errno)));
    }
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::path(data_dir).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec || (mkdir(data_dir.c_str(), kDataDirMode) != 0 && errno != EEXIST)) {
      return absl::InternalError(absl::StrCat("cannot create --data-dir ", data_dir, ": ",
                                              ec ? ec.message() : strerror(errno)));
    }
    // Exactly 0700, whatever the umask took away.
    if (chmod(data_dir.c_str(), kDataDirMode) != 0 || stat(data_dir.c_str(), &st) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot make --data-dir ", data_dir, " private: ", strerror(errno)));
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--data-dir ", data_dir, " is not a directory"));
  }
  const int dir = open(data_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open --data-dir ", data_dir, ": ", strerror(errno)));
  }
  absl::Status status;
  if ((st.st_mode & 077) != 0) status = TakeAwayOthers(dir, ".", data_dir, st.st_mode & 07777);
  DIR* entries = status.ok() ? fdopendir(dup(dir)) : nullptr;
  if (status.ok() && entries == nullptr) {
    status = absl::InternalError(
        absl::StrCat("cannot list --data-dir ", data_dir, ": ", strerror(errno)));
  }
  while (status.ok()) {
    const dirent* entry = readdir(entries);
    if (entry == nullptr) break;
    struct stat file;
    if (fstatat(dir, entry->d_name, &file, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(file.st_mode) ||
        (file.st_mode & 077) == 0) {
      continue;
    }
    status = TakeAwayOthers(dir, entry->d_name, absl::StrCat(data_dir, "/", entry->d_name),
                            file.st_mode & 07777);
  }
  if (entries != nullptr) closedir(entries);
  close(dir);
  return status;
}

absl::Status CheckAfterUncleanStop(const std::string& data_dir) {
  const std::string marker = data_dir + kRunningMarker;
  const std::string db = data_dir + kDatabase;
  if (Exists(marker) && Exists(db)) {
    spdlog::warn("the last stop of trainctld was not clean: checking {} (quick_check)", db);
    absl::StatusOr<std::string> found = storage::SqliteStore::CheckFile(db, /*full=*/false);
    if (!found.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(db, " cannot be checked after an unclean stop: ", found.status().message(),
                       "; ", storage::RestoreAdvice(db)));
    }
    if (*found != "ok") {
      return absl::FailedPreconditionError(
          absl::StrCat(db, " is damaged (SQLite's quick_check found: ", *found, "); ",
                       storage::RestoreAdvice(db)));
    }
    spdlog::info("{} is sound", db);
  }
  return WriteFileAtomically(marker, absl::StrCat(getpid(), "\n"), kDataFileMode);
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
  std::cout << storage::RestoreAdvice(db) << "\n";
  return 1;
}

}  // namespace trainctl::server
