// Benchmark: how long a replica takes to start, three ways, on one local agent:
//   host     a pool without an image: the agent forks the replica's trainctl-shim, which execs
//            the command on the host;
//   cached   a pool in a container image the node already holds: the agent takes the unpacked
//            root from its image cache, and the shim runs the command with `runc run` on an
//            overlay above it;
//   pulled   the same image on a node that has never seen it: before each of these rounds the
//            agent restarts with a fresh, empty --image-dir, so the launch first pulls the image
//            (skopeo inspect and copy from a registry on loopback) and unpacks it (umoci).
// Every job is one replica of `/bin/sh -c true` (dash on the host, busybox sh in the image) that
// must end SUCCEEDED. The image is a busybox-static image (about 3 MB as pulled), built offline
// with buildah and served by Debian's docker-registry on 127.0.0.1
// (tests/agents/oci_registry_fixture.h).
//
// Latency is read from trainctld's own record, not from the client: from the job's create_time
// (CreateJob) to the time of its ReplicaStarted event (the agent's report that the process runs,
// as trainctld processed it), and to its end_time (SUCCEEDED). For images, the ImagePulled event
// ("image ready") splits the time to start into the agent's image work and the container's start.
// Times are trainctld's, in milliseconds. Each round runs one job of each kind, in the order
// pulled, cached, host, each once the agent has removed the container before it; one round
// before them warms up and is not counted.
//
//   build/bin/bench_image_start                   # 10 rounds
//   build/bin/bench_image_start --rounds 30       # or TRAINCTL_BENCH_ROUNDS=30
//
// Prints the median and p90 of each figure in a table. Needs root and the container tools
// (docker-registry, buildah, busybox-static, skopeo, umoci, runc: deploy/install-deps.sh); without
// them it says why and exits 0. A benchmark, not a test: it asserts only that the jobs succeed and
// that each pull and cache hit is the one its row claims.
#define CATCH_CONFIG_RUNNER
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "tests/agents/oci_registry_fixture.h"
#include "tests/agents/test_util.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

using ::trainctl::agent::testing::ImageBuilder;
using ::trainctl::agent::testing::ImageSpec;
using ::trainctl::agent::testing::OciTestsUnavailable;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::TestRegistry;

// --rounds; 0: $TRAINCTL_BENCH_ROUNDS, else 10.
int g_rounds_flag = 0;

int Rounds() {
  if (g_rounds_flag > 0) return g_rounds_flag;
  const char* env = getenv("TRAINCTL_BENCH_ROUNDS");
  return env != nullptr ? std::max(1, atoi(env)) : 10;
}

// One replica of `/bin/sh -c true`, in `image` when not empty.
v1::JobSpec TrivialJob(const std::string& image) {
  v1::JobSpec spec;
  spec.set_display_name(image.empty() ? "bench-host" : "bench-image");
  v1::WorkerPool* p = spec.add_worker_pools();
  p->set_name("chief");
  p->set_replica_count(1);
  p->add_command("/bin/sh");
  p->add_args("-c");
  p->add_args("true");
  p->mutable_resources()->set_cpu(0.5);
  p->mutable_resources()->set_memory_mb(64);
  if (!image.empty()) p->set_image(image);
  spec.mutable_scheduling()->set_restart_policy(v1::RESTART_POLICY_NEVER);
  return spec;
}

enum class Mode { kHost, kCached, kPulled };

// One job's figures, ms from its create_time.
struct Sample {
  double started = 0;    // ReplicaStarted
  double succeeded = 0;  // end_time (SUCCEEDED)
  double ready = -1;     // ImagePulled; -1 without an image
  int64_t bytes = 0;     // what the pull downloaded, from ImagePulled's reason (pulls only)
};

// "... (123456 bytes)" -> 123456; 0 when the reason holds no such count.
int64_t PulledBytes(const std::string& reason) {
  const size_t end = reason.rfind(" bytes)");
  if (end == std::string::npos) return 0;
  const size_t begin = reason.rfind('(', end);
  if (begin == std::string::npos) return 0;
  return atoll(reason.substr(begin + 1, end - begin - 1).c_str());
}

// Submits one job over gRPC, waits until it ends, REQUIREs SUCCEEDED (and, in an image, a pull or
// a cache hit as `mode` says), and reads its figures from its events and times.
Sample RunJob(MiniCluster& c, Mode mode, const std::string& image) {
  grpc::ClientContext ctx;
  v1::CreateJobRequest req;
  *req.mutable_spec() = TrivialJob(mode == Mode::kHost ? "" : image);
  v1::Job created;
  REQUIRE(c.jobs().CreateJob(&ctx, req, &created).ok());
  const v1::Job job = c.WaitForEnd(created.id(), std::chrono::seconds(120));
  if (job.state() != v1::JOB_STATE_SUCCEEDED) FAIL(c.Cli({"describe", job.id()}).out);
  const int64_t create = TimestampToMs(job.create_time());
  Sample s;
  s.succeeded = static_cast<double>(TimestampToMs(job.end_time()) - create);
  bool started = false;
  for (const v1::Event& e : c.ListEvents(job.id(), "", "")) {
    const double at = static_cast<double>(TimestampToMs(e.time()) - create);
    if (e.type() == "ReplicaStarted" && !started) {
      started = true;
      s.started = at;
    } else if (e.type() == "ImagePulled" && s.ready < 0) {
      INFO(e.reason());
      // "was on node-0 already" for a cache hit, "pulled on node-0" for a pull.
      REQUIRE(absl::StrContains(e.reason(), "already") == (mode == Mode::kCached));
      s.ready = at;
      s.bytes = PulledBytes(e.reason());
    }
  }
  REQUIRE(started);
  REQUIRE((s.ready >= 0) == (mode != Mode::kHost));
  // The agent removes a container's bundle and overlay after it reports the exit: the next job
  // starts once that is done, not beside it.
  const std::string containers = c.AgentWorkDir(0) + "/containers";
  REQUIRE(Eventually([&] {
    std::error_code ec;
    return !std::filesystem::exists(containers, ec) || std::filesystem::is_empty(containers, ec);
  }));
  return s;
}

// Restarts agent 0 with an empty --image-dir of its own (the last one removed) and waits until it
// has registered again, ready and able to run images.
void RestartWithFreshImageDir(MiniCluster& c, int n) {
  namespace fs = std::filesystem;
  const std::string dir = absl::StrCat(c.AgentWorkDir(0), "/images-", n);
  const int64_t registered = TimestampToMs(c.GetNode(NodeName(0)).register_time());
  c.SetAgentArgs(0, {"--image-dir", dir});
  c.KillAgent(0, SIGTERM);
  c.StartAgent(0);
  c.WaitForNode(
      NodeName(0),
      [&](const v1::Node& node) {
        auto images = node.labels().find("trainctl.io/images");
        return node.connected() && node.state() == v1::NODE_STATE_READY &&
               TimestampToMs(node.register_time()) > registered && images != node.labels().end() &&
               images->second == "true";
      },
      std::chrono::seconds(60));
  std::error_code ignored;
  if (n > 0) fs::remove_all(absl::StrCat(c.AgentWorkDir(0), "/images-", n - 1), ignored);
}

// The nearest-rank percentile of sorted `v`, as the other benchmarks take it.
double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

std::string Cell(const std::vector<double>& v) {
  if (v.empty()) return "-";
  char buf[64];
  snprintf(buf, sizeof buf, "%.0f / %.0f", Pct(v, 0.5), Pct(v, 0.9));
  return buf;
}

struct Row {
  const char* name;
  std::vector<double> started, succeeded, ready;
};

TEST_CASE("replica start latency: host process, cached image, pulled image", "[bench]") {
  if (const std::string why = OciTestsUnavailable(); !why.empty()) {
    WARN("bench_image_start: " << why << "; skipped");
    printf("bench_image_start: skipped: %s\n", why.c_str());
    return;
  }
  const int rounds = Rounds();

  TempDir reg_dir;
  absl::StatusOr<std::unique_ptr<TestRegistry>> registry = TestRegistry::Start(reg_dir.path());
  INFO((registry.ok() ? "" : registry.status().ToString()));
  REQUIRE(registry.ok());
  ImageBuilder builder(reg_dir.path() + "/buildah");
  ImageSpec spec;
  spec.files["/etc/os-release"] = "ID=trainctl-bench\n";
  const std::string image = (*registry)->host() + "/bench/busy:1";
  absl::StatusOr<std::string> digest = builder.BuildAndPush(spec, image);
  INFO((digest.ok() ? "" : digest.status().ToString()));
  REQUIRE(digest.ok());

  ClusterOptions o;
  o.agents = 1;
  o.agent.cpus = 2;
  o.agent.extra_args = {"--insecure-registry", (*registry)->host()};
  MiniCluster c(o);

  Row host{"host process", {}, {}, {}};
  Row cached{"image, cached", {}, {}, {}};
  Row pulled{"image, pulled", {}, {}, {}};
  int64_t bytes = 0;
  // Round 0 warms up (page cache, the tools' first runs) and is not counted.
  for (int round = 0; round <= rounds; ++round) {
    RestartWithFreshImageDir(c, round);
    const Sample p = RunJob(c, Mode::kPulled, image);
    const Sample k = RunJob(c, Mode::kCached, image);
    const Sample h = RunJob(c, Mode::kHost, image);
    if (round == 0) continue;
    bytes = p.bytes;
    for (auto [row, s] :
         {std::pair<Row*, const Sample*>{&pulled, &p}, {&cached, &k}, {&host, &h}}) {
      row->started.push_back(s->started);
      row->succeeded.push_back(s->succeeded);
      if (s->ready >= 0) row->ready.push_back(s->ready);
    }
  }

  printf(
      "replica start latency, %d rounds (+1 warm-up), one agent; ms from submit (the job's "
      "create_time), median / p90\n",
      rounds);
  printf("image %s, %lld bytes pulled; command /bin/sh -c true\n", image.c_str(),
         static_cast<long long>(bytes));
  printf("%-14s  %-12s  %-15s  %s\n", "", "image ready", "ReplicaStarted", "SUCCEEDED");
  for (const Row* row : {&host, &cached, &pulled}) {
    printf("%-14s  %-12s  %-15s  %s\n", row->name, Cell(row->ready).c_str(),
           Cell(row->started).c_str(), Cell(row->succeeded).c_str());
  }
}

}  // namespace
}  // namespace trainctl::testing

// Catch's own main, with --rounds N added to its flags.
int main(int argc, char* argv[]) {
  Catch::Session session;
  using Catch::clara::Opt;
  session.cli(session.cli() | Opt(trainctl::testing::g_rounds_flag, "N")["--rounds"](
                                  "measured rounds (default: $TRAINCTL_BENCH_ROUNDS, else 10)"));
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  return session.run();
}
