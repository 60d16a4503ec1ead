// The archive `trainctl submit --workdir DIR` uploads: the entries ScanWorkdir (workdir_scan.h)
// listed, packed as a POSIX tar (pax restricted format, libarchive) and handed to a sink in pieces
// as they are made, so that a large directory is never held in memory. Each agent unpacks it
// (agents/workdir_unpack.h) for the job's replicas.
//
// The archive is deterministic: the same directory contents give the same bytes, and so the same
// digest, whatever the files' times and owners, so that a resubmitted directory can be recognized:
//   - entries in manifest order (sorted, a directory before what it holds);
//   - mtime 0, uid/gid 0, no user or group names, no atime/ctime, xattrs, ACLs or file flags;
//   - modes normalized: directories 0755, files 0755 when any execute bit is set else 0644,
//     symbolic links as links (mode 0777) with their target as scanned;
//   - names stored as their bytes whatever the locale (pax hdrcharset=BINARY where a pax header
//     is needed at all: names over 100 bytes or not ASCII);
//   - written in 64 KiB records, the last one not padded beyond tar's 512-byte blocks.
//
// A file that cannot be read, or whose size changed since the scan (or while it is read), fails
// with INVALID_ARGUMENT naming it; the user can retry. An error of the sink ends the packing and
// is returned as it is. After an error the sink has received part of an archive: drop it.
//
//   absl::StatusOr<WorkdirManifest> m = ScanWorkdir(dir, max_bytes);
//   absl::StatusOr<PackedWorkdir> packed = PackWorkdir(dir, *m, [&](absl::string_view bytes) {
//     return upload.Write(bytes);
//   });
//   // packed->digest: "sha256:<64 hex>" of the bytes the sink received
//
// Thread-compatible: it reads the file system and keeps nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/workdir_scan.h"

namespace trainctl::cli {

struct PackedWorkdir {
  // "sha256:" and the 64 lower-case hex digits of the SHA-256 of every byte given to the sink.
  std::string digest;
  // How many bytes the sink received.
  int64_t size = 0;
  // How many regular files the archive holds (directories and links not counted).
  int64_t files = 0;
};

// Packs `manifest`'s entries, read beneath `dir`, into a tar archive given to `sink` piece by
// piece; as the file comment says.
absl::StatusOr<PackedWorkdir> PackWorkdir(
    const std::string& dir, const WorkdirManifest& manifest,
    const std::function<absl::Status(absl::string_view)>& sink);

}  // namespace trainctl::cli
