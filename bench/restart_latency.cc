// Benchmark: time from a replica's crash to its restarted process running on the same node.
//
// One replica crashes with a transient exit code (134) again and again, with restart backoff
// off so every restart is immediate. The replica writes a timestamp (CLOCK_REALTIME, ns) when it
// starts and right before it crashes; the latency of restart n is start[n+1] - crash[n]: the
// agent's reap, the report, the scheduler's decision and commit, the launch and the exec.
//
//   build/bin/bench_restart_latency                         # 30 restarts
//   TRAINCTL_BENCH_SAMPLES=100 build/bin/bench_restart_latency
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

TEST_CASE("crash -> restarted process running, same node", "[bench]") {
  const char* env = getenv("TRAINCTL_BENCH_SAMPLES");
  const int samples = env != nullptr ? std::max(1, atoi(env)) : 30;
  MiniCluster c(1);
  std::string id = c.Submit(c.Spec(absl::StrCat(R"(
displayName: crashy
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'date +%s%N >> DIR/starts; sleep 0.2; date +%s%N >> DIR/crashes; exit 134']
scheduling:
  maxReplicaRestarts: )",
                                                samples + 1, R"(
  restartBackoff: {initial: 0s}
)")));
  REQUIRE(Eventually([&] { return ReadTimes(c.dir() + "/starts").size() > size_t(samples); },
                     std::chrono::seconds(120)));
  std::vector<int64_t> starts = ReadTimes(c.dir() + "/starts");
  std::vector<int64_t> crashes = ReadTimes(c.dir() + "/crashes");
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) ms.push_back((starts[i + 1] - crashes[i]) / 1e6);
  v1::CancelJobRequest cancel;
  cancel.set_id(id);
  v1::Job ignored;
  grpc::ClientContext ctx;
  c.jobs().CancelJob(&ctx, cancel, &ignored);
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, size_t(p * ms.size()))]; };
  printf(
      "crash -> restarted process running (same node), %zu restarts: min %.1f ms, median "
      "%.1f ms, p90 %.1f ms, max %.1f ms\n",
      ms.size(), ms.front(), pct(0.5), pct(0.9), ms.back());
}

}  // namespace
}  // namespace trainctl::testing
