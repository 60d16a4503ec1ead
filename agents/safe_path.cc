// Directories opened beneath a trusted root without following symbolic links (safe_path.h).
#include "agents/safe_path.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agents/run_files.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

// Set once openat2 answered ENOSYS (a kernel before 5.6): the walk alone is used from then on.
std::atomic<bool> no_openat2{false};

absl::Status BeneathError(absl::string_view what, absl::string_view path, int error) {
  return absl::InternalError(absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(error)));
}

// `path`'s components, without empty ones and ".". INTERNAL for "..".
absl::StatusOr<std::vector<std::string>> Components(absl::string_view path) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      return absl::InternalError(absl::StrCat("path ", path, " holds \"..\""));
    }
    out.emplace_back(part);
  }
  return out;
}

std::string JoinedPath(absl::string_view dir, absl::string_view name) {
  return absl::StrCat(dir, dir.empty() || dir.back() != '/' ? "/" : "", name);
}

// openat2(dir, relative, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): -1 with errno on failure.
int OpenAt2Beneath(int dir, const std::string& relative) {
  if (no_openat2.load(std::memory_order_relaxed)) {
    errno = ENOSYS;
    return -1;
  }
  struct open_how how {};
  how.flags = kDirFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const long fd = syscall(SYS_openat2, dir, relative.c_str(), &how, sizeof(how));
  if (fd < 0 && errno == ENOSYS) no_openat2.store(true, std::memory_order_relaxed);
  return static_cast<int>(fd);
}

absl::StatusOr<UniqueFd> OpenRoot(const std::string& root, bool create) {
  UniqueFd fd(open(root.c_str(), kDirFlags));
  if (fd.get() < 0 && errno == ENOENT && create) {
    TC_RETURN_IF_ERROR(MakeDirs(root));
    fd = UniqueFd(open(root.c_str(), kDirFlags));
  }
  if (fd.get() < 0) return BeneathError("open", root, errno);
  return fd;
}

// Component `name` of `dir`, which openat refused as a link or a non-directory: followed when it
// is a link `options` accepts; else the user's error.
absl::StatusOr<UniqueFd> OpenOddComponent(int dir, const std::string& name, const std::string& path,
                                          const std::string& root, const BeneathOptions& options) {
  // The link itself: its owner and its text are read from one inode, so a link swapped in
  // between cannot be followed on another's credit.
  UniqueFd link(openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (link.get() < 0 || fstat(link.get(), &st) != 0) return BeneathError("open", path, errno);
  if (!S_ISLNK(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" is not a directory"));
  }
  if (!options.follow_link) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", name, "\" is a symbolic link; trainctl follows none beneath ",
                     options.root_label, options.root_label.empty() ? "" : " ", root));
  }
  TC_RETURN_IF_ERROR(options.follow_link(name, st));
  char target[4096];
  const ssize_t n = readlinkat(link.get(), "", target, sizeof(target) - 1);
  if (n < 0) return BeneathError("read the link", path, errno);
  target[n] = '\0';
  UniqueFd fd(openat(dir, target, kDirFlags));
  if (fd.get() < 0) {
    return BeneathError("open", absl::StrCat(path, " (a link to ", target, ")"), errno);
  }
  return fd;
}

}  // namespace

absl::StatusOr<UniqueFd> OpenDirBeneath(const std::string& root, absl::string_view relative,
                                        const BeneathOptions& options) {
  TC_ASSIGN_OR_RETURN(std::vector<std::string> parts, Components(relative));
  TC_ASSIGN_OR_RETURN(UniqueFd dir, OpenRoot(root, options.create));
  if (parts.empty()) return dir;
  if (!options.follow_link) {
    // One call for a path that exists; the walk below creates and names what is wrong.
    UniqueFd fast(OpenAt2Beneath(dir.get(), absl::StrJoin(parts, "/")));
    if (fast.get() >= 0) return fast;
  }
  std::string path = root;
  for (const std::string& name : parts) {
    path = JoinedPath(path, name);
    UniqueFd next(openat(dir.get(), name.c_str(), kDirFlags | O_NOFOLLOW));
    if (next.get() < 0 && errno == ENOENT && options.create) {
      if (mkdirat(dir.get(), name.c_str(), options.create_mode) != 0 && errno != EEXIST) {
        return BeneathError("create", path, errno);
      }
      next = UniqueFd(openat(dir.get(), name.c_str(), kDirFlags | O_NOFOLLOW));
    }
    if (next.get() < 0 && (errno == ENOTDIR || errno == ELOOP)) {
      TC_ASSIGN_OR_RETURN(next, OpenOddComponent(dir.get(), name, path, root, options));
    }
    if (next.get() < 0) return BeneathError("open", path, errno);
    dir = std::move(next);
  }
  return dir;
}

absl::StatusOr<UniqueFd> OpenOwnedByRoot(const std::string& path, const BeneathOptions& options) {
  BeneathOptions owned = options;
  const uid_t agent_uid = geteuid();
  owned.follow_link = [agent_uid](absl::string_view name, const struct stat& link) {
    if (link.st_uid == 0 || link.st_uid == agent_uid) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", name, "\" is a symbolic link owned by uid ", link.st_uid,
        "; with no allowed root from trainctld (older than this agent), trainctl follows only "
        "links owned by root"));
  };
  return OpenDirBeneath("/", path, owned);
}

absl::StatusOr<std::string> PathBeneath(absl::string_view root, absl::string_view path) {
  TC_ASSIGN_OR_RETURN(std::vector<std::string> root_parts, Components(root));
  TC_ASSIGN_OR_RETURN(std::vector<std::string> parts, Components(path));
  if (parts.size() <= root_parts.size() ||
      !std::equal(root_parts.begin(), root_parts.end(), parts.begin())) {
    return absl::InternalError(absl::StrCat(path, " is not under ", root));
  }
  return absl::StrJoin(parts.begin() + static_cast<std::ptrdiff_t>(root_parts.size()), parts.end(),
                       "/");
}

absl::Status ChownFd(int fd, const std::string& what, uid_t uid, gid_t gid,
                     const std::string& user) {
  if (fchown(fd, uid, gid) == 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("cannot give ", what, " to user ", user, ": ", std::strerror(errno)));
}

absl::Status ChmodFd(int fd, const std::string& what, mode_t mode) {
  if (fchmod(fd, mode) == 0) return absl::OkStatus();
  return BeneathError("chmod", what, errno);
}

}  // namespace trainctl::agent
