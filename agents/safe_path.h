// Opening and creating directories on a job's behalf without following symbolic links that a
// replica could have planted.
//
// The agent often runs as root and creates directories that replicas own afterwards (their
// working and checkpoint directories). A replica can put a symbolic link wherever it may write; if
// the agent followed one while creating or chowning a later path, it would hand a directory of
// the host (/etc, /etc/cron.d) to the replica's user. So the agent opens a trusted root as any
// path (an operator's root may itself be a link, e.g. to NFS), then resolves only the part beneath
// it, one component at a time relative to the directory opened before (openat2 with
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has it, else openat with O_NOFOLLOW),
// creates missing components with mkdirat, and changes owners and modes only through the opened
// descriptor (fchown, fchmod).
//
// Contract:
//   - `relative` is split at '/'; empty components are skipped; "." and ".." are refused
//     (INTERNAL: callers build these paths from checked parts).
//   - A symbolic link beneath the root fails with INVALID_ARGUMENT naming it:
//       "esc" is a symbolic link; trainctl follows none beneath /ckpt/teama
//     unless `follow_link` accepts it (only for callers that must follow an operator's links,
//     see OpenOwnedByRoot). A component that is not a directory fails with INVALID_ARGUMENT too.
//   - Any other failure is INTERNAL and names the path.
//   - Components it creates get mode `create_mode` (less the umask) and the caller's owner.
//
// Usage:
//   absl::StatusOr<UniqueFd> dir = OpenDirBeneath("/ckpt/teama", "run-1/step", {});
//   if (!dir.ok()) return dir.status();
//   if (fchown(dir->get(), uid, gid) != 0) ...
//
// Thread-safe: keeps no state but a flag that openat2 is missing.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agents/unique_fd.h"

namespace trainctl::agent {

struct BeneathOptions {
  // Create missing components (and the root itself, following links, like mkdir -p).
  bool create = true;
  mode_t create_mode = 0755;
  // What the root is, for messages: "the allowed root" gives "... beneath the allowed root /ckpt".
  std::string root_label;
  // Decides whether a symbolic link beneath the root (its lstat) is followed; null: none is. A
  // link it accepts is opened through its own text (readlinkat of the link itself), which is
  // resolved normally; the walk goes on beneath what it names.
  std::function<absl::Status(absl::string_view name, const struct stat& link)> follow_link;
};

// Opens the directory `root`/`relative` (O_DIRECTORY, close-on-exec) as the file comment says.
absl::StatusOr<UniqueFd> OpenDirBeneath(const std::string& root, absl::string_view relative,
                                        const BeneathOptions& options);

// For a path with no trusted root (a launch from a trainctld older than this agent): walks
// `path` from "/" and follows only symbolic links owned by root or by the agent's own user,
// which a replica running as another user cannot have made. Else as OpenDirBeneath.
absl::StatusOr<UniqueFd> OpenOwnedByRoot(const std::string& path, const BeneathOptions& options);

// `path` lexically beneath `root`: the components after root's, joined by '/'. Empty components
// and "." are ignored on both sides. INTERNAL when `path` is not strictly under `root` or either
// holds "..".
//   PathBeneath("/ckpt/teama/", "/ckpt//teama/run/./x") == "run/x"
absl::StatusOr<std::string> PathBeneath(absl::string_view root, absl::string_view path);

// fchown(fd, uid, gid); INTERNAL naming `what` and `user` on failure.
absl::Status ChownFd(int fd, const std::string& what, uid_t uid, gid_t gid,
                     const std::string& user);

// fchmod(fd, mode), which no umask narrows; INTERNAL naming `what` on failure.
absl::Status ChmodFd(int fd, const std::string& what, mode_t mode);

}  // namespace trainctl::agent
