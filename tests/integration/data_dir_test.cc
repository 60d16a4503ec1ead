// trainctld's data dir across stops: a crash leaves the running marker and the next start checks
// the database, refusing a damaged one with how to restore a backup; a clean stop skips the
// check, and a database damaged then is refused when it is read, naming it and the remedy too;
// an empty database file is refused; `trainctld --check-db` reports without starting. The dir is
// trainctld's alone: 0700 and its files 0600 whatever the umask, wider modes tightened at start.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// trainctld on `data` with free ports; returns when it exits (within the timeout).
CliResult StartOn(MiniCluster& c, const std::string& data) {
  return c.Run({BinDir() + "/trainctld", "--data-dir", data, "--listen", "127.0.0.1:0",
                "--http-listen", "127.0.0.1:0"},
               std::chrono::seconds(20));
}

TEST_CASE("a clean stop removes the running marker, a crash leaves it and the next start checks",
          "[integration][data_dir]") {
  MiniCluster c(1);
  const std::string marker = c.DataDir() + "/trainctld.running";
  CHECK(std::filesystem::exists(marker));
  c.KillDaemon(SIGTERM);
  CHECK_FALSE(std::filesystem::exists(marker));
  c.StartDaemon();
  c.KillDaemon(SIGKILL);
  CHECK(std::filesystem::exists(marker));
  c.StartDaemon();  // the database is sound: it starts after the check
  c.StartAgents();
  const std::string log = ReadTextFile(c.dir() + "/trainctld.log");
  CHECK_THAT(log, Catch::Contains("was not clean") && Catch::Contains("is sound"));
  CliResult check = c.Run({BinDir() + "/trainctld", "--check-db", "--data-dir", c.DataDir()});
  CHECK(check.exit_code == 0);
  CHECK_THAT(check.out, Catch::Contains("trainctl.db: ok"));
}

// Overwrites every page of `db` after the first with junk, its -wal and -shm removed.
void DamagePages(const std::string& db) {
  std::filesystem::remove(db + "-wal");
  std::filesystem::remove(db + "-shm");
  const auto size = std::filesystem::file_size(db);
  REQUIRE(size > 4096);
  std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(4096);
  const std::string junk(size - 4096, '\x5a');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

TEST_CASE("after a crash a damaged database is refused, naming it and how to restore a backup",
          "[integration][data_dir]") {
  MiniCluster c(0);
  c.KillDaemon(SIGKILL);
  const std::string db = c.DataDir() + "/trainctl.db";
  DamagePages(db);
  CliResult refused = StartOn(c, c.DataDir());
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.out + refused.err,
             Catch::Contains(db + " is damaged") && Catch::Contains("copy the backup over " + db));
  CHECK_FALSE(std::filesystem::exists(c.DataDir() + "/trainctld.addr.tmp"));
  CliResult check = c.Run({BinDir() + "/trainctld", "--check-db", "--data-dir", c.DataDir()});
  CHECK(check.exit_code == 1);
  CHECK_THAT(check.out, Catch::Contains("is damaged; SQLite's integrity_check found:"));
}

TEST_CASE("after a clean stop a damaged database is refused when read, naming it and the remedy",
          "[integration][data_dir]") {
  MiniCluster c(0);
  c.KillDaemon(SIGTERM);  // clean: the next start skips the check
  const std::string db = c.DataDir() + "/trainctl.db";
  DamagePages(db);
  std::filesystem::remove(c.DataDir() + "/trainctld.addr");
  CliResult refused = StartOn(c, c.DataDir());
  CHECK(refused.exit_code == 1);
  const std::string said = refused.out + refused.err;
  CHECK_THAT(said, Catch::Contains(db + " is damaged (SQLite: ") &&
                       Catch::Contains("`trainctld --check-db --data-dir " + c.DataDir() + "`") &&
                       Catch::Contains("`trainctl admin backup`") &&
                       Catch::Contains("copy the backup over " + db));
  CHECK_FALSE(std::filesystem::exists(c.DataDir() + "/trainctld.addr"));
}

// The permission bits of `path`.
mode_t ModeOf(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("under a 022 umask the data dir is made 0700 and the database and every file 0600",
          "[integration][data_dir]") {
  const mode_t before = umask(022);
  MiniCluster c(0);  // trainctld makes its data dir
  umask(before);
  const std::string data = c.DataDir();
  CHECK(ModeOf(data) == 0700);
  for (const char* file :
       {"/trainctl.db", "/trainctl.db-wal", "/trainctl.db-shm", "/LOCK", "/trainctld.addr",
        "/trainctld.http-addr", "/trainctld.running", "/trainctld.id"}) {
    INFO(file);
    CHECK(ModeOf(data + file) == 0600);
  }
  CHECK_THAT(ReadTextFile(c.dir() + "/trainctld.log"), !Catch::Contains("open to other users"));
}

TEST_CASE("a start over a data dir and files open to others warns about each and tightens it",
          "[integration][data_dir]") {
  MiniCluster c(0);
  c.KillDaemon(SIGKILL);  // the -wal and -shm stay
  const std::string data = c.DataDir();
  REQUIRE(chmod(data.c_str(), 0755) == 0);
  const std::vector<std::string> files = {"/trainctl.db", "/trainctl.db-wal", "/trainctl.db-shm",
                                          "/trainctld.id"};
  for (const std::string& file : files) REQUIRE(chmod((data + file).c_str(), 0644) == 0);
  c.StartDaemon();
  const std::string log = ReadTextFile(c.dir() + "/trainctld.log");
  CHECK_THAT(log, Catch::Contains(data + " had mode 0755, open to other users of this host: "
                                         "changed to 0700"));
  CHECK(ModeOf(data) == 0700);
  for (const std::string& file : files) {
    INFO(file);
    CHECK_THAT(log, Catch::Contains(data + file +
                                    " had mode 0644, open to other users of this "
                                    "host: changed to 0600"));
    CHECK(ModeOf(data + file) == 0600);
  }
}

TEST_CASE("an empty database file is refused rather than started as an empty cluster",
          "[integration][data_dir]") {
  MiniCluster c(0);
  const std::string data = c.dir() + "/empty";
  std::filesystem::create_directories(data);
  std::ofstream(data + "/trainctl.db").close();
  CliResult refused = StartOn(c, data);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.out + refused.err,
             Catch::Contains(data + "/trainctl.db is empty") && Catch::Contains("backup"));
  CHECK(std::filesystem::file_size(data + "/trainctl.db") == 0);
  CHECK_FALSE(std::filesystem::exists(data + "/trainctld.addr"));
}

}  // namespace
}  // namespace trainctl::testing
