// Benchmark: GANG jobs on two agents. (1) Time from a rank's crash to the whole gang training
// again: a worker crashes with a transient exit code (134) again and again, restart backoff off;
// each gang restart stops the chief (SIGTERM) and starts both again. The latency of restart n is
// the later of the two replicas' start n+1, minus crash n (CLOCK_REALTIME timestamps the replicas
// write). (2) The cost of the settle window on a real user error: time from a worker's exit 1 to
// its job FAILED, for a GANG job (the settle window, 3s by default, then the decision) and for the
// same job with restartScope REPLICA (decided at once). (1) is measured again with
// scheduling.captureStacks ALWAYS, which captures the survivor's stacks before stopping it.
//
//   build/bin/bench_gang_restart_latency                         # 20 crashes, 5 user errors each
//   TRAINCTL_BENCH_SAMPLES=50 build/bin/bench_gang_restart_latency
//
// Prints min / median / p90 / max in milliseconds. A benchmark, not a test.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

std::vector<int64_t> ReadTimes(const std::string& path) {
  std::istringstream in(ReadTextFile(path));
  std::vector<int64_t> out;
  int64_t t = 0;
  while (in >> t) out.push_back(t);
  return out;
}

void Print(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, size_t(p * ms.size()))]; };
  printf("%s, %zu samples: min %.1f ms, median %.1f ms, p90 %.1f ms, max %.1f ms\n", what,
         ms.size(), ms.front(), pct(0.5), pct(0.9), ms.back());
}

void Cancel(MiniCluster& c, const std::string& id) {
  v1::CancelJobRequest cancel;
  cancel.set_id(id);
  v1::Job ignored;
  grpc::ClientContext ctx;
  c.jobs().CancelJob(&ctx, cancel, &ignored);
}

int Samples(int fallback) {
  const char* env = getenv("TRAINCTL_BENCH_SAMPLES");
  return env != nullptr ? std::max(1, atoi(env)) : fallback;
}

// The restart latencies of `samples` gang restarts under scheduling.captureStacks `capture`.
std::vector<double> GangRestarts(int samples, const std::string& capture) {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(absl::StrCat(R"(
displayName: gang
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'date +%s%N >> DIR/chief-starts; exec sleep 1000']
- name: worker
  replicaCount: 1
  command: [/bin/sh, -c, 'date +%s%N >> DIR/worker-starts; sleep 0.3; date +%s%N >> DIR/crashes; exit 134']
scheduling:
  restartScope: GANG
  stopGracePeriod: 5s
  captureStacks: )",
                                                capture, R"(
  maxReplicaRestarts: )",
                                                samples + 1, R"(
  restartBackoff: {initial: 0s}
)")));
  REQUIRE(Eventually(
      [&] {
        return ReadTimes(c.dir() + "/worker-starts").size() > size_t(samples) &&
               ReadTimes(c.dir() + "/chief-starts").size() > size_t(samples);
      },
      std::chrono::seconds(180)));
  const std::vector<int64_t> chief = ReadTimes(c.dir() + "/chief-starts");
  const std::vector<int64_t> worker = ReadTimes(c.dir() + "/worker-starts");
  const std::vector<int64_t> crashes = ReadTimes(c.dir() + "/crashes");
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    ms.push_back((std::max(chief[i + 1], worker[i + 1]) - crashes[i]) / 1e6);
  }
  Cancel(c, id);
  return ms;
}

TEST_CASE("a rank's crash -> the whole gang running again", "[bench]") {
  const int samples = Samples(20);
  Print("crash -> every replica of a 2-replica gang running again (two agents)",
        GangRestarts(samples, "AUTO"));
  // With ALWAYS the survivor's stacks are captured (gdb) before it is stopped.
  Print("the same with captureStacks: ALWAYS", GangRestarts(std::max(1, samples / 4), "ALWAYS"));
}

TEST_CASE("a real user error -> the job FAILED, with and without the settle window", "[bench]") {
  const int samples = std::max(1, Samples(20) / 4);
  MiniCluster c(2);
  for (const char* scope : {"GANG", "REPLICA"}) {
    std::vector<double> ms;
    for (int i = 0; i < samples; ++i) {
      const std::string exit_file = absl::StrCat(c.dir(), "/exit-", scope, "-", i);
      std::string id = c.Submit(c.Spec(absl::StrCat(R"(
displayName: user-error
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'exec sleep 1000']
- name: worker
  replicaCount: 1
  command: [/bin/sh, -c, 'sleep 0.2; date +%s%N > )",
                                                    exit_file, R"(; exit 1']
scheduling: {restartScope: )",
                                                    scope, R"(, stopGracePeriod: 5s}
)")));
      v1::Job job = c.WaitForState(id, v1::JOB_STATE_FAILED, std::chrono::seconds(60));
      const std::vector<int64_t> exited = ReadTimes(exit_file);
      REQUIRE(exited.size() == 1);
      ms.push_back(TimestampToMs(job.end_time()) - exited[0] / 1e6);
    }
    Print(absl::StrCat("worker-0 exits 1 -> job FAILED, restartScope ", scope).c_str(), ms);
  }
}

}  // namespace
}  // namespace trainctl::testing
