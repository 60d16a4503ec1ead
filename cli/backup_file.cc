#include "cli/backup_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace trainctl::cli {
namespace {

std::string DirOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return absl::InternalError(absl::StrCat("cannot sync directory ", dir, ": ", strerror(err)));
  }
  close(fd);
  return absl::OkStatus();
}

// Renames `temp` to `path` unless `path` exists: a FILE that appeared while the backup streamed
// is kept.
absl::Status PlaceNew(const std::string& temp, const std::string& path) {
  if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) {
    return absl::OkStatus();
  }
  // A file system without RENAME_NOREPLACE: link() never replaces either.
  if (errno == EINVAL || errno == ENOSYS) {
    if (link(temp.c_str(), path.c_str()) == 0) {
      unlink(temp.c_str());
      return absl::OkStatus();
    }
  }
  if (errno == EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " appeared while the backup was taken: pass --force to replace it"));
  }
  return absl::InternalError(
      absl::StrCat("cannot rename ", temp, " to ", path, ": ", strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<BackupFile>> BackupFile::Create(const std::string& path,
                                                               bool overwrite) {
  if (path.empty()) return absl::InvalidArgumentError("the backup FILE must not be empty");
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (!overwrite) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " exists: pass --force to replace it, or name another FILE"));
    }
    if (!S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(path, " exists and is not a regular file"));
    }
  }
  std::string temp = absl::StrCat(path, ".partial-XXXXXX");
  const int fd = mkostemp(temp.data(), O_CLOEXEC);  // mode 0600
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write the backup in ", DirOf(path), ": ", strerror(errno)));
  }
  // Whatever the umask: the copy holds secrets.
  fchmod(fd, 0600);
  return std::unique_ptr<BackupFile>(new BackupFile(path, std::move(temp), fd, overwrite));
}

BackupFile::BackupFile(std::string path, std::string temp, int fd, bool overwrite)
    : path_(std::move(path)), temp_(std::move(temp)), overwrite_(overwrite), fd_(fd) {}

BackupFile::~BackupFile() {
  if (fd_ >= 0) close(fd_);
  if (!committed_) unlink(temp_.c_str());
}

absl::Status BackupFile::Append(absl::string_view bytes) {
  hash_.Update(bytes);
  while (!bytes.empty()) {
    const ssize_t n = write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("writing ", temp_, ": ", strerror(errno)));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status BackupFile::Commit(int64_t size, const std::string& sha256) {
  const int64_t written = hash_.size();
  digest_ = hash_.HexDigest();
  if (written != size || digest_ != sha256) {
    return absl::DataLossError(absl::StrCat(
        "the backup arrived damaged: trainctld sent ", size, " bytes with sha256 ", sha256, ", ",
        written, " bytes with sha256 ", digest_, " arrived; nothing was written to ", path_));
  }
  if (fsync(fd_) != 0) {
    return absl::InternalError(absl::StrCat("cannot sync ", temp_, ": ", strerror(errno)));
  }
  close(fd_);
  fd_ = -1;
  if (overwrite_) {
    if (rename(temp_.c_str(), path_.c_str()) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot rename ", temp_, " to ", path_, ": ", strerror(errno)));
    }
  } else if (absl::Status placed = PlaceNew(temp_, path_); !placed.ok()) {
    return placed;
  }
  committed_ = true;
  return SyncDir(DirOf(path_));
}

}  // namespace trainctl::cli
