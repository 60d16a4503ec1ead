// PackWorkdir (workdir_pack.h): the manifest's entries as a deterministic pax-restricted tar,
// written through libarchive's callbacks to the caller's sink and hashed as the bytes pass.
#include "cli/workdir_pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/os_error.h"
#include "common/sha256.h"
#include "common/status_macros.h"

namespace trainctl::cli {
namespace workdir_pack_internal {

// libarchive's record size: the sink gets pieces of this size (the last one shorter).
constexpr int kRecordBytes = 64 << 10;
// How much of a file is read at a time.
constexpr size_t kReadBytes = 64 << 10;

// What the write callback needs: the sink, the running hash, and the sink's error.
struct PackOutput {
  const std::function<absl::Status(absl::string_view)>* sink = nullptr;
  Sha256 hash;
  absl::Status sink_status;
  // After a failure: every byte libarchive still writes is dropped. libarchive is never told of
  // a failure (archive_write_fail, or a callback's -1): a FATAL archive's free skips its close
  // and leaks the buffers of its filters.
  bool discard = false;
};

la_ssize_t WriteToSink(struct archive* a, void* client, const void* buffer, size_t length) {
  (void)a;
  auto* out = static_cast<PackOutput*>(client);
  if (out->discard) return static_cast<la_ssize_t>(length);
  const absl::string_view bytes(static_cast<const char*>(buffer), length);
  absl::Status s = (*out->sink)(bytes);
  if (!s.ok()) {
    out->sink_status = std::move(s);
    out->discard = true;
    return static_cast<la_ssize_t>(length);
  }
  out->hash.Update(bytes);
  return static_cast<la_ssize_t>(length);
}

struct ArchiveFree {
  void operator()(struct archive* a) const { archive_write_free(a); }
};
struct EntryFree {
  void operator()(struct archive_entry* e) const { archive_entry_free(e); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveFree>;
using EntryPtr = std::unique_ptr<struct archive_entry, EntryFree>;

// The error of a failed libarchive call: the sink's own error when the sink failed, else
// INTERNAL with libarchive's words.
absl::Status ArchiveError(struct archive* a, const PackOutput& out, absl::string_view what) {
  if (!out.sink_status.ok()) return out.sink_status;
  const char* text = archive_error_string(a);
  return absl::InternalError(
      absl::StrCat("packing --workdir: ", what, ": ", text != nullptr ? text : "unknown error"));
}

// A header with every field fixed but the ones given.
EntryPtr NewEntry(const WorkdirEntry& e) {
  EntryPtr entry(archive_entry_new());
  archive_entry_copy_pathname(entry.get(), e.path.c_str());
  archive_entry_set_mtime(entry.get(), 0, 0);
  archive_entry_set_uid(entry.get(), 0);
  archive_entry_set_gid(entry.get(), 0);
  switch (e.kind) {
    case WorkdirEntry::Kind::kDirectory:
      archive_entry_set_filetype(entry.get(), AE_IFDIR);
      archive_entry_set_perm(entry.get(), 0755);
      archive_entry_set_size(entry.get(), 0);
      break;
    case WorkdirEntry::Kind::kSymlink:
      archive_entry_set_filetype(entry.get(), AE_IFLNK);
      archive_entry_set_perm(entry.get(), 0777);
      archive_entry_set_size(entry.get(), 0);
      archive_entry_copy_symlink(entry.get(), e.target.c_str());
      break;
    case WorkdirEntry::Kind::kFile:
      archive_entry_set_filetype(entry.get(), AE_IFREG);
      archive_entry_set_perm(entry.get(), (e.mode & 0111) != 0 ? 0755 : 0644);
      archive_entry_set_size(entry.get(), e.size);
      break;
  }
  return entry;
}

absl::Status WriteHeader(struct archive* a, const PackOutput& out, const WorkdirEntry& e) {
  EntryPtr entry = NewEntry(e);
  // ARCHIVE_WARN: a name that needs a pax header; it is written all the same.
  if (archive_write_header(a, entry.get()) < ARCHIVE_WARN) {
    return ArchiveError(a, out, e.path);
  }
  return absl::OkStatus();
}

// The header and the bytes of the file `e`, which must still hold e.size bytes.
absl::Status WriteFile(struct archive* a, const PackOutput& out, const std::string& dir,
                       const WorkdirEntry& e, std::vector<char>* buffer) {
  const std::string full = dir + "/" + e.path;
  const int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workdir: cannot read ", full, ": ", ErrnoText(errno)));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workdir: cannot read ", full, ": ", ErrnoText(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workdir: ", full, " is no longer a regular file; try again"));
  }
  if (st.st_size != e.size) {
    return absl::InvalidArgumentError(absl::StrCat("--workdir: ", full, " changed while packing (",
                                                   e.size, " bytes, now ", st.st_size,
                                                   "); try again when it is not being written"));
  }
  TC_RETURN_IF_ERROR(WriteHeader(a, out, e));
  int64_t remaining = e.size;
  // One read past the end: a file that grew since its fstat is refused too.
  while (true) {
    const size_t want =
        remaining > 0 ? static_cast<size_t>(std::min<int64_t>(remaining, buffer->size())) : 1;
    const ssize_t n = read(fd, buffer->data(), want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InvalidArgumentError(
          absl::StrCat("--workdir: cannot read ", full, ": ", ErrnoText(errno)));
    }
    if (remaining == 0) {
      if (n == 0) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "--workdir: ", full, " grew while packing; try again when it is not being written"));
    }
    if (n == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--workdir: ", full, " shrank while packing; try again when it is not being written"));
    }
    if (archive_write_data(a, buffer->data(), static_cast<size_t>(n)) != n) {
      return ArchiveError(a, out, e.path);
    }
    remaining -= n;
  }
}

absl::Status WriteEntries(struct archive* a, const PackOutput& out, const std::string& dir,
                          const WorkdirManifest& manifest, int64_t* files) {
  std::vector<char> buffer(kReadBytes);
  for (const WorkdirEntry& e : manifest.entries) {
    if (e.kind == WorkdirEntry::Kind::kFile) {
      TC_RETURN_IF_ERROR(WriteFile(a, out, dir, e, &buffer));
      ++*files;
    } else {
      TC_RETURN_IF_ERROR(WriteHeader(a, out, e));
    }
    if (!out.sink_status.ok()) return out.sink_status;
  }
  if (archive_write_close(a) != ARCHIVE_OK) return ArchiveError(a, out, "finishing the archive");
  return absl::OkStatus();
}

absl::StatusOr<PackedWorkdir> Pack(const std::string& dir, const WorkdirManifest& manifest,
                                   const std::function<absl::Status(absl::string_view)>& sink) {
  PackOutput out;
  out.sink = &sink;
  // Declared after `out`, so freed before it: archive_write_free may still call the callback.
  ArchivePtr a(archive_write_new());
  if (a == nullptr) return absl::ResourceExhaustedError("packing --workdir: out of memory");
  if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_set_format_option(a.get(), "pax", "hdrcharset", "BINARY") != ARCHIVE_OK ||
      archive_write_add_filter_none(a.get()) != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(a.get(), kRecordBytes) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(a.get(), 1) != ARCHIVE_OK) {
    return ArchiveError(a.get(), out, "setting up the archive");
  }
  if (archive_write_open(a.get(), &out, nullptr, WriteToSink, nullptr) != ARCHIVE_OK) {
    return ArchiveError(a.get(), out, "starting the archive");
  }
  int64_t files = 0;
  absl::Status written = WriteEntries(a.get(), out, dir, manifest, &files);
  // A sink that failed on the last block is known only once the archive is closed.
  if (written.ok() && !out.sink_status.ok()) written = out.sink_status;
  if (!written.ok()) {
    // Nothing more for the sink: no end-of-archive blocks after a failure.
    out.discard = true;
    return written;
  }
  PackedWorkdir packed;
  packed.size = out.hash.size();
  packed.digest = absl::StrCat("sha256:", out.hash.HexDigest());
  packed.files = files;
  return packed;
}

}  // namespace workdir_pack_internal

absl::StatusOr<PackedWorkdir> PackWorkdir(
    const std::string& dir, const WorkdirManifest& manifest,
    const std::function<absl::Status(absl::string_view)>& sink) {
  return workdir_pack_internal::Pack(dir, manifest, sink);
}

}  // namespace trainctl::cli
