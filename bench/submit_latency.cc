// Benchmark: time from CreateJob to the job being RUNNING, for a 4-replica job (1 chief + 3
// workers) on two local agents. Each sample submits over gRPC, follows WatchJob until RUNNING,
// then cancels the job and waits for CANCELLED before the next sample. Measured without the
// fabric check between the two nodes (faultTolerance.gangCheck OFF, as every benchmark runs),
// then with it (AUTO: the agents' built-in TCP probes before the replicas launch).
//
//   build/bin/bench_submit_latency            # 30 samples
//   TRAINCTL_BENCH_SAMPLES=100 build/bin/bench_submit_latency
//
// Prints min / median / p90 / max in milliseconds. A benchmark, not a test: it asserts only that
// the cluster works.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

int Samples() {
  const char* env = getenv("TRAINCTL_BENCH_SAMPLES");
  return env != nullptr ? std::max(1, atoi(env)) : 30;
}

v1::JobSpec FourReplicaJob(v1::GangCheck check) {
  v1::JobSpec spec;
  spec.mutable_fault_tolerance()->set_gang_check(check);
  spec.set_display_name("bench");
  for (auto [name, count] : {std::pair<const char*, int>{"chief", 1}, {"worker", 3}}) {
    v1::WorkerPool* p = spec.add_worker_pools();
    p->set_name(name);
    p->set_replica_count(count);
    p->add_command("/bin/sleep");
    p->add_args("300");
    p->mutable_resources()->set_cpu(0.1);
    p->mutable_resources()->set_memory_mb(16);
  }
  spec.mutable_scheduling()->mutable_stop_grace_period()->set_seconds(1);
  return spec;
}

// `samples` submit -> RUNNING latencies of the 4-replica job with gangCheck `check`.
std::vector<double> SubmitToRunning(MiniCluster& c, v1::GangCheck check, int samples) {
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    auto start = std::chrono::steady_clock::now();
    grpc::ClientContext ctx;
    v1::CreateJobRequest req;
    *req.mutable_spec() = FourReplicaJob(check);
    v1::Job job;
    REQUIRE(c.jobs().CreateJob(&ctx, req, &job).ok());
    grpc::ClientContext watch_ctx;
    v1::WatchJobRequest watch;
    watch.set_id(job.id());
    auto reader = c.jobs().WatchJob(&watch_ctx, watch);
    v1::Job update;
    bool running = false;
    while (reader->Read(&update)) {
      if (update.state() == v1::JOB_STATE_RUNNING) {
        running = true;
        break;
      }
    }
    auto end = std::chrono::steady_clock::now();
    watch_ctx.TryCancel();
    reader->Finish();
    REQUIRE(running);
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());

    grpc::ClientContext cancel_ctx;
    v1::CancelJobRequest cancel;
    cancel.set_id(job.id());
    v1::Job cancelled;
    REQUIRE(c.jobs().CancelJob(&cancel_ctx, cancel, &cancelled).ok());
    c.WaitForState(job.id(), v1::JOB_STATE_CANCELLED);
  }
  return ms;
}

void Print(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, size_t(p * ms.size()))]; };
  printf("%s, %zu samples: min %.1f ms, median %.1f ms, p90 %.1f ms, max %.1f ms\n", what,
         ms.size(), ms.front(), pct(0.5), pct(0.9), ms.back());
}

TEST_CASE("submit -> RUNNING latency of a 4-replica job on two agents", "[bench]") {
  MiniCluster c(2);
  Print("submit -> RUNNING, 4 replicas on 2 agents",
        SubmitToRunning(c, v1::GANG_CHECK_OFF, Samples()));
  Print("the same with the fabric check before the start (gangCheck AUTO)",
        SubmitToRunning(c, v1::GANG_CHECK_AUTO, Samples()));
}

}  // namespace
}  // namespace trainctl::testing
