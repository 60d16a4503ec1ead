// PackWorkdir (cli/workdir_pack.h): the archive `submit --workdir` uploads. The same contents give
// the same bytes whatever the times; the digest is the SHA-256 of what the sink received; modes
// are normalized and links kept (read back with libarchive); files that change between the scan
// and the pack, and a failing sink, end it with an error.
#include "cli/workdir_pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/sha256.h"
#include "tests/storage/temp_dir.h"

namespace trainctl::cli {
namespace workdir_pack_test {

void WriteFile(const std::string& dir, const std::string& rel, const std::string& content,
               mode_t mode) {
  const std::string full = dir + "/" + rel;
  std::filesystem::create_directories(std::filesystem::path(full).parent_path());
  std::ofstream(full) << content;
  REQUIRE(chmod(full.c_str(), mode) == 0);
}

// Sets the times of everything in `dir` (links themselves included) to `seconds`.
void SetTimes(const std::string& dir, time_t seconds) {
  const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    REQUIRE(utimensat(AT_FDCWD, e.path().c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
  }
}

// A small tree: an executable script, a private file, a private directory, a link, a long name
// and one that is not ASCII.
void MakeTree(const std::string& dir) {
  WriteFile(dir, "train.sh", "#!/bin/sh\necho train\n", 0700);
  WriteFile(dir, "secret.txt", "private\n", 0600);
  WriteFile(dir, "src/model.py", "x = 1\n", 0664);
  REQUIRE(chmod((dir + "/src").c_str(), 0700) == 0);
  WriteFile(dir, std::string(120, 'n') + "/" + std::string(90, 'm') + ".txt", "long\n", 0644);
  WriteFile(dir, "caf\xc3\xa9.txt", "unicode\n", 0644);
  REQUIRE(symlink("src/model.py", (dir + "/model.py").c_str()) == 0);
}

struct Packed {
  absl::StatusOr<PackedWorkdir> result;
  std::string bytes;
  std::vector<size_t> pieces;
};

Packed Pack(const std::string& dir) {
  absl::StatusOr<WorkdirManifest> manifest = ScanWorkdir(dir, 1 << 30);
  REQUIRE(manifest.ok());
  Packed out;
  out.result = PackWorkdir(dir, *manifest, [&out](absl::string_view piece) {
    out.bytes.append(piece.data(), piece.size());
    out.pieces.push_back(piece.size());
    return absl::OkStatus();
  });
  return out;
}

struct ReadEntry {
  mode_t type = 0;
  mode_t perm = 0;
  int64_t mtime = -1;
  int64_t uid = -1;
  int64_t gid = -1;
  bool has_uname = false;
  std::string link;
  std::string content;
};

// The archive's entries by name, read back with libarchive.
std::map<std::string, ReadEntry> ReadBack(const std::string& bytes) {
  struct archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  REQUIRE(archive_read_open_memory(a, bytes.data(), bytes.size()) == ARCHIVE_OK);
  std::map<std::string, ReadEntry> entries;
  struct archive_entry* entry = nullptr;
  while (archive_read_next_header(a, &entry) == ARCHIVE_OK) {
    ReadEntry e;
    e.type = archive_entry_filetype(entry);
    e.perm = archive_entry_perm(entry);
    e.mtime = archive_entry_mtime(entry);
    e.uid = archive_entry_uid(entry);
    e.gid = archive_entry_gid(entry);
    for (const char* name : {archive_entry_uname(entry), archive_entry_gname(entry)}) {
      if (name != nullptr && *name != '\0') e.has_uname = true;
    }
    if (archive_entry_symlink(entry) != nullptr) e.link = archive_entry_symlink(entry);
    char buffer[4096];
    la_ssize_t n;
    while ((n = archive_read_data(a, buffer, sizeof(buffer))) > 0) e.content.append(buffer, n);
    std::string name = archive_entry_pathname(entry);
    if (!name.empty() && name.back() == '/') name.pop_back();  // a directory's, as tar writes it
    entries[name] = e;
  }
  archive_read_free(a);
  return entries;
}

TEST_CASE("workdir pack: the same contents give the same bytes and digest", "[workdir]") {
  storage::TempDir one, two;
  MakeTree(one.path);
  MakeTree(two.path);
  SetTimes(one.path, 1000000000);
  SetTimes(two.path, 1700000000);
  Packed a = Pack(one.path);
  Packed b = Pack(two.path);
  REQUIRE(a.result.ok());
  REQUIRE(b.result.ok());
  CHECK(a.bytes == b.bytes);
  CHECK(a.result->digest == b.result->digest);
  CHECK(a.result->digest == "sha256:" + Sha256Hex(a.bytes));
  CHECK(a.result->digest.size() == 7 + 64);
  CHECK(a.result->size == static_cast<int64_t>(a.bytes.size()));
  CHECK(a.result->size % 512 == 0);
  CHECK(a.result->files == 5);

  // Different contents: a different digest.
  WriteFile(two.path, "src/model.py", "x = 2\n", 0664);
  Packed c = Pack(two.path);
  REQUIRE(c.result.ok());
  CHECK(c.result->digest != a.result->digest);
}

TEST_CASE("workdir pack: modes normalized, owners and times left out, links kept", "[workdir]") {
  storage::TempDir d;
  MakeTree(d.path);
  Packed p = Pack(d.path);
  REQUIRE(p.result.ok());
  std::map<std::string, ReadEntry> entries = ReadBack(p.bytes);
  REQUIRE(entries.size() == 8);
  REQUIRE(entries.count("train.sh") == 1);
  CHECK(entries["train.sh"].type == AE_IFREG);
  CHECK(entries["train.sh"].perm == 0755);
  CHECK(entries["train.sh"].content == "#!/bin/sh\necho train\n");
  CHECK(entries["secret.txt"].perm == 0644);
  CHECK(entries["src/model.py"].perm == 0644);
  REQUIRE(entries.count("src") == 1);
  CHECK(entries["src"].type == AE_IFDIR);
  CHECK(entries["src"].perm == 0755);
  REQUIRE(entries.count("model.py") == 1);
  CHECK(entries["model.py"].type == AE_IFLNK);
  CHECK(entries["model.py"].link == "src/model.py");
  const std::string long_name = std::string(120, 'n') + "/" + std::string(90, 'm') + ".txt";
  REQUIRE(entries.count(long_name) == 1);
  CHECK(entries[long_name].content == "long\n");
  REQUIRE(entries.count("caf\xc3\xa9.txt") == 1);
  CHECK(entries["caf\xc3\xa9.txt"].content == "unicode\n");
  for (const auto& [name, e] : entries) {
    INFO(name);
    CHECK(e.mtime == 0);
    CHECK(e.uid == 0);
    CHECK(e.gid == 0);
    CHECK_FALSE(e.has_uname);
  }
}

TEST_CASE("workdir pack: streamed to the sink in pieces", "[workdir]") {
  storage::TempDir d;
  WriteFile(d.path, "big.bin", std::string(300 << 10, 'b'), 0644);
  Packed p = Pack(d.path);
  REQUIRE(p.result.ok());
  CHECK(p.pieces.size() >= 5);
  for (size_t n : p.pieces) CHECK(n <= (64 << 10));
  CHECK(ReadBack(p.bytes)["big.bin"].content == std::string(300 << 10, 'b'));

  // An empty directory: an empty archive, still valid.
  storage::TempDir empty;
  Packed e = Pack(empty.path);
  REQUIRE(e.result.ok());
  CHECK(e.result->files == 0);
  CHECK(e.result->size == 1024);
}

TEST_CASE("workdir pack: files changed since the scan are named", "[workdir]") {
  storage::TempDir d;
  WriteFile(d.path, "a.txt", "aaa", 0644);
  WriteFile(d.path, "gone.txt", "soon gone", 0644);
  WriteFile(d.path, "grown.txt", "small", 0644);
  absl::StatusOr<WorkdirManifest> manifest = ScanWorkdir(d.path, 1 << 20);
  REQUIRE(manifest.ok());
  auto discard = [](absl::string_view) { return absl::OkStatus(); };

  REQUIRE(unlink((d.path + "/gone.txt").c_str()) == 0);
  absl::StatusOr<PackedWorkdir> packed = PackWorkdir(d.path, *manifest, discard);
  REQUIRE_FALSE(packed.ok());
  CHECK(packed.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(packed.status().message()), Catch::Contains("gone.txt"));

  WriteFile(d.path, "gone.txt", "soon gone", 0644);
  WriteFile(d.path, "grown.txt", "much larger now", 0644);
  packed = PackWorkdir(d.path, *manifest, discard);
  REQUIRE_FALSE(packed.ok());
  CHECK(packed.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(packed.status().message()), Catch::Contains("grown.txt"));
}

TEST_CASE("workdir pack: the sink's error ends it", "[workdir]") {
  storage::TempDir d;
  WriteFile(d.path, "big.bin", std::string(200 << 10, 'b'), 0644);
  absl::StatusOr<WorkdirManifest> manifest = ScanWorkdir(d.path, 1 << 30);
  REQUIRE(manifest.ok());
  int calls = 0;
  absl::StatusOr<PackedWorkdir> packed =
      PackWorkdir(d.path, *manifest, [&calls](absl::string_view) {
        ++calls;
        return absl::UnavailableError("upload stream closed");
      });
  REQUIRE_FALSE(packed.ok());
  CHECK(packed.status() == absl::UnavailableError("upload stream closed"));
  CHECK(calls == 1);
}

}  // namespace workdir_pack_test
}  // namespace trainctl::cli
