// UnpackWorkdir and RemoveWorkdirTree (workdir_unpack.h): libarchive reads the tar; each entry is
// checked, then written beneath the temporary directory's descriptor, one component at a time.
#include "agents/workdir_unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agents/unique_fd.h"
#include "common/os_error.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace workdir_unpack_internal {

constexpr size_t kMaxNameBytes = 4095;
constexpr size_t kMaxComponents = 256;
constexpr size_t kReadBlockBytes = 64 << 10;
// A directory opened to work beneath it: never through a symbolic link.
constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

absl::Status SysError(const std::string& what, int error) {
  return absl::InternalError(absl::StrCat(what, ": ", ErrnoText(error)));
}

// What the unpacking of one archive works with.
struct UnpackTarget {
  std::string archive;  // the archive's path, for messages
  std::string tmp;      // the temporary directory being filled
  int root_fd = -1;     // tmp, opened
};

absl::Status Refused(const UnpackTarget& t, const std::string& entry, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("workdir archive ", t.archive, ": entry \"", entry, "\" ", why));
}

absl::Status Unreadable(const UnpackTarget& t, struct archive* in) {
  const char* text = archive_error_string(in);
  return absl::InvalidArgumentError(
      absl::StrCat("workdir archive ", t.archive,
                   " cannot be read as tar: ", text != nullptr ? text : "unknown error"));
}

struct ReadFree {
  void operator()(struct archive* a) const { archive_read_free(a); }
};

// The names in the directory `dir_fd` ("." and ".." left out).
absl::StatusOr<std::vector<std::string>> ListDir(int dir_fd, const std::string& path) {
  const int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SysError("open " + path, errno);
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    const int error = errno;
    close(fd);
    return SysError("read " + path, error);
  }
  std::vector<std::string> names;
  int error = 0;
  while (true) {
    errno = 0;
    const dirent* e = readdir(d);
    if (e == nullptr) {
      error = errno;
      break;
    }
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  if (error != 0) return SysError("read " + path, error);
  return names;
}

// The components of the entry `name` ("." and empty ones left out), or why it is refused.
absl::StatusOr<std::vector<std::string>> EntryComponents(const UnpackTarget& t,
                                                         const std::string& name) {
  if (!name.empty() && name[0] == '/') return Refused(t, name, "is an absolute path");
  if (name.size() > kMaxNameBytes) {
    return Refused(t, name, absl::StrCat("is longer than ", kMaxNameBytes, " bytes"));
  }
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") return Refused(t, name, "has a \"..\" component");
    if (part.size() > NAME_MAX) {
      return Refused(t, name, absl::StrCat("has a component longer than ", NAME_MAX, " bytes"));
    }
    parts.emplace_back(part);
  }
  if (parts.size() > kMaxComponents) {
    return Refused(t, name, absl::StrCat("has more than ", kMaxComponents, " components"));
  }
  return parts;
}

// The directory that holds the entry `parts` (all its components but the last), opened beneath
// the root; missing directories are made (0700, like tar makes them). A symbolic link or a
// non-directory on the way is refused.
absl::StatusOr<UniqueFd> OpenParent(const UnpackTarget& t, const std::vector<std::string>& parts,
                                    const std::string& name) {
  UniqueFd dir(fcntl(t.root_fd, F_DUPFD_CLOEXEC, 0));
  if (dir.get() < 0) return SysError("dup " + t.tmp, errno);
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const char* part = parts[i].c_str();
    walked = walked.empty() ? parts[i] : absl::StrCat(walked, "/", parts[i]);
    UniqueFd next(openat(dir.get(), part, kDirFlags));
    if (next.get() < 0 && errno == ENOENT) {
      if (mkdirat(dir.get(), part, 0700) != 0 && errno != EEXIST) {
        return SysError(absl::StrCat("mkdir ", t.tmp, "/", walked), errno);
      }
      next = UniqueFd(openat(dir.get(), part, kDirFlags));
    }
    if (next.get() < 0) {
      const int error = errno;
      struct stat st;
      if (fstatat(dir.get(), part, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) {
          return Refused(
              t, name, absl::StrCat("would be written through the symbolic link \"", walked, "\""));
        }
        if (!S_ISDIR(st.st_mode)) {
          return Refused(
              t, name,
              absl::StrCat("would be written beneath \"", walked, "\", which is not a directory"));
        }
      }
      return SysError(absl::StrCat("open ", t.tmp, "/", walked), error);
    }
    dir = std::move(next);
  }
  return dir;
}

// The data of the current entry into `fd`. Holes (a sparse file) are refused.
absl::Status CopyData(const UnpackTarget& t, struct archive* in, int fd, const std::string& name,
                      const std::string& where) {
  int64_t written = 0;
  while (true) {
    const void* block = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    const int r = archive_read_data_block(in, &block, &size, &offset);
    if (r == ARCHIVE_EOF) return absl::OkStatus();
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Unreadable(t, in);
    if (offset != written) return Refused(t, name, "has holes (a sparse file)");
    const char* p = static_cast<const char*>(block);
    size_t left = size;
    while (left > 0) {
      const ssize_t n = write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return SysError("write " + where, errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    written += static_cast<int64_t>(size);
  }
}

// Checks the current entry and writes it beneath the root, as workdir_unpack.h says.
absl::Status WriteEntry(const UnpackTarget& t, struct archive* in, struct archive_entry* entry) {
  const char* raw_name = archive_entry_pathname(entry);
  if (raw_name == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("workdir archive ", t.archive, ": an entry's name cannot be read"));
  }
  const std::string name = raw_name;
  if (archive_entry_hardlink(entry) != nullptr) return Refused(t, name, "is a hard link");
  const mode_t type = archive_entry_filetype(entry);
  if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
    return Refused(t, name,
                   "is a device, FIFO or socket; only files, directories and symbolic links "
                   "are unpacked");
  }
  if (archive_entry_sparse_count(entry) > 0) return Refused(t, name, "is a sparse file");
  TC_ASSIGN_OR_RETURN(const std::vector<std::string> parts, EntryComponents(t, name));
  if (parts.empty()) {
    if (type == AE_IFDIR) return absl::OkStatus();  // "./": the top directory itself
    return Refused(t, name, "names the top directory");
  }
  TC_ASSIGN_OR_RETURN(UniqueFd parent, OpenParent(t, parts, name));
  const char* last = parts.back().c_str();
  const std::string where = absl::StrCat(t.tmp, "/", absl::StrJoin(parts, "/"));
  if (type == AE_IFDIR) {
    if (mkdirat(parent.get(), last, 0700) == 0) return absl::OkStatus();
    const int error = errno;
    struct stat st;
    if (error == EEXIST) {
      // Made already for an entry beneath it: fine; anything else there: a name given twice.
      if (fstatat(parent.get(), last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
        return absl::OkStatus();
      }
      return Refused(t, name, "is given twice");
    }
    return SysError("mkdir " + where, error);
  }
  if (type == AE_IFLNK) {
    const char* target = archive_entry_symlink(entry);
    if (target == nullptr || *target == '\0') {
      return Refused(t, name, "is a symbolic link with no target");
    }
    if (symlinkat(target, parent.get(), last) == 0) return absl::OkStatus();
    if (errno == EEXIST) return Refused(t, name, "is given twice");
    return SysError("symlink " + where, errno);
  }
  // Private until the tree is finished: 0700 / 0600, the owner's execute bit kept.
  const mode_t mode = (archive_entry_perm(entry) & 0111) != 0 ? 0700 : 0600;
  UniqueFd out(
      openat(parent.get(), last, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (out.get() < 0) {
    if (errno == EEXIST) return Refused(t, name, "is given twice");
    return SysError("create " + where, errno);
  }
  TC_RETURN_IF_ERROR(CopyData(t, in, out.get(), name, where));
  if (close(out.release()) != 0) return SysError("write " + where, errno);
  return absl::OkStatus();
}

absl::Status Extract(const UnpackTarget& t) {
  // Opened here, so that only what libarchive makes of the bytes is the archive's fault. Closed
  // after `in` is freed.
  UniqueFd fd(open(t.archive.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return SysError("open workdir archive " + t.archive, errno);
  std::unique_ptr<struct archive, ReadFree> in(archive_read_new());
  if (in == nullptr) return absl::ResourceExhaustedError("unpacking a workdir: out of memory");
  if (archive_read_support_format_tar(in.get()) != ARCHIVE_OK ||
      archive_read_open_fd(in.get(), fd.get(), kReadBlockBytes) != ARCHIVE_OK) {
    return Unreadable(t, in.get());
  }
  while (true) {
    struct archive_entry* entry = nullptr;
    const int r = archive_read_next_header(in.get(), &entry);
    if (r == ARCHIVE_EOF) return absl::OkStatus();
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Unreadable(t, in.get());
    TC_RETURN_IF_ERROR(WriteEntry(t, in.get(), entry));
  }
}

// The owner and modes of the finished tree.
struct FinalModes {
  std::optional<gid_t> group;
  uid_t uid = 0;
  mode_t dir = 0;
  mode_t file = 0;
  mode_t exec = 0;
};

FinalModes ModesFor(std::optional<gid_t> group) {
  FinalModes m;
  m.group = group;
  m.uid = geteuid();
  m.dir = group ? 0750 : 0555;
  m.file = group ? 0640 : 0444;
  m.exec = group ? 0750 : 0555;
  return m;
}

// Gives everything beneath `dir_fd` its final owner and mode (a directory after what it holds),
// and counts the files. The tree is private (the temporary directory is 0700) and holds nothing
// but what WriteEntry made, so a name checked with fstatat is still what it was.
absl::Status Finish(int dir_fd, const std::string& path, const FinalModes& m,
                    UnpackedWorkdir* tally) {
  TC_ASSIGN_OR_RETURN(const std::vector<std::string> names, ListDir(dir_fd, path));
  for (const std::string& name : names) {
    const std::string child = absl::StrCat(path, "/", name);
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return SysError("stat " + child, errno);
    }
    if (m.group && fchownat(dir_fd, name.c_str(), m.uid, *m.group, AT_SYMLINK_NOFOLLOW) != 0) {
      return SysError(absl::StrCat("chown ", child, " to ", m.uid, ":", *m.group), errno);
    }
    if (S_ISLNK(st.st_mode)) continue;
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub(openat(dir_fd, name.c_str(), kDirFlags));
      if (sub.get() < 0) return SysError("open " + child, errno);
      TC_RETURN_IF_ERROR(Finish(sub.get(), child, m, tally));
      if (fchmod(sub.get(), m.dir) != 0) return SysError("chmod " + child, errno);
    } else if (S_ISREG(st.st_mode)) {
      ++tally->files;
      tally->bytes += st.st_size;
      const mode_t mode = (st.st_mode & S_IXUSR) != 0 ? m.exec : m.file;
      if (fchmodat(dir_fd, name.c_str(), mode, 0) != 0) return SysError("chmod " + child, errno);
    } else {
      return absl::InternalError(absl::StrCat(child, " is not a file, directory or link"));
    }
  }
  return absl::OkStatus();
}

// Moves the finished tree into place, never over an existing `dest`.
absl::Status RenameIntoPlace(const std::string& tmp, const std::string& dest) {
  if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) == 0) {
    return absl::OkStatus();
  }
  int error = errno;
  if (error == EINVAL || error == ENOSYS) {
    // A file system without RENAME_NOREPLACE (some network ones): check, then rename.
    struct stat st;
    if (lstat(dest.c_str(), &st) == 0) {
      error = EEXIST;
    } else if (rename(tmp.c_str(), dest.c_str()) == 0) {
      return absl::OkStatus();
    } else {
      error = errno;
    }
  }
  if (error == EEXIST || error == ENOTEMPTY) {
    return absl::AlreadyExistsError(absl::StrCat("unpacking a workdir: ", dest, " already exists"));
  }
  return SysError(absl::StrCat("rename ", tmp, " to ", dest), error);
}

absl::StatusOr<UnpackedWorkdir> UnpackInto(const std::string& archive_path, const std::string& tmp,
                                           const std::string& dest, std::optional<gid_t> group) {
  UniqueFd root(open(tmp.c_str(), kDirFlags));
  if (root.get() < 0) return SysError("open " + tmp, errno);
  UnpackTarget t;
  t.archive = archive_path;
  t.tmp = tmp;
  t.root_fd = root.get();
  TC_RETURN_IF_ERROR(Extract(t));
  const FinalModes m = ModesFor(group);
  UnpackedWorkdir tally;
  TC_RETURN_IF_ERROR(Finish(root.get(), tmp, m, &tally));
  if (m.group && fchown(root.get(), m.uid, *m.group) != 0) {
    return SysError(absl::StrCat("chown ", tmp, " to ", m.uid, ":", *m.group), errno);
  }
  if (fchmod(root.get(), m.dir) != 0) return SysError("chmod " + tmp, errno);
  root.reset();
  TC_RETURN_IF_ERROR(RenameIntoPlace(tmp, dest));
  return tally;
}

// Opens the directory `name` (beneath `at`) to empty it, and gives it back its owner's rights
// (read to list it, write to remove from it). Never through a symbolic link.
absl::StatusOr<UniqueFd> OpenForRemoval(int at, const std::string& name, const std::string& path) {
  UniqueFd fd(openat(at, name.c_str(), kDirFlags));
  if (fd.get() < 0 && errno == EACCES) {
    // A directory without read permission: AT_SYMLINK_NOFOLLOW changes no link's target.
    if (fchmodat(at, name.c_str(), 0700, AT_SYMLINK_NOFOLLOW) == 0) {
      fd = UniqueFd(openat(at, name.c_str(), kDirFlags));
    } else {
      errno = EACCES;
    }
  }
  if (fd.get() < 0) return SysError("open " + path, errno);
  // An error here shows up as the failure to remove what it holds.
  (void)fchmod(fd.get(), 0700);
  return fd;
}

absl::Status RemoveContents(int dir_fd, const std::string& path) {
  TC_ASSIGN_OR_RETURN(const std::vector<std::string> names, ListDir(dir_fd, path));
  for (const std::string& name : names) {
    const std::string child = absl::StrCat(path, "/", name);
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return SysError("stat " + child, errno);
    }
    if (S_ISDIR(st.st_mode)) {
      TC_ASSIGN_OR_RETURN(UniqueFd sub, OpenForRemoval(dir_fd, name, child));
      TC_RETURN_IF_ERROR(RemoveContents(sub.get(), child));
      sub.reset();
      if (unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return SysError("rmdir " + child, errno);
      }
    } else if (unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      return SysError("remove " + child, errno);
    }
  }
  return absl::OkStatus();
}

}  // namespace workdir_unpack_internal

absl::StatusOr<UnpackedWorkdir> UnpackWorkdir(const std::string& archive_path,
                                              const std::string& dest_dir,
                                              std::optional<gid_t> group) {
  std::string dest = dest_dir;
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  if (dest.empty() || dest == "/") {
    return absl::InvalidArgumentError(
        absl::StrCat("unpacking a workdir into \"", dest_dir, "\": not a directory to create"));
  }
  struct stat st;
  if (lstat(dest.c_str(), &st) == 0) {
    return absl::AlreadyExistsError(absl::StrCat("unpacking a workdir: ", dest, " already exists"));
  }
  if (errno != ENOENT) return workdir_unpack_internal::SysError("stat " + dest, errno);
  std::string tmp = dest + ".tmp-XXXXXX";
  if (mkdtemp(tmp.data()) == nullptr) {
    return workdir_unpack_internal::SysError("create the directory " + tmp, errno);
  }
  absl::StatusOr<UnpackedWorkdir> result =
      workdir_unpack_internal::UnpackInto(archive_path, tmp, dest, group);
  if (!result.ok()) {
    if (absl::Status removed = RemoveWorkdirTree(tmp); !removed.ok()) {
      return absl::Status(result.status().code(), absl::StrCat(result.status().message(),
                                                               "; and removing what was "
                                                               "unpacked failed: ",
                                                               removed.message()));
    }
  }
  return result;
}

absl::Status RemoveWorkdirTree(const std::string& dir) {
  using workdir_unpack_internal::SysError;
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return SysError("stat " + dir, errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("removing the workdir ", dir, ": not a directory; left alone"));
  }
  {
    TC_ASSIGN_OR_RETURN(UniqueFd top, workdir_unpack_internal::OpenForRemoval(AT_FDCWD, dir, dir));
    TC_RETURN_IF_ERROR(workdir_unpack_internal::RemoveContents(top.get(), dir));
  }
  if (rmdir(dir.c_str()) != 0 && errno != ENOENT) return SysError("rmdir " + dir, errno);
  return absl::OkStatus();
}

}  // namespace trainctl::agent
