// Unpacking a job's workdir archive on the agent (agents/workdir_unpack.h): a round trip with the
// read-only modes and the group, the entries refused (escapes, hard links, devices, FIFOs, writes
// through a link, names given twice, corrupt archives), nothing left behind after a failure, and
// RemoveWorkdirTree, which deletes a read-only tree without following its links out of it. The
// archives are written here with libarchive.
#include "agents/workdir_unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace workdir_unpack_test {

using ::trainctl::agent::testing::ModeOf;
using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::TempDir;

struct TarEntry {
  std::string path;
  mode_t type = AE_IFREG;
  mode_t perm = 0644;
  std::string content;
  std::string symlink;   // a link's target
  std::string hardlink;  // a hard link's target
};

TarEntry Dir(const std::string& path) { return {path, AE_IFDIR, 0755, "", "", ""}; }
TarEntry File(const std::string& path, const std::string& content, mode_t perm = 0644) {
  return {path, AE_IFREG, perm, content, "", ""};
}
TarEntry Link(const std::string& path, const std::string& target) {
  return {path, AE_IFLNK, 0777, "", target, ""};
}

// Writes `entries` as a pax tar at `path`, as they are (no checks: that is the point).
void WriteTar(const std::string& path, const std::vector<TarEntry>& entries) {
  struct archive* a = archive_write_new();
  REQUIRE(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
  REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
  for (const TarEntry& e : entries) {
    struct archive_entry* entry = archive_entry_new();
    archive_entry_copy_pathname(entry, e.path.c_str());
    archive_entry_set_filetype(entry, e.type);
    archive_entry_set_perm(entry, e.perm);
    archive_entry_set_uid(entry, 4321);
    archive_entry_set_gid(entry, 4321);
    if (!e.symlink.empty()) archive_entry_copy_symlink(entry, e.symlink.c_str());
    if (!e.hardlink.empty()) archive_entry_copy_hardlink(entry, e.hardlink.c_str());
    if (e.type == AE_IFCHR) archive_entry_set_rdev(entry, makedev(1, 3));  // /dev/null
    archive_entry_set_size(entry, static_cast<la_int64_t>(e.content.size()));
    REQUIRE(archive_write_header(a, entry) == ARCHIVE_OK);
    if (!e.content.empty()) {
      REQUIRE(archive_write_data(a, e.content.data(), e.content.size()) ==
              static_cast<la_ssize_t>(e.content.size()));
    }
    archive_entry_free(entry);
  }
  REQUIRE(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

// The names in `dir`, sorted.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
};

Owner OwnerOf(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return {st.st_uid, st.st_gid};
}

std::string LinkTarget(const std::string& path) {
  std::error_code error;
  return std::filesystem::read_symlink(path, error).string();
}

const std::vector<TarEntry>& SampleTree() {
  static const std::vector<TarEntry> entries = {
      Dir("./"),
      File("train.sh", "#!/bin/sh\necho train\n", 0755),
      Dir("src"),
      File("src/model.py", "x = 1\n", 0664),
      File("deep/a/b.txt", "implicit parents\n"),  // no entries for deep/ and deep/a/
      Link("model.py", "src/model.py"),
      Link("etc", "/etc"),  // kept as a link, never followed here
  };
  return entries;
}

TEST_CASE("workdir unpack: a read-only copy of the archive, without a group", "[workdir]") {
  TempDir t;
  const std::string archive = t.path() + "/wd.tar";
  WriteTar(archive, SampleTree());
  const std::string dest = t.path() + "/wd";
  absl::StatusOr<UnpackedWorkdir> tree = UnpackWorkdir(archive, dest, std::nullopt);
  REQUIRE(tree.ok());
  CHECK(tree->files == 3);
  CHECK(tree->bytes == static_cast<int64_t>(21 + 6 + 17));
  CHECK(Names(t.path()) == std::vector<std::string>{"wd", "wd.tar"});
  CHECK(Names(dest) == std::vector<std::string>{"deep", "etc", "model.py", "src", "train.sh"});
  CHECK(ReadFile(dest + "/train.sh") == "#!/bin/sh\necho train\n");
  CHECK(ReadFile(dest + "/deep/a/b.txt") == "implicit parents\n");
  CHECK(LinkTarget(dest + "/model.py") == "src/model.py");
  CHECK(ReadFile(dest + "/model.py") == "x = 1\n");
  CHECK(LinkTarget(dest + "/etc") == "/etc");
  CHECK(ModeOf(dest) == 0555);
  CHECK(ModeOf(dest + "/src") == 0555);
  CHECK(ModeOf(dest + "/deep/a") == 0555);
  CHECK(ModeOf(dest + "/train.sh") == 0555);
  CHECK(ModeOf(dest + "/src/model.py") == 0444);
  CHECK(ModeOf(dest + "/deep/a/b.txt") == 0444);
  CHECK(OwnerOf(dest + "/src/model.py").uid == geteuid());  // not the archive's 4321

  REQUIRE(RemoveWorkdirTree(dest).ok());
  CHECK(Names(t.path()) == std::vector<std::string>{"wd.tar"});
}

TEST_CASE("workdir unpack: with a group, for replicas that run with it", "[workdir]") {
  TempDir t;
  const std::string archive = t.path() + "/wd.tar";
  WriteTar(archive, SampleTree());
  const std::string dest = t.path() + "/wd";
  // As root (CI), any gid; else one of our own.
  const gid_t group = geteuid() == 0 ? 1234 : getgid();
  absl::StatusOr<UnpackedWorkdir> tree = UnpackWorkdir(archive, dest, group);
  REQUIRE(tree.ok());
  CHECK(tree->files == 3);
  CHECK(ModeOf(dest) == 0750);
  CHECK(ModeOf(dest + "/src") == 0750);
  CHECK(ModeOf(dest + "/deep") == 0750);
  CHECK(ModeOf(dest + "/train.sh") == 0750);
  CHECK(ModeOf(dest + "/src/model.py") == 0640);
  for (const char* rel :
       {"", "/src", "/deep/a", "/deep/a/b.txt", "/train.sh", "/model.py", "/etc"}) {
    INFO(rel);
    CHECK(OwnerOf(dest + rel).uid == geteuid());
    CHECK(OwnerOf(dest + rel).gid == group);
  }
  REQUIRE(RemoveWorkdirTree(dest).ok());
  CHECK_FALSE(std::filesystem::exists(dest));
}

TEST_CASE("workdir unpack: entries that could escape or are not plain are refused", "[workdir]") {
  TempDir t;
  const std::string outside = t.path() + "/outside";
  REQUIRE(mkdir(outside.c_str(), 0755) == 0);
  struct Case {
    std::string label;
    std::vector<TarEntry> entries;
    std::string named;  // what the message must name
  };
  TarEntry hard = File("b", "");
  hard.hardlink = "a";
  TarEntry fifo = File("pipe", "");
  fifo.type = AE_IFIFO;
  TarEntry device = File("null", "");
  device.type = AE_IFCHR;
  const std::vector<Case> cases = {
      {"dot-dot", {File("ok.txt", "fine"), File("../x", "escape")}, "../x"},
      {"nested dot-dot", {Dir("a"), File("a/../../x", "escape")}, "a/../../x"},
      {"absolute", {File("/abs", "escape")}, "/abs"},
      {"hard link", {File("a", "data"), hard}, "\"b\""},
      {"fifo", {fifo}, "pipe"},
      {"device", {device}, "null"},
      {"through a link", {Link("link", outside), File("link/file", "escape")}, "link/file"},
      {"through a link, deeper",
       {Dir("d"), Link("d/l", outside), File("d/l/x/y", "escape")},
       "d/l/x/y"},
      {"given twice", {File("a", "one"), File("a", "two")}, "\"a\""},
      {"link over a file", {File("a", "one"), Link("a", "/etc/passwd")}, "\"a\""},
      {"file under a file", {File("a", "one"), File("a/b", "two")}, "a/b"},
  };
  for (const Case& c : cases) {
    SECTION(c.label) {
      const std::string archive = t.path() + "/bad.tar";
      WriteTar(archive, c.entries);
      const std::string dest = t.path() + "/wd";
      absl::StatusOr<UnpackedWorkdir> tree = UnpackWorkdir(archive, dest, std::nullopt);
      REQUIRE_FALSE(tree.ok());
      CHECK(tree.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK_THAT(std::string(tree.status().message()), Catch::Contains(c.named));
      // Nothing at dest, no temporary beside it, nothing written outside.
      CHECK(Names(t.path()) == std::vector<std::string>{"bad.tar", "outside"});
      CHECK(Names(outside).empty());
      CHECK_FALSE(std::filesystem::exists(t.path() + "/x"));
    }
  }
}

TEST_CASE("workdir unpack: an existing dest, a corrupt or missing archive", "[workdir]") {
  TempDir t;
  const std::string archive = t.path() + "/wd.tar";
  WriteTar(archive, {File("big.bin", std::string(100000, 'b'))});
  const std::string dest = t.path() + "/wd";

  REQUIRE(mkdir(dest.c_str(), 0755) == 0);
  absl::StatusOr<UnpackedWorkdir> tree = UnpackWorkdir(archive, dest, std::nullopt);
  CHECK(tree.status().code() == absl::StatusCode::kAlreadyExists);
  CHECK(Names(t.path()) == std::vector<std::string>{"wd", "wd.tar"});
  CHECK(Names(dest).empty());
  REQUIRE(rmdir(dest.c_str()) == 0);

  // Cut in the middle of the file's data.
  std::filesystem::resize_file(archive, 50000);
  tree = UnpackWorkdir(archive, dest, std::nullopt);
  CHECK(tree.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Names(t.path()) == std::vector<std::string>{"wd.tar"});

  std::ofstream(archive, std::ios::trunc) << std::string(2048, 'z');
  tree = UnpackWorkdir(archive, dest, std::nullopt);
  CHECK(tree.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Names(t.path()) == std::vector<std::string>{"wd.tar"});

  tree = UnpackWorkdir(t.path() + "/missing.tar", dest, std::nullopt);
  CHECK_FALSE(tree.ok());
  CHECK(Names(t.path()) == std::vector<std::string>{"wd.tar"});

  // The parent must exist.
  tree = UnpackWorkdir(archive, t.path() + "/no/wd", std::nullopt);
  CHECK_FALSE(tree.ok());
}

TEST_CASE("workdir unpack: an empty archive gives an empty directory", "[workdir]") {
  TempDir t;
  const std::string archive = t.path() + "/wd.tar";
  WriteTar(archive, {});
  absl::StatusOr<UnpackedWorkdir> tree = UnpackWorkdir(archive, t.path() + "/wd/", std::nullopt);
  REQUIRE(tree.ok());
  CHECK(tree->files == 0);
  CHECK(tree->bytes == 0);
  CHECK(Names(t.path() + "/wd").empty());
  CHECK(ModeOf(t.path() + "/wd") == 0555);
  REQUIRE(RemoveWorkdirTree(t.path() + "/wd").ok());
}

TEST_CASE("workdir remove: a read-only tree, links not followed out of it", "[workdir]") {
  TempDir t;
  const std::string outside = t.path() + "/outside";
  REQUIRE(mkdir(outside.c_str(), 0755) == 0);
  std::ofstream(outside + "/keep.txt") << "keep";
  const std::string archive = t.path() + "/wd.tar";
  WriteTar(archive, {Dir("a"), Dir("a/b"), File("a/b/f.txt", "f"), Link("a/out", outside),
                     Link("file-out", outside + "/keep.txt"), File("top.txt", "t", 0755)});
  const std::string dest = t.path() + "/wd";
  REQUIRE(UnpackWorkdir(archive, dest, std::nullopt).ok());
  // Even a directory left with no permissions at all.
  REQUIRE(chmod((dest + "/a/b").c_str(), 0) == 0);

  REQUIRE(RemoveWorkdirTree(dest).ok());
  CHECK_FALSE(std::filesystem::exists(dest));
  CHECK(Names(t.path()) == std::vector<std::string>{"outside", "wd.tar"});
  CHECK(Names(outside) == std::vector<std::string>{"keep.txt"});
  CHECK(ReadFile(outside + "/keep.txt") == "keep");
  CHECK(ModeOf(outside) == 0755);

  // Gone already: fine. A link in its place: left alone, and so is what it names.
  CHECK(RemoveWorkdirTree(dest).ok());
  REQUIRE(symlink(outside.c_str(), dest.c_str()) == 0);
  absl::Status removed = RemoveWorkdirTree(dest);
  CHECK(removed.code() == absl::StatusCode::kInvalidArgument);
  CHECK(LinkTarget(dest) == outside);
  CHECK(Names(outside) == std::vector<std::string>{"keep.txt"});
}

}  // namespace workdir_unpack_test
}  // namespace trainctl::agent
