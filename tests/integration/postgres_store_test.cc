// trainctld on the PostgreSQL store (--store): a job runs to its end on a real agent, and a
// restarted trainctld finds it there. Runs only in ctest's PostgreSQL pass (the test server of
// tests/storage/pg_test_server.sh, TRAINCTL_TEST_PG).
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/integration/mini_cluster.h"
#include "tests/storage/test_store.h"

namespace trainctl::testing {
namespace {

TEST_CASE("trainctld keeps its jobs in PostgreSQL across a restart", "[integration][postgres]") {
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--store", storage::NewPgDatabase()};
  MiniCluster c(o);
  const std::string id = c.Submit(c.Spec(R"(
displayName: on-postgres
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'exit 0']
  resources: {cpu: 0.5, memoryMb: 64}
)"));
  const v1::Job before = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  // The data dir holds trainctld's own files, not the database.
  CHECK_FALSE(std::filesystem::exists(c.DataDir() + "/trainctl.db"));

  c.KillDaemon(SIGTERM);
  c.StartDaemon();
  const v1::Job after = c.GetJob(id);
  CHECK(after.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(after.attempts_size() == before.attempts_size());
  CHECK(c.ListEvents(id, "", "").size() >= 3);

  // Backups of a PostgreSQL store are PostgreSQL's own (pg_dump).
  CliResult backup = c.Cli({"admin", "backup", c.dir() + "/backup.db"});
  CHECK(backup.exit_code != 0);
  CHECK(backup.err.find("pg_dump") != std::string::npos);
}

}  // namespace
}  // namespace trainctl::testing
