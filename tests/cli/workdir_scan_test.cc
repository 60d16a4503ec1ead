// What `submit --workdir` would ship: files, directories and links in order, .trainctlignore
// honoured, and the errors a user can act on (missing, not a directory, unreadable, too large with
// the largest files named).
#include "cli/workdir_scan.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

namespace trainctl::cli {
namespace {

struct Dir {
  std::string path;
  Dir() {
    char tmpl[] = "/tmp/trainctl-workdir-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~Dir() { std::filesystem::remove_all(path); }
  void Write(const std::string& rel, const std::string& content, mode_t mode = 0644) const {
    const std::string full = path + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(full).parent_path());
    std::ofstream(full) << content;
    REQUIRE(chmod(full.c_str(), mode) == 0);
  }
};

std::vector<std::string> Paths(const WorkdirManifest& m) {
  std::vector<std::string> out;
  for (const WorkdirEntry& e : m.entries) out.push_back(e.path);
  return out;
}

TEST_CASE("workdir scan: what ships, in order, with .trainctlignore honoured", "[workdir]") {
  Dir d;
  d.Write("train.sh", "#!/bin/sh\necho hi\n", 0755);
  d.Write("src/model.py", "x = 1\n");
  d.Write("src/__pycache__/model.cpython-311.pyc", "bytes");
  d.Write("ckpt/step-1.pt", std::string(1000, 'w'));
  d.Write("data.bin", "1234");
  d.Write(".trainctlignore", "# not shipped\n__pycache__/\n/ckpt\n*.bin\n");
  REQUIRE(symlink("src/model.py", (d.path + "/link.py").c_str()) == 0);
  absl::StatusOr<WorkdirManifest> m = ScanWorkdir(d.path, 1 << 20);
  REQUIRE(m.ok());
  CHECK(Paths(*m) ==
        std::vector<std::string>{".trainctlignore", "link.py", "src", "src/model.py", "train.sh"});
  CHECK(m->ignored == 3);
  CHECK(m->total_bytes == static_cast<int64_t>(std::string("# not shipped\n__pycache__/\n/ckpt\n"
                                                           "*.bin\n")
                                                   .size() +
                                               6 + 18));
  const WorkdirEntry& link = m->entries[1];
  CHECK(link.kind == WorkdirEntry::Kind::kSymlink);
  CHECK(link.target == "src/model.py");
  CHECK(m->entries[2].kind == WorkdirEntry::Kind::kDirectory);
  CHECK(m->entries[4].mode == 0755);
  CHECK(m->entries[4].size == 18);

  // A socket is left out and listed.
  const std::string sock_path = d.path + "/src/ctl.sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path.c_str());
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  close(fd);
  m = ScanWorkdir(d.path, 1 << 20);
  REQUIRE(m.ok());
  CHECK(m->skipped_special == std::vector<std::string>{"src/ctl.sock"});
}

TEST_CASE("workdir scan: errors name what to fix", "[workdir]") {
  Dir d;
  absl::StatusOr<WorkdirManifest> missing = ScanWorkdir(d.path + "/nope", 1 << 20);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "--workdir " + d.path + "/nope: No such file or directory");
  d.Write("file", "x");
  CHECK(ScanWorkdir(d.path + "/file", 1 << 20).status().message() ==
        "--workdir " + d.path + "/file is not a directory");

  // Too large: the largest files, largest first.
  d.Write("big/a.bin", std::string(3 << 20, 'a'));
  d.Write("b.bin", std::string(2 << 20, 'b'));
  absl::StatusOr<WorkdirManifest> big = ScanWorkdir(d.path, 4 << 20);
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(big.status().message() ==
        "--workdir " + d.path +
            " holds 5 MiB, more than the 4 MiB a job may ship; the largest files: big/a.bin "
            "(3 MiB), b.bin (2 MiB), file (0 MiB). List what the job does not need in " +
            d.path + "/.trainctlignore (gitignore syntax)");
  // An ignore file brings it under the cap.
  d.Write(".trainctlignore", "big/\n");
  CHECK(ScanWorkdir(d.path, 4 << 20).ok());

  // Unreadable (as a user other than root; root reads everything).
  if (geteuid() != 0) {
    d.Write("secret.txt", "s", 0000);
    absl::StatusOr<WorkdirManifest> unreadable = ScanWorkdir(d.path, 4 << 20);
    REQUIRE_FALSE(unreadable.ok());
    CHECK_THAT(std::string(unreadable.status().message()),
               Catch::Contains("cannot read " + d.path + "/secret.txt"));
  }
}

}  // namespace
}  // namespace trainctl::cli
