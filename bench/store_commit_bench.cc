// Benchmark: durable submits per second through a Store's group commit, on SQLite and on
// PostgreSQL. Each "turn" commits one batch of N new jobs as the reconcile loop writes a submit
// (the job's row and its JobQueued event), for N = 1, 16, 64 and 256 (a loop turn takes every
// submit that arrived during the previous commit); prints jobs committed per second and the
// commit's median, with fsync (SQLite: synchronous=FULL; PostgreSQL: as its server commits).
// PostgreSQL runs twice: as one trainctld commits, and as the leader of several does, each
// transaction checking its lease's epoch first (storage/pg_lease.h).
//
//   build/bin/bench_store_commit                                  # SQLite in a temporary dir
//   TRAINCTL_BENCH_PG=postgresql:///bench?host=/tmp/pg build/bin/bench_store_commit
//                       # PostgreSQL too: an empty database (tests/storage/pg_test_server.sh
//                       # start DIR with PG_TEST_FSYNC=on makes one on a durable server)
//   TRAINCTL_BENCH_JOBS=20000 build/bin/bench_store_commit       # jobs per batch size
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "storage/pg_lease.h"
#include "storage/pg_store.h"
#include "storage/sqlite_store.h"

namespace {

using trainctl::storage::Batch;
using trainctl::storage::Store;
namespace v1 = trainctl::v1;

int Jobs() {
  const char* env = getenv("TRAINCTL_BENCH_JOBS");
  return env != nullptr ? std::max(256, atoi(env)) : 4096;
}

void AddSubmit(Batch* b, const std::string& id, int64_t now_ms) {
  v1::Job job;
  job.set_id(id);
  job.set_project("bench");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_creator("bench");
  job.set_request_id(id);
  *job.mutable_create_time() = trainctl::MsToTimestamp(now_ms);
  *job.mutable_update_time() = trainctl::MsToTimestamp(now_ms);
  job.mutable_spec()->set_display_name("bench");
  v1::WorkerPool* pool = job.mutable_spec()->add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  pool->add_command("/bin/true");
  b->jobs.push_back(job);
  b->events.push_back({now_ms, id, 0, "", "", "JobQueued", "submitted", "bench"});
}

// Commits Jobs() submits in batches of `batch`; prints the rate.
void Measure(const char* name, Store& store, int batch) {
  const int turns = Jobs() / batch;
  std::vector<double> commit_ms;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < turns; ++t) {
    Batch b;
    const int64_t now = trainctl::WallNowMs();
    for (int i = 0; i < batch; ++i) AddSubmit(&b, absl::StrCat("j-", batch, "-", t, "-", i), now);
    const auto before = std::chrono::steady_clock::now();
    if (absl::Status s = store.Commit(b); !s.ok()) {
      fprintf(stderr, "%s: commit failed: %s\n", name, s.ToString().c_str());
      exit(1);
    }
    commit_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before)
            .count());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::sort(commit_ms.begin(), commit_ms.end());
  printf("%-10s batches of %3d: %7.0f submits/s, commit median %.2f ms, p90 %.2f ms\n", name, batch,
         turns * batch / seconds, commit_ms[commit_ms.size() / 2],
         commit_ms[commit_ms.size() * 9 / 10]);
}

void MeasureAll(const char* name, Store& store) {
  for (int batch : {1, 16, 64, 256}) Measure(name, store, batch);
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/trainctl-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  {
    auto sqlite = trainctl::storage::SqliteStore::Open(dir + "/trainctl.db");
    if (!sqlite.ok()) {
      fprintf(stderr, "%s\n", sqlite.status().ToString().c_str());
      return 1;
    }
    MeasureAll("SQLite", **sqlite);
  }
  std::filesystem::remove_all(dir);
  if (const char* uri = getenv("TRAINCTL_BENCH_PG"); uri != nullptr && *uri != '\0') {
    auto pg = trainctl::storage::PgStore::Open(uri);
    if (!pg.ok()) {
      fprintf(stderr, "%s\n", pg.status().ToString().c_str());
      return 1;
    }
    MeasureAll("PostgreSQL", **pg);
    // As a leader of several trainctld commits: each transaction checks its lease's epoch first.
    auto lease = trainctl::storage::PgLeaderLease::Open(
        uri, {"bench.lease", "bench:7070", "bench:7080", absl::Seconds(60)});
    absl::StatusOr<std::optional<int64_t>> epoch =
        lease.ok() ? (*lease)->TryAcquire(nullptr) : lease.status();
    if (!epoch.ok() || !epoch->has_value()) {
      fprintf(stderr, "cannot take the leader lease: %s\n", epoch.status().ToString().c_str());
      return 1;
    }
    (*pg)->SetFence(**epoch, [](const absl::Status& s) {
      fprintf(stderr, "fenced: %s\n", s.ToString().c_str());
      exit(1);
    });
    MeasureAll("PostgreSQL, leader with the lease's fence", **pg);
  }
  return 0;
}
