// Benchmark: how many short jobs the whole launch path completes per second, against what the
// machine itself can spawn.
//
// Starts trainctld and two agents (preflight on, as by default), submits TRAINCTL_BENCH_JOBS
// (default 5,000) one-replica `/bin/true` jobs from four client threads, and waits until every
// one has ended. Prints:
//   - jobs completed per second, from the first submit to the last job's end;
//   - submit -> start (replica start time - job create time) and exit -> scheduler knows
//     (job end time, set in the turn that commits the exit, - replica end time, taken when the
//     replica was reaped) percentiles;
//   - the CPU seconds of trainctld and of each agent (own, and of their reaped children: shims
//     and replicas);
//   - the rate of a plain sequential posix_spawn + waitpid loop of the same command (and of
//     `sh -c true`), measured in the same run: absolute rates differ several-fold between
//     machines of one kind, the ratio much less.
//
//   build/bin/bench_throughput
//   TRAINCTL_BENCH_JOBS=1000 build/bin/bench_throughput
//
// A benchmark, not a test: it asserts only that every job succeeded.
#include <grpcpp/grpcpp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <vector>

#include "google/protobuf/util/time_util.h"
#include "tests/integration/mini_cluster.h"

extern char** environ;

namespace trainctl::testing {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kThreads = 4;

int Jobs() {
  const char* env = getenv("TRAINCTL_BENCH_JOBS");
  return env != nullptr ? std::max(kThreads, atoi(env)) : 5000;
}

// Seconds of CPU a process used: its own (utime + stime) and its reaped children's.
struct CpuSeconds {
  double self = 0;
  double children = 0;
};

CpuSeconds CpuOf(pid_t pid) {
  std::string stat = ReadTextFile("/proc/" + std::to_string(pid) + "/stat");
  CpuSeconds out;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return out;
  std::istringstream in(stat.substr(paren + 2));
  std::string field;
  std::vector<std::string> fields;
  while (in >> field) fields.push_back(field);
  // After the comm: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
  if (fields.size() < 15) return out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  out.self = (std::stod(fields[11]) + std::stod(fields[12])) / tick;
  out.children = (std::stod(fields[13]) + std::stod(fields[14])) / tick;
  return out;
}

// Spawns and reaps `argv` `n` times in a row; returns spawns per second.
double SpawnLoopRate(const std::vector<std::string>& args, int n) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
  }
  return n / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string Describe(const std::vector<double>& ms) {
  char buf[160];
  snprintf(buf, sizeof(buf), "p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms",
           Percentile(ms, 0.5), Percentile(ms, 0.9), Percentile(ms, 0.99), Percentile(ms, 1.0));
  return buf;
}

// Every job, newest first, through ListJobs pages.
std::vector<v1::Job> AllJobs(MiniCluster& c) {
  std::vector<v1::Job> out;
  v1::ListJobsRequest req;
  req.set_page_size(1000);
  req.set_view(v1::JOB_VIEW_BASIC);
  while (true) {
    grpc::ClientContext ctx;
    v1::ListJobsResponse resp;
    REQUIRE(c.jobs().ListJobs(&ctx, req, &resp).ok());
    for (v1::Job& job : *resp.mutable_jobs()) out.push_back(std::move(job));
    if (resp.next_page_token().empty()) return out;
    req.set_page_token(resp.next_page_token());
  }
}

// True once no job is in a non-terminal state.
bool AllEnded(MiniCluster& c) {
  v1::ListJobsRequest req;
  req.set_page_size(1);
  req.set_view(v1::JOB_VIEW_BASIC);
  for (v1::JobState s : {v1::JOB_STATE_QUEUED, v1::JOB_STATE_PENDING, v1::JOB_STATE_RUNNING,
                         v1::JOB_STATE_CANCELLING}) {
    req.add_states(s);
  }
  grpc::ClientContext ctx;
  v1::ListJobsResponse resp;
  return c.jobs().ListJobs(&ctx, req, &resp).ok() && resp.jobs_size() == 0;
}

TEST_CASE("one-replica /bin/true jobs through two agents", "[bench]") {
  const int jobs = Jobs();
  ClusterOptions opts;
  opts.agents = 2;
  opts.agent.cpus = 64;
  opts.agent.memory_mb = 65536;
  // As the systemd unit runs it: run directories and the journal in a tmpfs.
  opts.agent.tmpfs_state = true;
  MiniCluster c(opts);

  v1::CreateJobRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_display_name("bench");
  v1::WorkerPool* pool = spec->add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  pool->add_command("/bin/true");
  pool->mutable_resources()->set_cpu(0.1);
  pool->mutable_resources()->set_memory_mb(16);

  const CpuSeconds daemon_before = CpuOf(c.daemon().pid());
  const CpuSeconds agent0_before = CpuOf(c.agent(0).pid());
  const CpuSeconds agent1_before = CpuOf(c.agent(1).pid());
  std::atomic<int> failures{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < jobs / kThreads; ++i) {
        grpc::ClientContext ctx;
        v1::Job job;
        if (!c.jobs().CreateJob(&ctx, req, &job).ok()) failures++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double submit_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(failures == 0);
  REQUIRE(Eventually([&] { return AllEnded(c); }, std::chrono::minutes(10)));
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const CpuSeconds daemon_after = CpuOf(c.daemon().pid());
  const CpuSeconds agent0_after = CpuOf(c.agent(0).pid());
  const CpuSeconds agent1_after = CpuOf(c.agent(1).pid());

  std::vector<v1::Job> all = AllJobs(c);
  const int submitted = jobs / kThreads * kThreads;
  REQUIRE(static_cast<int>(all.size()) == submitted);
  std::vector<double> submit_to_start, exit_to_known;
  int succeeded = 0;
  for (const v1::Job& job : all) {
    succeeded += job.state() == v1::JOB_STATE_SUCCEEDED ? 1 : 0;
    if (job.replicas_size() != 1) continue;
    const v1::Replica& r = job.replicas(0);
    submit_to_start.push_back(
        static_cast<double>(TimeUtil::DurationToMicroseconds(r.start_time() - job.create_time())) /
        1000.0);
    exit_to_known.push_back(
        static_cast<double>(TimeUtil::DurationToMicroseconds(job.end_time() - r.end_time())) /
        1000.0);
  }
  CHECK(succeeded == submitted);

  // The machine's own limit, measured now that the cluster is idle.
  const double loop_true = SpawnLoopRate({"/bin/true"}, 2000);
  const double loop_sh = SpawnLoopRate({"/bin/sh", "-c", "true"}, 2000);
  const double rate = submitted / total_s;
  printf("%d one-replica /bin/true jobs, 2 agents, preflight on:\n", submitted);
  printf("  completed: %.0f jobs/s (%.2f s; submits took %.2f s)\n", rate, total_s, submit_s);
  printf(
      "  plain spawn loop: /bin/true %.0f/s, sh -c true %.0f/s; jobs/s is %.2fx the /bin/true "
      "loop, %.2fx the sh loop\n",
      loop_true, loop_sh, rate / loop_true, rate / loop_sh);
  printf("  submit -> start:          %s\n", Describe(submit_to_start).c_str());
  printf("  exit -> scheduler knows:  %s\n", Describe(exit_to_known).c_str());
  printf("  CPU s: trainctld %.2f; agent 0 %.2f (+%.2f children); agent 1 %.2f (+%.2f children)\n",
         daemon_after.self - daemon_before.self, agent0_after.self - agent0_before.self,
         agent0_after.children - agent0_before.children, agent1_after.self - agent1_before.self,
         agent1_after.children - agent1_before.children);
}

}  // namespace
}  // namespace trainctl::testing
