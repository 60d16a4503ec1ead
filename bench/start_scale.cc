// Benchmark: trainctld's start with a year of jobs in its database.
//
// Fills a data dir's database with TRAINCTL_BENCH_JOBS job rows (default 1,000,000), of which
// TRAINCTL_BENCH_LIVE are live (default 10,000: half RUNNING on 100 nodes, half QUEUED behind
// their project's quota). Every row is what trainctld writes: the live jobs, nodes and runs come
// from a real scheduler core; each ended job is a copy of a 4-replica job the core ran to the
// end (its attempt, 4 runs and 3 events), ended between 1 and 85 days ago. Then starts the real
// trainctld on it TRAINCTL_BENCH_STARTS times (default 3) and prints, for each start, the time
// from exec to the first GetJob answered (of a live job, and of an ended one, which is read from
// the database) and trainctld's resident memory then (VmRSS) and at its peak (VmHWM).
//
// A second case is a burst: TRAINCTL_BENCH_BURST jobs (default 100,000) that failed within the
// last minute, all inside --finished-job-cache, beside the live ones. A start loads only the
// --finished-job-cache-jobs (10,000) that ended last, in the store's query; the others are read
// from the database. It prints the same times and memory, for one start.
//
//   build/bin/bench_start_scale
//   TRAINCTL_BENCH_JOBS=100000 build/bin/bench_start_scale
//   TRAINCTL_BENCH_DIR=/var/tmp/start-scale build/bin/bench_start_scale   # keeps and reuses it
//   build/bin/bench_start_scale "*burst*"                                # the burst alone
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/core.h"
#include "storage/sqlite_store.h"
#include "tests/integration/mini_cluster.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace {

namespace v1 = trainctl::v1;
namespace sched = trainctl::sched;
using trainctl::storage::Batch;
using trainctl::storage::SqliteStore;
using Clock = std::chrono::steady_clock;

int EnvInt(const char* name, int fallback) {
  const char* env = getenv(name);
  return env != nullptr ? std::max(1, atoi(env)) : fallback;
}

constexpr int kNodes = 100;
constexpr int kEventsPerEndedJob = 3;
constexpr int64_t kDayMs = 86'400'000;

v1::JobSpec Spec(int i) {
  v1::JobSpec spec;
  spec.set_display_name(absl::StrCat("train-", i));
  spec.set_project(absl::StrCat("team-", i % 50));
  (*spec.mutable_labels())["team"] = absl::StrCat("team-", i % 50);
  // Benchmarks run without the fabric check (bench_gang_restart_latency has a row with it).
  spec.mutable_fault_tolerance()->set_gang_check(v1::GANG_CHECK_OFF);
  // A chief and 3 workers.
  for (const auto& [name, count] : {std::pair<const char*, int>{"chief", 1}, {"worker", 3}}) {
    v1::WorkerPool* pool = spec.add_worker_pools();
    pool->set_name(name);
    pool->set_replica_count(count);
    for (const char* arg :
         {"python3", "-m", "torch.distributed.run", "train.py", "--epochs", "90"}) {
      pool->add_command(arg);
    }
    (*pool->mutable_env())["DATASET"] = "/data/imagenet";
    pool->mutable_resources()->set_cpu(0.1);
    pool->mutable_resources()->set_memory_mb(64);
  }
  return spec;
}

v1::Register Registration(int n) {
  v1::Register r;
  r.set_node(absl::StrCat("node-", n));
  r.set_address(absl::StrCat("10.0.", n / 256, ".", n % 256));
  r.mutable_allocatable()->set_cpu(64);
  r.mutable_allocatable()->set_memory_mb(1 << 20);
  *r.mutable_capacity() = r.allocatable();
  r.set_agent_instance("bench");
  return r;
}

// Starts every launch in `fx` (ReplicaStarted from its node); returns (node, run id) of each.
std::vector<std::pair<std::string, std::string>> StartLaunches(sched::Core& core,
                                                               const sched::Effects& fx,
                                                               absl::Time now,
                                                               sched::Effects* out) {
  std::vector<std::pair<std::string, std::string>> runs;
  for (sched::Command c : fx.commands) {
    if (!c.message.has_launch()) continue;
    const std::string node = c.node;
    v1::ReplicaStarted started;
    started.set_run_id(std::move(c).Take().launch().run_id());
    started.set_pid(1000);
    runs.emplace_back(node, started.run_id());
    core.ReplicaStarted(node, started, now, out);
  }
  return runs;
}

// Appends what `fx` decided to `b`, as the reconcile loop commits a turn.
void AddEffects(const sched::Core& core, sched::Effects& fx, Batch* b) {
  for (const std::string& id : fx.jobs) b->jobs.push_back(sched::ToProto(*core.FindJob(id)));
  for (const auto& [job_id, number] : fx.attempts) {
    for (const sched::Attempt& a : core.FindJob(job_id)->attempts) {
      if (a.number == number) b->attempts.push_back({job_id, sched::ToProto(a)});
    }
  }
  for (sched::ReplicaRun& r : fx.runs) b->runs.push_back(std::move(r));
  for (const std::string& name : fx.nodes) b->nodes.push_back(*core.FindNode(name));
  for (sched::Event& e : fx.events) b->events.push_back(std::move(e));
  fx = sched::Effects();
}

// The rows of the live jobs, and (`ended`) those of one job the core ran to SUCCEEDED: the
// template of every ended job.
Batch LiveRows(int live, absl::Time now, Batch* ended) {
  sched::CoreOptions options;
  options.id_seed = 42;
  options.checkpoint_root = "/ckpt";
  // Half the live jobs run; the quota keeps the others QUEUED.
  options.default_quota.max_running_jobs = std::max(1, live / 2 / 50);
  sched::Core core(options);
  Batch b;
  sched::Effects fx;
  for (int n = 0; n < kNodes; ++n) core.AgentRegistered(Registration(n), now, &fx);
  {
    // The template: one job of its own project, run to the end.
    v1::JobSpec spec = Spec(0);
    spec.set_project("template");
    sched::Effects mine;
    const std::string id = (*core.SubmitJob(spec, now, &mine))->id;
    core.Schedule(now, &mine);
    const sched::Effects placed = mine;
    for (const auto& [node, run] : StartLaunches(core, placed, now + absl::Seconds(1), &mine)) {
      v1::ReplicaExited exited;
      exited.set_run_id(run);
      exited.set_exit_code(0);
      core.ReplicaExited(node, exited, now + absl::Minutes(1), &mine);
    }
    mine.jobs.insert(id);
    AddEffects(core, mine, ended);
    (void)core.DeleteJob(id, "", now, &fx);  // only its rows are wanted
    fx = sched::Effects();
  }
  for (int i = 0; i < live; ++i) (void)core.SubmitJob(Spec(i), now, &fx);
  core.Schedule(now, &fx);
  sched::Effects started;
  StartLaunches(core, fx, now + absl::Milliseconds(500), &started);
  AddEffects(core, fx, &b);
  AddEffects(core, started, &b);
  for (const auto& [id, job] : core.jobs()) b.jobs.push_back(sched::ToProto(job));
  for (const auto& [name, node] : core.nodes()) b.nodes.push_back(node);
  return b;
}

// Ended job `i`: the template's rows under a new id, ended `age_ms` before `now`; every tenth
// FAILED, or each one with `failed`.
void AddEnded(const Batch& tmpl, int i, int64_t now, int64_t age_ms, bool failed, Batch* b) {
  const std::string& old_id = tmpl.jobs.back().id();
  const std::string id = absl::StrCat("j-hist-", i);
  v1::Job job = tmpl.jobs.back();
  job.set_id(id);
  job.set_state(failed || i % 10 == 0 ? v1::JOB_STATE_FAILED : v1::JOB_STATE_SUCCEEDED);
  job.set_project(absl::StrCat("team-", i % 50));
  *job.mutable_create_time() = trainctl::MsToTimestamp(now - age_ms - 3'600'000);
  *job.mutable_update_time() = trainctl::MsToTimestamp(now - age_ms);
  b->jobs.push_back(std::move(job));
  for (const auto& [job_id, attempt] : tmpl.attempts) {
    if (job_id == old_id) b->attempts.push_back({id, attempt});
  }
  for (sched::ReplicaRun r : tmpl.runs) {
    if (r.job_id != old_id) continue;
    r.run_id = absl::StrReplaceAll(r.run_id, {{old_id, id}});
    r.job_id = id;
    b->runs.push_back(std::move(r));
  }
  int events = 0;
  for (sched::Event e : tmpl.events) {
    if (e.job_id != old_id || events++ == kEventsPerEndedJob) continue;
    e.job_id = id;
    e.time_ms = now - age_ms;
    b->events.push_back(std::move(e));
  }
}

// Fills `db`; returns the id of a live job. The ended jobs ended between 1 and 85 days ago, or
// with `burst` all FAILED within the last minute.
std::string Fill(const std::string& db, int jobs, int live, bool burst = false) {
  auto store = SqliteStore::Open(db);
  if (!store.ok()) {
    fprintf(stderr, "%s\n", store.status().ToString().c_str());
    exit(1);
  }
  const int64_t now = trainctl::WallNowMs();
  Batch tmpl;
  Batch rows = LiveRows(live, absl::FromUnixMillis(now), &tmpl);
  const std::string live_id = rows.jobs.back().id();
  if (absl::Status s = (*store)->Commit(rows); !s.ok()) {
    fprintf(stderr, "%s\n", s.ToString().c_str());
    exit(1);
  }
  const auto start = Clock::now();
  const int ended = jobs - live;
  Batch b;
  for (int i = 0; i < ended; ++i) {
    // Spread over days 1..85 before now (within the default retention), or over the last
    // minute; newest last.
    const int64_t span = burst ? 60'000 : int64_t{84} * kDayMs;
    const int64_t age = (burst ? 0 : kDayMs) + span * (ended - i) / std::max(1, ended);
    AddEnded(tmpl, i, now, age, burst, &b);
    if (b.jobs.size() == 5000 || i == ended - 1) {
      if (absl::Status s = (*store)->Commit(b); !s.ok()) {
        fprintf(stderr, "%s\n", s.ToString().c_str());
        exit(1);
      }
      b = Batch();
      if ((i + 1) % 100'000 == 0) {
        fprintf(stderr, "  %d ended jobs written (%.0f s)\n", i + 1,
                std::chrono::duration<double>(Clock::now() - start).count());
      }
    }
  }
  return live_id;
}

// Whether GetJob(id) answers OK within `deadline`.
bool Answers(v1::JobService::Stub& stub, const std::string& id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  v1::GetJobRequest req;
  req.set_id(id);
  v1::Job job;
  return stub.GetJob(&ctx, req, &job).ok();
}

// Starts trainctld on `dir` with `flags`, waits for GetJob of `live_id` to answer, asks for
// `ended_id` (from the database), prints the times and memory as start `n`, and stops it.
void MeasureStart(const std::string& dir, const std::string& live_id, const std::string& ended_id,
                  const std::vector<std::string>& flags, int n) {
  const auto t0 = Clock::now();
  std::vector<std::string> argv = {trainctl::testing::BinDir() + "/trainctld",
                                   "--data-dir",
                                   dir,
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--http-listen",
                                   "off",
                                   "--log-level",
                                   "warn"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  trainctl::testing::Process daemon(argv, dir + "/trainctld.log");
  std::string address;
  std::unique_ptr<v1::JobService::Stub> stub;
  double live_ms = -1, ended_ms = -1;
  while (Clock::now() - t0 < std::chrono::seconds(120)) {
    if (stub == nullptr) {
      address = std::string(
          absl::StripAsciiWhitespace(trainctl::testing::ReadTextFile(dir + "/trainctld.addr")));
      if (!address.empty()) {
        stub = v1::JobService::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
      }
    }
    if (stub != nullptr && Answers(*stub, live_id)) {
      live_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (live_ms >= 0 && Answers(*stub, ended_id)) {
    ended_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  const int64_t rss = trainctl::testing::ProcessMemoryKb(daemon.pid(), "VmRSS");
  const int64_t peak = trainctl::testing::ProcessMemoryKb(daemon.pid(), "VmHWM");
  daemon.Stop();
  std::filesystem::remove(dir + "/trainctld.addr");
  printf(
      "start %d: a live job answered after %.0f ms, an ended one (from the database) after "
      "%.0f ms; RSS %.1f MB, peak %.1f MB\n",
      n, live_ms, ended_ms, rss / 1024.0, peak / 1024.0);
}

TEST_CASE("trainctld starts on a database of many jobs", "[bench]") {
  const int jobs = EnvInt("TRAINCTL_BENCH_JOBS", 1'000'000);
  const int live = std::min(jobs, EnvInt("TRAINCTL_BENCH_LIVE", 10'000));
  const int starts = EnvInt("TRAINCTL_BENCH_STARTS", 3);
  const char* kept = getenv("TRAINCTL_BENCH_DIR");
  std::string dir;
  if (kept != nullptr) {
    dir = kept;
    std::filesystem::create_directories(dir);
  } else {
    char tmpl[] = "/tmp/trainctl-start-scale-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  const std::string db = dir + "/trainctl.db";
  const std::string live_marker = dir + "/live-job";
  std::string live_id;
  if (std::filesystem::exists(live_marker)) {
    live_id = std::string(absl::StripAsciiWhitespace(trainctl::testing::ReadTextFile(live_marker)));
    printf("reusing %s\n", db.c_str());
  } else {
    printf("writing %d jobs (%d live) to %s ...\n", jobs, live, db.c_str());
    const auto t0 = Clock::now();
    live_id = Fill(db, jobs, live);
    FILE* f = fopen(live_marker.c_str(), "w");
    fprintf(f, "%s\n", live_id.c_str());
    fclose(f);
    printf("written in %.1f s, %.0f MB\n", std::chrono::duration<double>(Clock::now() - t0).count(),
           std::filesystem::file_size(db) / 1e6);
  }
  // The oldest ended job: the deepest in the database's indexes.
  for (int s = 0; s < starts; ++s) MeasureStart(dir, live_id, "j-hist-0", {}, s + 1);
  if (kept == nullptr) std::filesystem::remove_all(dir);
}

TEST_CASE("trainctld starts after a burst of failures within --finished-job-cache", "[bench]") {
  const int burst = EnvInt("TRAINCTL_BENCH_BURST", 100'000);
  const int live = EnvInt("TRAINCTL_BENCH_LIVE", 10'000);
  char tmpl[] = "/tmp/trainctl-start-burst-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  printf("writing %d jobs that failed within the last minute and %d live ones ...\n", burst, live);
  const auto t0 = Clock::now();
  const std::string live_id = Fill(dir + "/trainctl.db", burst + live, live, /*burst=*/true);
  printf("written in %.1f s, %.0f MB\n", std::chrono::duration<double>(Clock::now() - t0).count(),
         std::filesystem::file_size(dir + "/trainctl.db") / 1e6);
  // Every failure is within the cache time however long the writing took; the first one failed
  // longest ago, so it is one a start leaves in the database.
  MeasureStart(dir, live_id, "j-hist-0", {"--finished-job-cache", "1h"}, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
