// Unpacking a job's working directory (`trainctl submit --workdir`, packed by cli/workdir_pack.h)
// on the agent, read-only, for the job's replicas; and removing such a tree when the job is
// forgotten.
//
// The archive comes from a user, and the agent usually runs as root, so the unpacking trusts
// nothing in it. Refused with INVALID_ARGUMENT naming the entry:
//   - absolute names ("/etc/x") and any ".." component;
//   - hard links, devices, FIFOs, sockets, sparse files: only regular files, directories and
//     symbolic links are written;
//   - anything that would be written through a symbolic link ("link -> /tmp", then "link/file"),
//     or over a file or link written before (a name given twice; a directory may be);
//   - names of more than 4095 bytes or 256 components, or with a component over 255 bytes.
// Symbolic links in the tree are kept as links, whatever they point at: the replicas follow them
// with their own rights. Owners, times, ACLs, xattrs and file flags are not restored.
// libarchive only reads the archive (tar: pax, ustar, GNU); the entries are written here, beneath
// a descriptor of the new directory (mkdirat, openat with O_NOFOLLOW | O_EXCL, symlinkat), not
// with archive_write_disk, which sets the process's umask to 0 for a moment on every entry and
// resolves names against the working directory, both shared with the agent's other threads.
//
// The tree appears whole or not at all: it is unpacked into a temporary sibling
// (dest_dir + ".tmp-XXXXXX"), made read-only, then renamed into place (never over an existing
// dest_dir); on any error the temporary is removed. dest_dir must not exist (ALREADY_EXISTS), its
// parent must (INTERNAL otherwise, like any failed system call, naming the path).
//
// Modes afterwards, the top directory included:
//   group set (the agent runs as root; replicas run with that gid): every entry is chowned to
//     (geteuid(), *group) (links with lchown), directories 0750, files 0640, 0750 when executable;
//   no group: directories 0555, files 0444, 0555 when executable.
// "Executable": the archive gave the file any execute bit.
//
//   absl::StatusOr<UnpackedWorkdir> tree = UnpackWorkdir(archive, "/var/lib/trainctl/wd/j-1", gid);
//   ...
//   TC_RETURN_IF_ERROR(RemoveWorkdirTree("/var/lib/trainctl/wd/j-1"));
//
// Thread-safe: it keeps no state and changes nothing process-wide (umask, working directory).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainctl::agent {

struct UnpackedWorkdir {
  // Regular files in the tree, and the bytes they hold.
  int64_t files = 0;
  int64_t bytes = 0;
};

// Unpacks the tar archive at `archive_path` into `dest_dir`, as the file comment says. An archive
// that cannot be read as tar (corrupt, truncated) is INVALID_ARGUMENT.
absl::StatusOr<UnpackedWorkdir> UnpackWorkdir(const std::string& archive_path,
                                              const std::string& dest_dir,
                                              std::optional<gid_t> group);

// Deletes the tree at `dir` (an unpacked workdir, read-only): gives each directory back its write
// permission before emptying it, and never follows a symbolic link, neither at `dir` nor beneath
// it (a link is removed, not what it names). OK when `dir` does not exist; INVALID_ARGUMENT when
// it is not a directory (a link included: left alone); INTERNAL naming what could not be removed.
absl::Status RemoveWorkdirTree(const std::string& dir);

}  // namespace trainctl::agent
