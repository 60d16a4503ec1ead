// Benchmark: CreateJob calls per second, plaintext against TLS with a bearer token, on one
// trainctld with one agent each. Every job stays QUEUED (--default-quota-max-running-jobs 0), so
// the figure is the API's: the TLS record layer, the token check, validation, the reconcile loop
// and the SQLite commit, not process launches. Four client threads share one channel. Within a
// round the two modes alternate in batches of a tenth, so that both see the same queue lengths
// (a turn's cost grows with the queued jobs) and the same moments of a busy machine; the median
// round of each mode is printed.
//
//   build/bin/bench_submit_throughput                       # 2000 submits per round and mode
//   TRAINCTL_BENCH_SUBMITS=10000 build/bin/bench_submit_throughput
//   TRAINCTL_TEST_PG=DIR build/bin/bench_submit_throughput   # each trainctld on a database of
//       # its own (--store) on the PostgreSQL server of tests/storage/pg_test_server.sh start DIR
//       # (PG_TEST_FSYNC=on there for durable commits)
//
// A benchmark, not a test: it asserts only that every call succeeded.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tests/integration/mini_cluster.h"
#include "tests/storage/test_store.h"

namespace trainctl::testing {
namespace {

constexpr int kThreads = 4;

int Submits() {
  const char* env = getenv("TRAINCTL_BENCH_SUBMITS");
  return env != nullptr ? std::max(kThreads, atoi(env)) : 2000;
}

v1::CreateJobRequest OneReplicaJob() {
  v1::CreateJobRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_display_name("bench");
  v1::WorkerPool* p = spec->add_worker_pools();
  p->set_name("chief");
  p->set_replica_count(1);
  p->add_command("/bin/true");
  p->mutable_resources()->set_cpu(0.1);
  p->mutable_resources()->set_memory_mb(16);
  return req;
}

// Submits `n` jobs from kThreads threads; returns the seconds it took.
double SubmitSeconds(MiniCluster& c, int n) {
  const v1::CreateJobRequest req = OneReplicaJob();
  std::atomic<int> failures{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < n / kThreads; ++i) {
        grpc::ClientContext ctx;
        v1::Job job;
        if (!c.jobs().CreateJob(&ctx, req, &job).ok()) failures++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(failures == 0);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_CASE("CreateJob calls per second, plaintext and TLS with a token", "[bench]") {
  ClusterOptions plain;
  plain.agents = 1;
  plain.daemon_args = {"--default-quota-max-running-jobs", "0"};
  ClusterOptions tls = plain;
  tls.tls = true;
  if (storage::UsePostgres()) {
    plain.daemon_args.insert(plain.daemon_args.end(), {"--store", storage::NewPgDatabase()});
    tls.daemon_args.insert(tls.daemon_args.end(), {"--store", storage::NewPgDatabase()});
  }
  MiniCluster plain_cluster(plain);
  MiniCluster tls_cluster(tls);
  // Warm both: connections, TLS sessions, the first SQLite pages.
  SubmitSeconds(plain_cluster, 100);
  SubmitSeconds(tls_cluster, 100);
  constexpr int kBatches = 10;
  const int batch = std::max(kThreads, Submits() / kBatches / kThreads * kThreads);
  std::vector<double> plain_rates, tls_rates;
  for (int round = 0; round < 3; ++round) {
    double plain_s = 0, tls_s = 0;
    for (int b = 0; b < kBatches; ++b) {
      plain_s += SubmitSeconds(plain_cluster, batch);
      tls_s += SubmitSeconds(tls_cluster, batch);
    }
    plain_rates.push_back(batch * kBatches / plain_s);
    tls_rates.push_back(batch * kBatches / tls_s);
  }
  std::sort(plain_rates.begin(), plain_rates.end());
  std::sort(tls_rates.begin(), tls_rates.end());
  printf(
      "CreateJob, %d threads, %d per round, median of 3 rounds: plaintext %.0f/s (%.0f-%.0f), "
      "TLS + token %.0f/s (%.0f-%.0f): TLS is %.1f%% slower\n",
      kThreads, Submits(), plain_rates[1], plain_rates[0], plain_rates[2], tls_rates[1],
      tls_rates[0], tls_rates[2], 100.0 * (1.0 - tls_rates[1] / plain_rates[1]));
}

}  // namespace
}  // namespace trainctl::testing
