// BackupFile (cli/backup_file.h): FILE appears whole, mode 0600, once its size and SHA-256 check
// out; a damaged or abandoned backup leaves no FILE and no temporary file; an existing FILE is
// kept without --force.
#include "cli/backup_file.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/sha256.h"

namespace trainctl::cli {
namespace {

struct BackupDir {
  std::string path;
  BackupDir() {
    char tmpl[] = "/tmp/trainctl-backup-file-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~BackupDir() { std::filesystem::remove_all(path); }
  // The names in the folder.
  size_t Entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path)) ++n;
    return n;
  }
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("a backup file appears whole, mode 0600, once its size and sha256 check out") {
  BackupDir dir;
  const std::string path = dir.path + "/db.bak";
  const std::string bytes = std::string(3000, 'x') + "tail";
  auto file = BackupFile::Create(path, /*overwrite=*/false);
  REQUIRE(file.ok());
  REQUIRE((*file)->Append(bytes.substr(0, 1000)).ok());
  REQUIRE((*file)->Append(bytes.substr(1000)).ok());
  // Until the commit, only the temporary file exists.
  CHECK_FALSE(std::filesystem::exists(path));
  struct stat st;
  REQUIRE(stat((*file)->temp_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE((*file)->Commit(static_cast<int64_t>(bytes.size()), Sha256Hex(bytes)).ok());
  CHECK((*file)->sha256() == Sha256Hex(bytes));
  file->reset();
  CHECK(Slurp(path) == bytes);
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(dir.Entries() == 1);

  // FILE exists now: kept, unless --force.
  auto again = BackupFile::Create(path, false);
  CHECK(again.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(again.status().message() ==
        path + " exists: pass --force to replace it, or name another FILE");
  auto forced = BackupFile::Create(path, /*overwrite=*/true);
  REQUIRE(forced.ok());
  REQUIRE((*forced)->Append("new").ok());
  REQUIRE((*forced)->Commit(3, Sha256Hex("new")).ok());
  forced->reset();
  CHECK(Slurp(path) == "new");
  CHECK(dir.Entries() == 1);
}

TEST_CASE("a damaged or abandoned backup leaves neither FILE nor a temporary file") {
  BackupDir dir;
  const std::string path = dir.path + "/db.bak";
  {
    auto file = BackupFile::Create(path, false);
    REQUIRE(file.ok());
    REQUIRE((*file)->Append("abc").ok());
    absl::Status wrong = (*file)->Commit(3, Sha256Hex("abd"));
    CHECK(wrong.code() == absl::StatusCode::kDataLoss);
    CHECK(wrong.message() == "the backup arrived damaged: trainctld sent 3 bytes with sha256 " +
                                 Sha256Hex("abd") + ", 3 bytes with sha256 " + Sha256Hex("abc") +
                                 " arrived; nothing was written to " + path);
  }
  CHECK(dir.Entries() == 0);
  {
    auto file = BackupFile::Create(path, false);
    REQUIRE(file.ok());
    REQUIRE((*file)->Append("abc").ok());
    CHECK((*file)->Commit(4, Sha256Hex("abc")).code() == absl::StatusCode::kDataLoss);
  }
  {
    // The stream broke: no Commit.
    auto file = BackupFile::Create(path, false);
    REQUIRE(file.ok());
    REQUIRE((*file)->Append("abc").ok());
  }
  CHECK(dir.Entries() == 0);
  // A FILE that appeared while the backup streamed is kept.
  {
    auto file = BackupFile::Create(path, false);
    REQUIRE(file.ok());
    std::ofstream(path) << "someone else's";
    CHECK((*file)->Commit(0, Sha256Hex("")).code() == absl::StatusCode::kFailedPrecondition);
  }
  CHECK(Slurp(path) == "someone else's");
  CHECK(dir.Entries() == 1);
  CHECK(BackupFile::Create(dir.path + "/no/such/dir/db.bak", false).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trainctl::cli
