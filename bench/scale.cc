// Benchmark: trainctld with a thousand hosts.
//
// Starts the real trainctld and opens TRAINCTL_BENCH_AGENTS simulated agents (default 1,000;
// bench/sim_agent.h) over real gRPC streams from this one process: each registers a 32-cpu node,
// heartbeats at the interval trainctld asks for, and answers every launch as an agent would:
// ReplicaStarted at once, ReplicaExited (code 0) after the job's drawn duration (SIM_MS in its env,
// 1 to 5 s), and an exit by signal 15 for a stop. Nothing runs. Then, in phases:
//   heartbeats  30 s of idle agents: trainctld's CPU per heartbeat, and per second per 1,000 hosts;
//   admission   50 projects, each with a quota of one running job and a job that runs all along,
//               and 10,000 jobs queued behind them; the quotas open, and the time until every
//               one of those jobs launched gives the admissions per second end to end with
//               10,000 queued, and trainctld's metrics the time its admission passes took to
//               decide them (decisions per second);
//   placement   the other jobs (TRAINCTL_BENCH_JOBS in all, default 100,000) submitted from
//               TRAINCTL_BENCH_SUBMITTERS threads (default 128: each waits for its answer, so
//               with fewer the clients set the pace and trainctld's turns stay small), of 1 to 64
//               replicas (mostly small), priorities 0/50/100, across the 50 projects: placed
//               replicas per second from the first submit to the last launch;
// each phase with the CPU time of trainctld and of this process; and trainctld's RSS at the end,
// its reconcile loop's turn latencies and the time its scheduling passes took to admit the jobs
// (the summaries trainctld logs when it stops).
//
//   build/bin/bench_scale
//   TRAINCTL_BENCH_AGENTS=200 TRAINCTL_BENCH_JOBS=20000 build/bin/bench_scale   # a short run
//   TRAINCTL_BENCH_TOPOLOGY=1 build/bin/bench_scale   # with topology labels and placement
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "bench/admission_metrics.h"
#include "bench/sim_agent.h"
#include "common/mutex_mode.h"
#include "tests/integration/mini_cluster.h"
#include "trainctl/v1/agent.grpc.pb.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace {

namespace v1 = trainctl::v1;
using trainctl::bench::Clock;
using trainctl::bench::Counts;
using trainctl::bench::SimAgent;
using trainctl::bench::Timers;
using trainctl::testing::BinDir;
using trainctl::testing::ProcessMemoryKb;
using trainctl::testing::ReadTextFile;

int EnvInt(const char* name, int fallback) {
  const char* env = getenv(name);
  return env != nullptr ? std::max(1, atoi(env)) : fallback;
}

constexpr int kProjects = 50;
constexpr int kQueued = 10'000;
constexpr int kNodeCpus = 32;
// TRAINCTL_BENCH_TOPOLOGY=1: hosts carry 3 levels of topology labels (a block of 100 hosts, a
// rack of 20, the host), gangs of 8 or more replicas ask placement.packWithin: topology.rack and
// smaller jobs preferWithin: topology.block.
bool Topology() { return getenv("TRAINCTL_BENCH_TOPOLOGY") != nullptr; }

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A process's CPU time so far (user + system), in seconds.
double CpuSeconds(pid_t pid) {
  const std::string stat = ReadTextFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::vector<std::string> fields;
  std::string field;
  for (char c : stat.substr(paren + 2)) {
    if (c == ' ') {
      fields.push_back(field);
      field.clear();
    } else {
      field += c;
    }
  }
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the ")".
  if (fields.size() < 13) return 0;
  return (std::stod(fields[11]) + std::stod(fields[12])) / sysconf(_SC_CLK_TCK);
}

// Job i: mostly small, a few large gangs.
v1::JobSpec Spec(int i, std::mt19937& rng) {
  v1::JobSpec spec;
  spec.set_display_name(absl::StrCat("sim-", i));
  spec.set_project(absl::StrCat("team-", i % kProjects));
  spec.set_priority(std::vector<int>{0, 50, 100}[i % 3]);
  // Benchmarks run without the fabric check (bench_gang_restart_latency has a row with it).
  spec.mutable_fault_tolerance()->set_gang_check(v1::GANG_CHECK_OFF);
  const int draw = static_cast<int>(rng() % 100);
  const int replicas = draw < 70   ? 1 + static_cast<int>(rng() % 4)
                       : draw < 95 ? 8 + static_cast<int>(rng() % 9)
                                   : 32 + static_cast<int>(rng() % 33);
  const std::string ms = absl::StrCat(1000 + rng() % 4001);
  for (const auto& [name, count] :
       {std::pair<const char*, int>{"chief", 1}, {"worker", replicas - 1}}) {
    if (count == 0) continue;
    v1::WorkerPool* pool = spec.add_worker_pools();
    pool->set_name(name);
    pool->set_replica_count(count);
    pool->add_command("/bin/true");
    (*pool->mutable_env())["SIM_MS"] = ms;
    pool->mutable_resources()->set_cpu(1);
    pool->mutable_resources()->set_memory_mb(1024);
  }
  if (Topology()) {
    v1::Placement* placement = spec.mutable_scheduling()->mutable_placement();
    if (replicas >= 8) {
      placement->set_pack_within("topology.rack");
    } else {
      placement->set_prefer_within("topology.block");
    }
  }
  return spec;
}

int Replicas(const v1::JobSpec& spec) {
  int n = 0;
  for (const v1::WorkerPool& p : spec.worker_pools()) n += p.replica_count();
  return n;
}

// Submits specs [first, last) from `threads` threads; returns the replicas submitted.
int64_t SubmitAll(const std::vector<v1::JobSpec>& specs, size_t first, size_t last,
                  const std::string& address, int threads) {
  std::atomic<size_t> next{first};
  std::atomic<int64_t> replicas{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      auto stub =
          v1::JobService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
      for (size_t i = next++; i < last; i = next++) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        v1::CreateJobRequest req;
        *req.mutable_spec() = specs[i];
        v1::Job job;
        grpc::Status s = stub->CreateJob(&ctx, req, &job);
        if (!s.ok()) {
          if (failed++ < 5) fprintf(stderr, "CreateJob: %s\n", s.error_message().c_str());
          continue;
        }
        replicas += Replicas(specs[i]);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  REQUIRE(failed == 0);
  return replicas;
}

// Every project's quota: one running job, or (`open`) no limit.
void SetQuotas(const std::string& address, bool open) {
  auto stub =
      v1::QuotaService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  for (int p = 0; p < kProjects; ++p) {
    grpc::ClientContext ctx;
    v1::SetQuotaRequest req;
    req.mutable_quota()->set_project(absl::StrCat("team-", p));
    if (!open) req.mutable_quota()->set_max_running_jobs(1);
    v1::Project out;
    REQUIRE(stub->SetQuota(&ctx, req, &out).ok());
  }
}

bool WaitFor(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

TEST_CASE("trainctld with a thousand simulated agents", "[bench]") {
  // The simulated hosts share the machine with trainctld: they take as little of it as they can
  // (the lock graph off, and jemalloc: bench/CMakeLists.txt), as trainctld does.
  trainctl::UseBuildMutexChecks();
  const int agents = EnvInt("TRAINCTL_BENCH_AGENTS", 1000);
  const int jobs = std::max(kQueued + 1, EnvInt("TRAINCTL_BENCH_JOBS", 100'000));
  const int submitters = EnvInt("TRAINCTL_BENCH_SUBMITTERS", 128);
  char tmpl[] = "/tmp/trainctl-scale-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  trainctl::testing::Process daemon(
      {BinDir() + "/trainctld", "--data-dir", dir, "--listen", "127.0.0.1:0", "--http-listen",
       "127.0.0.1:0", "--max-agent-streams-per-peer", absl::StrCat(agents + 10),
       "--max-new-nodes-per-peer", absl::StrCat(agents + 10)},
      dir + "/trainctld.log");
  std::string address;
  REQUIRE(WaitFor(
      [&] {
        address = std::string(absl::StripAsciiWhitespace(ReadTextFile(dir + "/trainctld.addr")));
        return !address.empty();
      },
      std::chrono::seconds(30)));
  // Written before trainctld.addr.
  const std::string http(absl::StripAsciiWhitespace(ReadTextFile(dir + "/trainctld.http-addr")));

  Timers timers;
  Counts counts;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::AgentService::Stub>> stubs;
  for (int c = 0; c < 8; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("trainctl.bench.channel", c);  // a connection of its own
    channels.push_back(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
    stubs.push_back(v1::AgentService::NewStub(channels.back()));
  }
  std::vector<std::unique_ptr<SimAgent>> sims;
  const auto connect_start = Clock::now();
  for (int i = 0; i < agents; ++i) {
    sims.push_back(std::make_unique<SimAgent>(i, kNodeCpus, Topology(), &timers, &counts));
    sims.back()->Start(stubs[i % stubs.size()].get());
  }
  REQUIRE(WaitFor([&] { return counts.registered == agents; }, std::chrono::seconds(120)));
  printf("%d agents registered in %.1f s\n", agents, Seconds(Clock::now() - connect_start));

  // Heartbeats of idle agents.
  {
    const double cpu0 = CpuSeconds(daemon.pid());
    const int64_t hb0 = counts.heartbeats;
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(30));
    const double cpu = CpuSeconds(daemon.pid()) - cpu0;
    const double secs = Seconds(Clock::now() - t0);
    const int64_t beats = counts.heartbeats - hb0;
    printf(
        "heartbeats: %lld in %.1f s; trainctld CPU %.3f s: %.1f us per heartbeat, %.1f ms of "
        "CPU per second per 1,000 hosts\n",
        static_cast<long long>(beats), secs, cpu, 1e6 * cpu / std::max<int64_t>(1, beats),
        1e3 * cpu / secs * 1000.0 / agents);
  }

  std::mt19937 rng(20261126);
  std::vector<v1::JobSpec> specs;
  int64_t total_replicas = 0;
  for (int i = 0; i < jobs; ++i) {
    specs.push_back(Spec(i, rng));
    total_replicas += Replicas(specs.back());
  }

  // Admission with 10,000 queued, behind one job per project that runs until cancelled.
  SetQuotas(address, /*open=*/false);
  std::vector<v1::JobSpec> blockers;
  for (int p = 0; p < kProjects; ++p) {
    v1::JobSpec spec = Spec(p, rng);
    spec.mutable_worker_pools()->DeleteSubrange(1, spec.worker_pools_size() - 1);
    (*spec.mutable_worker_pools(0)->mutable_env())["SIM_MS"] = "86400000";
    blockers.push_back(spec);
  }
  SubmitAll(blockers, 0, blockers.size(), address, submitters);
  REQUIRE(WaitFor([&] { return counts.launches == kProjects; }, std::chrono::seconds(60)));
  {
    const auto t0 = Clock::now();
    SubmitAll(specs, 0, kQueued, address, submitters);
    printf("admission: %d jobs queued in %.1f s (%.0f CreateJob/s)\n", kQueued,
           Seconds(Clock::now() - t0), kQueued / Seconds(Clock::now() - t0));
    REQUIRE(counts.launches == kProjects);
    const auto t1 = Clock::now();
    const double daemon_cpu = CpuSeconds(daemon.pid());
    const double own_cpu = CpuSeconds(getpid());
    const trainctl::bench::AdmissionReading passes0 = trainctl::bench::ReadAdmission(http);
    SetQuotas(address, /*open=*/true);
    REQUIRE(WaitFor([&] { return counts.JobsLaunched() == kQueued + kProjects; },
                    std::chrono::seconds(600)));
    const double secs = Seconds(Clock::now() - t1);
    printf(
        "admission: all %d queued jobs admitted and launched %.2f s after the quotas opened: "
        "%.0f decisions/s\n",
        kQueued, secs, kQueued / secs);
    printf("admission: CPU of trainctld %.1f s, of the simulated agents and clients %.1f s\n",
           CpuSeconds(daemon.pid()) - daemon_cpu, CpuSeconds(getpid()) - own_cpu);
    const trainctl::bench::AdmissionReading passes = trainctl::bench::ReadAdmission(http);
    printf(
        "admission: trainctld's admission passes decided those %.0f admissions in %.3f s: "
        "%.0f decisions/s with up to %d queued\n",
        passes.admitted - passes0.admitted, passes.seconds - passes0.seconds,
        (passes.admitted - passes0.admitted) / std::max(passes.seconds - passes0.seconds, 1e-9),
        kQueued);
  }

  // Placement of the rest.
  {
    const auto t0 = Clock::now();
    const double daemon_cpu = CpuSeconds(daemon.pid());
    const double own_cpu = CpuSeconds(getpid());
    const int64_t launched0 = counts.launches;
    SubmitAll(specs, kQueued, specs.size(), address, submitters);
    const double submit_secs = Seconds(Clock::now() - t0);
    printf("placement: %d more jobs submitted in %.1f s (%.0f CreateJob/s)\n", jobs - kQueued,
           submit_secs, (jobs - kQueued) / submit_secs);
    REQUIRE(WaitFor([&] { return counts.launches >= total_replicas + kProjects; },
                    std::chrono::seconds(1800)));
    Clock::time_point last;
    {
      std::lock_guard<std::mutex> lock(counts.mu);
      last = counts.last_launch;
    }
    const double secs = Seconds(last - t0);
    printf("placement: %lld replicas of %d jobs placed and launched in %.1f s: %.0f replicas/s\n",
           static_cast<long long>(counts.launches - launched0), jobs - kQueued, secs,
           (counts.launches - launched0) / secs);
    printf("placement: CPU of trainctld %.1f s, of the simulated agents and clients %.1f s\n",
           CpuSeconds(daemon.pid()) - daemon_cpu, CpuSeconds(getpid()) - own_cpu);
  }
  REQUIRE(WaitFor([&] { return counts.exits >= total_replicas; }, std::chrono::seconds(600)));
  // The jobs that ran all along are cancelled: their replicas are stopped.
  {
    auto stub =
        v1::JobService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    v1::ListJobsRequest running;
    running.add_states(v1::JOB_STATE_RUNNING);
    running.set_page_size(1000);
    grpc::ClientContext ctx;
    v1::ListJobsResponse resp;
    REQUIRE(stub->ListJobs(&ctx, running, &resp).ok());
    for (const v1::Job& job : resp.jobs()) {
      grpc::ClientContext cancel_ctx;
      v1::CancelJobRequest req;
      req.set_id(job.id());
      v1::Job out;
      REQUIRE(stub->CancelJob(&cancel_ctx, req, &out).ok());
    }
  }
  REQUIRE(WaitFor([&] { return counts.exits >= total_replicas + kProjects; },
                  std::chrono::seconds(60)));
  printf("trainctld RSS at the end: %.0f MB (peak %.0f MB)\n",
         ProcessMemoryKb(daemon.pid(), "VmRSS") / 1024.0,
         ProcessMemoryKb(daemon.pid(), "VmHWM") / 1024.0);
  timers.Stop();
  for (auto& sim : sims) sim->Close();
  daemon.Stop();
  // The reconcile loop's summaries, logged as it stopped: its turns, and the time its scheduling
  // passes took to admit the jobs of both phases.
  std::string log = ReadTextFile(dir + "/trainctld.log");
  for (const char* summary : {"reconcile loop:", "admission: "}) {
    for (size_t at = log.find(summary); at != std::string::npos; at = log.find(summary, at + 1)) {
      printf("%s\n", log.substr(at, log.find('\n', at) - at).c_str());
    }
  }
  if (getenv("TRAINCTL_KEEP_TEST_DIRS") != nullptr) {
    printf("trainctld's data directory kept in %s\n", dir.c_str());
  } else {
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
