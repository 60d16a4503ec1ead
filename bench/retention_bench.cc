// Benchmark: what retention costs a reconcile-loop turn.
//
// Fills a real SQLite database (in a temporary directory, synchronous=FULL as trainctld runs it)
// with TRAINCTL_BENCH_JOBS terminal jobs (default 100,000), each with an attempt, 4 runs and 12
// events, plus 1,000 live jobs, then deletes every terminal job as retention does: each "turn"
// reads the next batch of ReconcileLoop::kRetentionBatch (16) ids through the index of terminal
// jobs and commits their deletion. Prints the turn's retention cost (the read and the commit,
// fsync included) as percentiles, rows deleted per second, and, for comparison, the commit of a
// turn that writes one event.
//
//   build/bin/bench_retention
//   TRAINCTL_BENCH_JOBS=1000000 build/bin/bench_retention
//   TRAINCTL_BENCH_BATCH=64 build/bin/bench_retention       # another batch size
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "storage/sqlite_store.h"

namespace {

using trainctl::storage::Batch;
using trainctl::storage::EndedJob;
using trainctl::storage::SqliteStore;
namespace v1 = trainctl::v1;

// ReconcileLoop::kRetentionBatch unless TRAINCTL_BENCH_BATCH says otherwise.
int BatchSize() {
  const char* env = getenv("TRAINCTL_BENCH_BATCH");
  return env != nullptr ? std::max(1, atoi(env)) : 16;
}
const int kBatch = BatchSize();
constexpr int kRunsPerJob = 4;
constexpr int kEventsPerJob = 12;

int Jobs() {
  const char* env = getenv("TRAINCTL_BENCH_JOBS");
  return env != nullptr ? std::max(kBatch, atoi(env)) : 100'000;
}

// Job `i` with its rows; terminal ones ended at `i` ms, live ones are RUNNING.
void AddJob(Batch* b, int i, bool terminal) {
  const std::string id = absl::StrCat(terminal ? "j-ended-" : "j-live-", i);
  v1::Job job;
  job.set_id(id);
  job.set_project("bench");
  job.set_state(terminal ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_RUNNING);
  *job.mutable_create_time() = trainctl::MsToTimestamp(1000 + i);
  *job.mutable_update_time() = trainctl::MsToTimestamp(1000 + i);
  job.mutable_spec()->set_display_name("bench");
  b->jobs.push_back(job);
  v1::Attempt a;
  a.set_number(1);
  a.set_state(job.state());
  b->attempts.push_back({id, a});
  for (int r = 0; r < kRunsPerJob; ++r) {
    trainctl::sched::ReplicaRun run;
    run.run_id = absl::StrCat(id, "/1/worker-", r, "/0");
    run.job_id = id;
    run.attempt = 1;
    run.replica = absl::StrCat("worker-", r);
    run.node = "node-a";
    run.message = "exited with status 0";
    b->runs.push_back(run);
  }
  for (int e = 0; e < kEventsPerJob; ++e) {
    b->events.push_back({1000 + i, id, 1, "worker-0", "node-a", "ReplicaExited",
                         "Replica worker-0 exited with status 0", ""});
  }
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main() {
  char tmpl[] = "/var/tmp/trainctl-bench-retention-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const int jobs = Jobs();
  {
    auto store = SqliteStore::Open(dir + "/trainctl.db");
    if (!store.ok()) {
      fprintf(stderr, "%s\n", store.status().ToString().c_str());
      return 1;
    }
    for (int i = 0; i < jobs; i += 500) {
      Batch b;
      for (int j = i; j < std::min(jobs, i + 500); ++j) AddJob(&b, j, true);
      if (i < 1000) {
        for (int j = i; j < i + 500; ++j) AddJob(&b, j, false);  // 1,000 live jobs
      }
      if (absl::Status s = (*store)->Commit(b); !s.ok()) {
        fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
    }
    printf("%d terminal jobs (an attempt, %d runs, %d events each) and 1000 live ones in %s\n",
           jobs, kRunsPerJob, kEventsPerJob, dir.c_str());

    std::vector<double> turn_ms;
    int deleted = 0;
    EndedJob cursor;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      auto due = (*store)->EndedBefore(int64_t{1} << 50, cursor, kBatch);
      if (!due.ok() || due->empty()) break;
      Batch b;
      for (const EndedJob& j : *due) b.deleted_jobs.push_back(j.id);
      if (absl::Status s = (*store)->Commit(b); !s.ok()) {
        fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      turn_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      deleted += static_cast<int>(due->size());
      // Deleted rows are gone: the next read starts from the beginning again, as a pass does
      // once a batch was not full; the cursor only skips jobs that could not be deleted.
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int rows = deleted * (2 + kRunsPerJob + kEventsPerJob);
    printf("deleted %d jobs (%d rows) in %zu turns of %d: %.0f jobs/s, %.0f rows/s\n", deleted,
           rows, turn_ms.size(), kBatch, deleted / secs, rows / secs);
    printf(
        "retention's part of a turn (read the batch + commit its deletion, fsync included): "
        "p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
        Percentile(turn_ms, 0.5), Percentile(turn_ms, 0.9), Percentile(turn_ms, 0.99),
        *std::max_element(turn_ms.begin(), turn_ms.end()));

    // For scale: a turn that writes one event, measured in the same run (its fsync is most of
    // any turn's commit).
    std::vector<double> plain_ms;
    for (int i = 0; i < 200; ++i) {
      Batch b;
      b.events.push_back({1000, "", 0, "", "node-a", "NodeReconnected", "bench", ""});
      const auto t0 = std::chrono::steady_clock::now();
      if (absl::Status s = (*store)->Commit(b); !s.ok()) {
        fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      plain_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    printf("a turn's commit of one event row, for comparison: p50 %.2f ms, p90 %.2f ms\n",
           Percentile(plain_ms, 0.5), Percentile(plain_ms, 0.9));
  }
  std::filesystem::remove_all(dir);
  return 0;
}
