// trainctld on the PostgreSQL store (--store): a job runs to its end on a real agent, and a
// restarted trainctld finds it there; trainctld rides out the loss of its database connections.
// Runs only in ctest's PostgreSQL pass (the test server of tests/storage/pg_test_server.sh,
// TRAINCTL_TEST_PG).
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "tests/integration/mini_cluster.h"
#include "tests/storage/test_store.h"

namespace trainctl::testing {
namespace {

// A PostgreSQL server of the test's own (tests/storage/pg_test_server.sh), which it may restart;
// stopped and removed at the end.
struct PrivatePostgres {
  PrivatePostgres() {
    char tmpl[] = "/tmp/trainctl-pgr-XXXXXX";
    dir = mkdtemp(tmpl);
    started = Script("start") == 0;
  }
  ~PrivatePostgres() { Script("stop"); }
  int Script(const std::string& command) const {
    return std::system(absl::StrCat("sh ", TRAINCTL_SOURCE_DIR, "/tests/storage/pg_test_server.sh ",
                                    command, " ", dir, " >/dev/null")
                           .c_str());
  }
  std::string dir;
  bool started = false;
};

constexpr char kQuickJob[] = R"(
displayName: on-postgres
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'exit 0']
  resources: {cpu: 0.5, memoryMb: 64}
)";

TEST_CASE("trainctld keeps its jobs in PostgreSQL across a restart", "[integration][postgres]") {
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--store", storage::NewPgDatabase()};
  MiniCluster c(o);
  const std::string id = c.Submit(c.Spec(kQuickJob));
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

TEST_CASE("trainctld reconnects when PostgreSQL drops its connections, and loses no job",
          "[integration][postgres]") {
  ClusterOptions o;
  o.agents = 1;
  const std::string uri = storage::NewPgDatabase();
  o.daemon_args = {"--store", uri};
  MiniCluster c(o);
  const std::string before = c.Submit(c.Spec(kQuickJob));
  c.WaitForState(before, v1::JOB_STATE_SUCCEEDED);
  // What a restart of the server does to its sessions: every one of trainctld's ends.
  const std::string kill_sessions =
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
      "current_database() AND pid <> pg_backend_pid()";
  CHECK(storage::PgQueryInt(uri, kill_sessions) >= 2);  // the loop's and the readers'
  // The loop's next call on the dead connection fails (a retention read: logged; a commit:
  // UNAVAILABLE to its callers, as after a full disk, until a probe writes), and the one after it
  // reconnects: a submit may be refused meanwhile, none acknowledged is lost.
  std::vector<std::string> acknowledged;
  int refused = 0;
  const std::string spec = c.WriteFile("quick.yaml", c.Spec(kQuickJob));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (acknowledged.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    CliResult r = c.Cli({"submit", "-f", spec});
    if (r.exit_code == 0) {
      acknowledged.push_back(std::string(absl::StripTrailingAsciiWhitespace(r.out)));
    } else {
      ++refused;
    }
  }
  INFO(refused << " submits refused while trainctld reconnected");
  REQUIRE(acknowledged.size() == 3);
  for (const std::string& id : acknowledged) c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  // Again, and a crash before any commit: the next start connects afresh.
  CHECK(storage::PgQueryInt(uri, kill_sessions) >= 1);  // the readers' reconnects when it reads
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  acknowledged.push_back(before);
  for (const std::string& id : acknowledged) CHECK(c.GetJob(id).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("trainctld waits for PostgreSQL to restart under load and loses no acknowledged job",
          "[integration][postgres]") {
  PrivatePostgres pg;
  REQUIRE(pg.started);
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--store", storage::NewPgDatabase(pg.dir)};
  MiniCluster c(o);
  absl::Mutex mu;
  std::vector<std::string> acknowledged;
  int refused = 0;
  std::atomic<bool> stop{false};
  std::thread submitter([&] {
    v1::CreateJobRequest req;
    req.mutable_spec()->set_display_name("under-load");
    v1::WorkerPool* pool = req.mutable_spec()->add_worker_pools();
    pool->set_name("chief");
    pool->set_replica_count(1);
    pool->add_command("/bin/true");
    pool->mutable_resources()->set_cpu(0.1);
    pool->mutable_resources()->set_memory_mb(16);
    while (!stop) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      v1::Job job;
      const bool ok = c.jobs().CreateJob(&ctx, req, &job).ok();
      absl::MutexLock lock(&mu);
      if (ok) {
        acknowledged.push_back(job.id());
      } else {
        ++refused;
      }
    }
  });
  auto acknowledged_count = [&] {
    absl::MutexLock lock(&mu);
    return acknowledged.size();
  };
  // Polls until `n` submits were acknowledged, or 60 s passed.
  auto wait_for = [&](size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (acknowledged_count() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return acknowledged_count() >= n;
  };
  const bool before = wait_for(5);
  const int restarted = pg.Script("restart");
  const bool after = wait_for(acknowledged_count() + 5);
  stop = true;
  submitter.join();
  REQUIRE(before);
  REQUIRE(restarted == 0);
  INFO(refused << " submits refused while PostgreSQL restarted");
  REQUIRE(after);
  CHECK(c.daemon().Running());
  for (const std::string& id : acknowledged) {
    CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
  }
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  for (const std::string& id : acknowledged) {
    CHECK(c.GetJob(id).state() == v1::JOB_STATE_SUCCEEDED);
  }
}

}  // namespace
}  // namespace trainctl::testing
