// What `trainctl submit --workdir DIR` ships: the files of DIR that its .trainctlignore
// (common/ignore_rules.h) does not leave behind, checked before anything is uploaded, with
// errors a user can act on:
//   - DIR missing or not a directory;
//   - a file that cannot be read (named, with the system's reason);
//   - more than the cap in all (trainctld's --max-workdir-mb, 100 MiB by default), naming the
//     largest files so the user knows what to add to .trainctlignore.
// Regular files, directories and symbolic links (kept as links, not followed, whatever they point
// at) are shipped; other kinds (sockets, devices, FIFOs) are left out and listed.
//
//   absl::StatusOr<WorkdirManifest> m = ScanWorkdir("./src", 100 << 20);
//   for (const WorkdirEntry& e : m->entries) ... pack e.path ...
//
// Thread-compatible: it reads the file system and keeps nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace trainctl::cli {

struct WorkdirEntry {
  enum class Kind { kFile, kDirectory, kSymlink };
  // Relative to the directory, '/'-separated, sorted (a directory before what it holds).
  std::string path;
  Kind kind = Kind::kFile;
  // Bytes of a file; 0 otherwise.
  int64_t size = 0;
  // The permission bits (an executable train.sh stays executable).
  uint32_t mode = 0;
  // A link's target, as written.
  std::string target;
};

struct WorkdirManifest {
  std::vector<WorkdirEntry> entries;
  // What the files hold in all.
  int64_t total_bytes = 0;
  // Left out by .trainctlignore, and left out because of their kind (paths).
  int64_t ignored = 0;
  std::vector<std::string> skipped_special;
};

// The name of the ignore file, read from the directory's top.
inline constexpr char kIgnoreFile[] = ".trainctlignore";

// Walks `dir`; INVALID_ARGUMENT for a missing directory, an unreadable file or directory, or
// more than `max_bytes` in all (with the 5 largest files and their sizes).
absl::StatusOr<WorkdirManifest> ScanWorkdir(const std::string& dir, int64_t max_bytes);

}  // namespace trainctl::cli
