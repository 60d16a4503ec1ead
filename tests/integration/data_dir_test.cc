// trainctld's data dir across stops: a crash leaves the running marker and the next start checks
// the database, refusing a damaged one with how to restore a backup; a clean stop skips the
// check; an empty database file is refused; `trainctld --check-db` reports without starting.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

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

TEST_CASE("after a crash a damaged database is refused, naming it and how to restore a backup",
          "[integration][data_dir]") {
  MiniCluster c(0);
  c.KillDaemon(SIGKILL);
  const std::string db = c.DataDir() + "/trainctl.db";
  std::filesystem::remove(db + "-wal");
  std::filesystem::remove(db + "-shm");
  const auto size = std::filesystem::file_size(db);
  REQUIRE(size > 4096);
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string junk(size - 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  CliResult refused = StartOn(c, c.DataDir());
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.out + refused.err,
             Catch::Contains(db + " is damaged") && Catch::Contains("copy the backup over " + db));
  CHECK_FALSE(std::filesystem::exists(c.DataDir() + "/trainctld.addr.tmp"));
  CliResult check = c.Run({BinDir() + "/trainctld", "--check-db", "--data-dir", c.DataDir()});
  CHECK(check.exit_code == 1);
  CHECK_THAT(check.out, Catch::Contains("is damaged; SQLite's integrity_check found:"));
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
