// ReconcileLoop: the shell's promises with a real core and a real SQLite store — commands leave
// and readers see only what is committed, a failed commit is neither sent nor acknowledged (its
// callers hear why, changes are refused and reads answered until a write works again), and Stop
// finishes the work already posted.
#include "server/reconcile_loop.h"

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#include "absl/synchronization/mutex.h"
#include "common/watchdog.h"
#include "server/agent_registry.h"
#include "server/job_snapshots.h"
#include "server/state_load.h"
#include "server/watch_hub.h"
#include "storage/sqlite_job_archive.h"
#include "storage/sqlite_store.h"
#include "tests/storage/faulty_vfs.h"

namespace trainctl::server {
namespace {

// A one-shot signal from the loop's or the outbox's thread to the test's that ThreadSanitizer
// sees through (LoopSignal's fast path is an atomic of Debian's uninstrumented Abseil, so
// in the TSan build what the loop wrote before it notified looked unsynchronized).
class LoopSignal {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  bool WaitForNotificationWithTimeout(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] { return done_; });
  }
  bool HasBeenNotified() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// The state of job `id` in the database as another connection sees it; -1 when it has no row.
int CommittedState(const std::string& db_path, const std::string& id) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT state FROM jobs WHERE id = ?", -1, &st, nullptr) ==
          SQLITE_OK);
  sqlite3_bind_text(st, 1, id.c_str(), -1, SQLITE_TRANSIENT);
  const int state = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return state;
}

// An agent's stream that records, at the moment each command is sent, what the database holds
// for the job the command is about.
class RecordingChannel : public AgentChannel {
 public:
  explicit RecordingChannel(std::string db_path) : db_path_(std::move(db_path)) {}
  void Enqueue(sched::Command cmd) override {
    const v1::SchedulerMessage msg = std::move(cmd).Take();
    if (!msg.has_launch()) return;
    const int state = CommittedState(db_path_, msg.launch().job_id());
    absl::MutexLock lock(&mu_);
    launch_states_.push_back(state);
  }
  void Close(const std::string& why) override {
    absl::MutexLock lock(&mu_);
    closed_ = why;
  }
  std::vector<int> launch_states() {
    absl::MutexLock lock(&mu_);
    return launch_states_;
  }
  std::string closed() {
    absl::MutexLock lock(&mu_);
    return closed_;
  }

 private:
  const std::string db_path_;
  absl::Mutex mu_;
  std::vector<int> launch_states_ ABSL_GUARDED_BY(mu_);
  std::string closed_ ABSL_GUARDED_BY(mu_);
};

v1::JobSpec OneReplica() {
  v1::JobSpec spec;
  spec.set_display_name("loop");
  v1::WorkerPool* pool = spec.add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  pool->add_command("/bin/true");
  return spec;
}

v1::Register NodeA() {
  v1::Register reg;
  reg.set_node("node-a");
  reg.set_address("127.0.0.1");
  reg.mutable_allocatable()->set_cpu(4);
  reg.mutable_allocatable()->set_memory_mb(4096);
  *reg.mutable_capacity() = reg.allocatable();
  reg.set_agent_instance("test");
  return reg;
}

// A loop over a real core and store in a temporary directory, with a fake clock. The store's
// writes go through FaultyVfs, so a test can make them fail.
class Fixture {
 public:
  // `retention_ms` > 0: ReconcileLoop::set_job_retention_ms. Jobs leave memory
  // `finished_cache_ms` after they ended; the snapshots read the others from the database.
  // `alive`: ReconcileLoop::set_alive.
  explicit Fixture(int64_t retention_ms = 0, int64_t finished_cache_ms = 10 * 60'000,
                   int64_t finished_cache_jobs = 10'000, std::function<void()> alive = nullptr) {
    char tmpl[] = "/tmp/trainctl-loop-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto store = storage::SqliteStore::Open(db_path(), testing::FaultyVfs::Name());
    REQUIRE(store.ok());
    auto opened = storage::SqliteJobArchive::Open(db_path());
    REQUIRE(opened.ok());
    archive = *std::move(opened);
    snapshots.set_archive(archive.get(), SecretRedactor());
    sched::CoreOptions options;
    options.id_seed = 11;
    options.checkpoint_root = dir_ + "/checkpoints";
    loop =
        std::make_unique<ReconcileLoop>(std::make_unique<sched::Core>(options), std::move(*store),
                                        &registry, &snapshots, [this] { return now_ms.load(); });
    loop->set_reloader(
        [options](storage::Store& s) -> absl::StatusOr<std::unique_ptr<sched::Core>> {
          absl::StatusOr<LoadedState> state = LoadState(s, options);
          if (!state.ok()) return state.status();
          return std::move(state->core);
        });
    loop->set_job_retention_ms(retention_ms);
    loop->set_finished_job_cache_ms(finished_cache_ms);
    loop->set_finished_job_cache_jobs(finished_cache_jobs);
    if (alive) loop->set_alive(std::move(alive));
    loop->Start();
  }
  ~Fixture() {
    loop->Stop();
    std::filesystem::remove_all(dir_);
  }
  std::string db_path() const { return dir_ + "/trainctl.db"; }

  // Posts a submit; `done` runs after the turn's commit with the new job's id, or with the
  // error that kept it from being done.
  void Submit(std::function<void(absl::StatusOr<std::string>)> done) {
    loop->Post(
        [done](Turn& t) {
          absl::StatusOr<const sched::Job*> job = t.core.SubmitJob(OneReplica(), t.now, t.fx);
          absl::StatusOr<std::string> id =
              job.ok() ? absl::StatusOr<std::string>((*job)->id) : job.status();
          t.after_commit->push_back([done, id] { done(id); });
        },
        done);
  }

  std::atomic<int64_t> now_ms{1'000'000};
  AgentRegistry registry;
  WatchHub hub;
  std::unique_ptr<storage::JobArchive> archive;
  JobSnapshots snapshots{&hub};
  std::unique_ptr<ReconcileLoop> loop;

 private:
  std::string dir_;
};

TEST_CASE("a job is readable as soon as its create is answered") {
  Fixture f;
  LoopSignal answered;
  std::string id;
  bool readable = false;
  f.Submit([&](absl::StatusOr<std::string> job_id) {
    id = job_id.value_or("");
    readable = f.snapshots.Get(id, f.now_ms).ok();
    answered.Notify();
  });
  REQUIRE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  CHECK(!id.empty());
  CHECK(readable);
  CHECK(f.snapshots.Get(id, f.now_ms)->state() == v1::JOB_STATE_QUEUED);  // no node yet
}

TEST_CASE("commands for agents leave only after the commit that decided them") {
  Fixture f;
  auto channel = std::make_shared<RecordingChannel>(f.db_path());
  REQUIRE(f.registry.Attach("node-a", channel, "instance-1").ok());
  f.loop->Post([](Turn& t) { t.core.AgentRegistered(NodeA(), t.now, t.fx); });
  LoopSignal answered;
  f.Submit([&](const absl::StatusOr<std::string>&) { answered.Notify(); });
  REQUIRE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  // The submit's turn placed the job: its launch went out with the job already PENDING on disk.
  const std::vector<int> states = channel->launch_states();
  REQUIRE(states.size() == 1);
  CHECK(states[0] == v1::JOB_STATE_PENDING);
}

// Waits (with a deadline) for a submit's outcome.
absl::StatusOr<std::string> SubmitAndWait(Fixture& f) {
  LoopSignal answered;
  absl::StatusOr<std::string> outcome = absl::InternalError("no answer");
  f.Submit([&](absl::StatusOr<std::string> id) {
    outcome = std::move(id);
    answered.Notify();
  });
  REQUIRE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  return outcome;
}

TEST_CASE("a failed commit is refused to its callers, and is not sent, published or acknowledged") {
  Fixture f;
  auto channel = std::make_shared<RecordingChannel>(f.db_path());
  REQUIRE(f.registry.Attach("node-a", channel, "instance-1").ok());
  f.loop->Post([](Turn& t) { t.core.AgentRegistered(NodeA(), t.now, t.fx); });
  std::atomic<bool> acknowledged{false};
  absl::Status refused;
  {
    testing::ScopedFault full(testing::FaultyVfs::Fault::kFull);
    absl::StatusOr<std::string> id = SubmitAndWait(f);
    refused = id.status();
    acknowledged = id.ok();
  }
  CHECK(!acknowledged);
  CHECK(refused.code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(refused.message()), Catch::Contains("no space left on"));
  CHECK(channel->launch_states().empty());
  v1::ListJobsRequest all;
  CHECK(f.snapshots.List(all, f.now_ms)->jobs_size() == 0);
  CHECK(f.loop->write_status().code() == absl::StatusCode::kResourceExhausted);
}

TEST_CASE("after a failed commit changes are refused and reads answered until a write works") {
  Fixture f;
  auto channel = std::make_shared<RecordingChannel>(f.db_path());
  REQUIRE(f.registry.Attach("node-a", channel, "instance-1").ok());
  f.loop->Post([](Turn& t) { t.core.AgentRegistered(NodeA(), t.now, t.fx); });
  REQUIRE(SubmitAndWait(f).ok());  // placed on node-a
  testing::FaultyVfs::Set(testing::FaultyVfs::Fault::kIoError);
  CHECK(SubmitAndWait(f).status().code() == absl::StatusCode::kUnavailable);

  // The core was rebuilt from the database: the first job is there, the refused one is not.
  LoopSignal read;
  size_t jobs = 0;
  f.loop->PostRead(
      [&](Turn& t) {
        jobs = t.core.jobs().size();
        t.after_commit->push_back([&] { read.Notify(); });
      },
      nullptr);
  REQUIRE(read.WaitForNotificationWithTimeout(absl::Seconds(10)));
  CHECK(jobs == 1);
  // Writes are refused at once, without a commit, even after the fault is gone, until a probe.
  testing::FaultyVfs::Set(testing::FaultyVfs::Fault::kNone);
  absl::Status again = SubmitAndWait(f).status();
  CHECK(again.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(again.message()), Catch::Contains("I/O error writing"));
  CHECK(channel->closed().empty());

  // The next probe (a second later on the loop's clock) writes: changes are accepted again, and
  // agents are asked to register with the rebuilt core.
  f.now_ms += 1500;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!f.loop->write_status().ok() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  REQUIRE(f.loop->write_status().ok());
  CHECK_THAT(channel->closed(), Catch::Contains("register again"));
  CHECK(SubmitAndWait(f).ok());
}

TEST_CASE("Stop finishes the work already posted, answering each") {
  Fixture f;
  std::atomic<int> answered{0};
  for (int i = 0; i < 50; ++i) f.Submit([&](const absl::StatusOr<std::string>&) { answered++; });
  f.loop->Stop();
  CHECK(answered == 50);
  v1::ListJobsRequest all;
  all.set_page_size(1000);
  CHECK(f.snapshots.List(all, f.now_ms)->jobs_size() == 50);
}

TEST_CASE("time limits are checked on the loop's clock") {
  Fixture f;
  LoopSignal answered;
  std::string id;
  f.loop->Post([&](Turn& t) {
    v1::JobSpec spec = OneReplica();
    spec.mutable_scheduling()->mutable_queue_timeout()->set_seconds(60);
    id = (*t.core.SubmitJob(spec, t.now, t.fx))->id;
    t.after_commit->push_back([&] { answered.Notify(); });
  });
  REQUIRE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  f.now_ms += 61'000;  // no node: the job waits past its queue timeout
  LoopSignal failed;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline && !failed.HasBeenNotified()) {
    if (f.snapshots.Get(id, f.now_ms)->state() == v1::JOB_STATE_FAILED) failed.Notify();
    absl::SleepFor(absl::Milliseconds(10));
  }
  CHECK(failed.HasBeenNotified());
}

// Waits (with a deadline) until `done` holds.
bool Eventually(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

TEST_CASE("retention deletes the jobs that ended longer ago, in batches, and no live one") {
  constexpr int64_t kHourMs = 3'600'000;
  Fixture f(kHourMs);
  // No node: jobs stay QUEUED until cancelled, which ends them at once.
  const int kEnded = 2 * ReconcileLoop::kRetentionBatch + 5;
  std::vector<std::string> ended, late;
  std::string live;
  LoopSignal made;
  f.loop->Post([&](Turn& t) {
    for (int i = 0; i < kEnded; ++i) {
      const std::string id = (*t.core.SubmitJob(OneReplica(), t.now, t.fx))->id;
      (void)t.core.CancelJob(id, t.now, t.fx);  // checked below, on the test thread
      ended.push_back(id);
    }
    live = (*t.core.SubmitJob(OneReplica(), t.now, t.fx))->id;
    t.after_commit->push_back([&] { made.Notify(); });
  });
  REQUIRE(made.WaitForNotificationWithTimeout(absl::Seconds(10)));
  f.now_ms += kHourMs / 2;
  LoopSignal made_late;
  f.loop->Post([&](Turn& t) {
    const std::string id = (*t.core.SubmitJob(OneReplica(), t.now, t.fx))->id;
    (void)t.core.CancelJob(id, t.now, t.fx);
    late.push_back(id);
    t.after_commit->push_back([&] { made_late.Notify(); });
  });
  REQUIRE(made_late.WaitForNotificationWithTimeout(absl::Seconds(10)));

  // An hour after the first ones ended, all of them go, over several turns, and only them.
  f.now_ms += kHourMs / 2 + 1000;
  v1::ListJobsRequest all;
  all.set_page_size(1000);
  REQUIRE(Eventually([&] { return f.snapshots.List(all, f.now_ms)->jobs_size() == 2; }));
  for (const std::string& id : ended) {
    CHECK(f.snapshots.Get(id, f.now_ms).status().code() == absl::StatusCode::kNotFound);
    CHECK(CommittedState(f.db_path(), id) == -1);
  }
  CHECK(f.snapshots.Get(live, f.now_ms)->state() == v1::JOB_STATE_QUEUED);
  CHECK(f.snapshots.Get(late[0], f.now_ms)->state() == v1::JOB_STATE_CANCELLED);

  // The later one goes an hour after it ended; the queued one stays.
  f.now_ms += kHourMs / 2;
  REQUIRE(Eventually([&] { return CommittedState(f.db_path(), late[0]) == -1; }));
  CHECK(f.snapshots.Get(late[0], f.now_ms).status().code() == absl::StatusCode::kNotFound);
  CHECK(CommittedState(f.db_path(), live) == v1::JOB_STATE_QUEUED);
}

// Whether the loop's core holds job `id`, asked in a turn.
bool CoreHolds(Fixture& f, const std::string& id) {
  LoopSignal asked;
  bool holds = false;
  f.loop->PostRead(
      [&](Turn& t) {
        holds = t.core.FindJob(id) != nullptr;
        t.after_commit->push_back([&] { asked.Notify(); });
      },
      nullptr);
  REQUIRE(asked.WaitForNotificationWithTimeout(absl::Seconds(10)));
  return holds;
}

TEST_CASE("a job that ended leaves memory after the cache time, and is read from the database") {
  constexpr int64_t kCacheMs = 10 * 60'000;
  Fixture f(/*retention_ms=*/0, kCacheMs);
  std::string ended, live;
  LoopSignal made;
  f.loop->Post([&](Turn& t) {
    ended = (*t.core.SubmitJob(OneReplica(), t.now, t.fx))->id;
    (void)t.core.CancelJob(ended, t.now, t.fx);
    live = (*t.core.SubmitJob(OneReplica(), t.now, t.fx))->id;
    t.after_commit->push_back([&] { made.Notify(); });
  });
  REQUIRE(made.WaitForNotificationWithTimeout(absl::Seconds(10)));
  CHECK(CoreHolds(f, ended));
  CHECK(f.snapshots.Holds(ended));

  // Just before the cache time nothing changes; after it, the ended job leaves, the live one
  // stays.
  f.now_ms += kCacheMs - 1;
  CHECK(CoreHolds(f, ended));
  f.now_ms += 2;
  REQUIRE(Eventually([&] { return !CoreHolds(f, ended); }));
  CHECK(!f.snapshots.Holds(ended));
  CHECK(CoreHolds(f, live));
  CHECK(f.snapshots.Holds(live));

  // Readers still find it, from the database.
  absl::StatusOr<v1::Job> got = f.snapshots.Get(ended, f.now_ms);
  REQUIRE(got.ok());
  CHECK(got->state() == v1::JOB_STATE_CANCELLED);
  v1::ListJobsRequest all;
  absl::StatusOr<v1::ListJobsResponse> listed = f.snapshots.List(all, f.now_ms);
  REQUIRE(listed.ok());
  std::set<std::string> ids;
  for (const v1::Job& job : listed->jobs()) ids.insert(job.id());
  CHECK(ids == std::set<std::string>{ended, live});
  // A list of live states only is the snapshots' alone.
  v1::ListJobsRequest queued;
  queued.add_states(v1::JOB_STATE_QUEUED);
  REQUIRE(f.snapshots.List(queued, f.now_ms)->jobs_size() == 1);
  CHECK(f.snapshots.List(queued, f.now_ms)->jobs(0).id() == live);
  CHECK(CommittedState(f.db_path(), ended) == v1::JOB_STATE_CANCELLED);
}

TEST_CASE("beyond the count of ended jobs memory holds, the oldest leave before the cache time") {
  Fixture f(/*retention_ms=*/0, /*finished_cache_ms=*/10 * 60'000, /*finished_cache_jobs=*/2);
  std::vector<std::string> ended;
  std::string live;
  for (int i = 0; i < 4; ++i) {
    LoopSignal made;
    f.loop->Post([&](Turn& t) {
      ended.push_back((*t.core.SubmitJob(OneReplica(), t.now, t.fx))->id);
      (void)t.core.CancelJob(ended.back(), t.now, t.fx);
      if (i == 0) live = (*t.core.SubmitJob(OneReplica(), t.now, t.fx))->id;
      t.after_commit->push_back([&] { made.Notify(); });
    });
    REQUIRE(made.WaitForNotificationWithTimeout(absl::Seconds(10)));
    f.now_ms += 1000;  // each ends a second after the one before
  }
  // Long before the cache time: the two that ended first left, the two last and the live job
  // stay.
  REQUIRE(Eventually([&] { return !CoreHolds(f, ended[1]); }));
  CHECK(!CoreHolds(f, ended[0]));
  CHECK(!f.snapshots.Holds(ended[0]));
  CHECK(CoreHolds(f, ended[2]));
  CHECK(CoreHolds(f, ended[3]));
  CHECK(f.snapshots.Holds(ended[3]));
  CHECK(CoreHolds(f, live));
  // Readers still find every one.
  for (const std::string& id : ended) {
    absl::StatusOr<v1::Job> got = f.snapshots.Get(id, f.now_ms);
    REQUIRE(got.ok());
    CHECK(got->state() == v1::JOB_STATE_CANCELLED);
  }
}

// Polls `cond` every 5 ms for up to 10 s.
bool LoopEventually(const std::function<bool()>& cond) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return cond();
}

TEST_CASE("a stalled loop stops its watchdog pings and is reported as stalled") {
  std::atomic<int> pings{0};
  std::mutex stall_mu;
  std::vector<std::string> stalls;
  Watchdog::Options options;
  options.loop_name = "reconcile loop";
  options.ping_interval = absl::Milliseconds(10);
  // Longer than an idle loop's pass (every tick, 500 ms), as half of any WatchdogSec of 2 s or
  // more is.
  options.stall_after = absl::Milliseconds(1500);
  options.notify = [&](const char*) { pings.fetch_add(1); };
  options.on_stall = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(stall_mu);
    stalls.push_back(message);
  };
  auto stalls_seen = [&] {
    std::lock_guard<std::mutex> lock(stall_mu);
    return stalls.size();
  };
  // Declared before the loop, which uses them, so that they outlive it.
  Watchdog watchdog(options);
  LoopSignal entered;
  LoopSignal release;
  Fixture f(0, 10 * 60'000, 10'000, watchdog.AliveCallback());
  // Whatever happens below, the blocked turn ends before the loop is stopped.
  struct Release {
    LoopSignal* signal;
    ~Release() { signal->Notify(); }
  } release_at_exit{&release};
  // An idle loop passes every tick and pings; a slow start (sanitizers) may count as a stall
  // first, so what follows counts from a passing loop.
  REQUIRE(LoopEventually([&] { return pings.load() >= 2 && !watchdog.stalled(); }));
  const size_t stalls_before = stalls_seen();

  // The test hook for a wedged loop: a turn that blocks until the test releases it.
  f.loop->Post([&](Turn&) {
    entered.Notify();
    release.WaitForNotificationWithTimeout(absl::Seconds(30));
  });
  REQUIRE(entered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  REQUIRE(LoopEventually([&] { return watchdog.stalled(); }));
  const int pings_at_stall = pings.load();
  {
    std::lock_guard<std::mutex> lock(stall_mu);
    REQUIRE(stalls.size() == stalls_before + 1);
    CHECK_THAT(stalls.back(),
               Catch::Contains("the reconcile loop is stalled: it has not passed for"));
  }
  // Still wedged: no pings, whatever the other threads do.
  f.Submit([](absl::StatusOr<std::string>) {});
  CHECK(pings.load() == pings_at_stall);

  release.Notify();
  REQUIRE(LoopEventually([&] { return !watchdog.stalled() && pings.load() > pings_at_stall; }));
  CHECK(stalls_seen() == stalls_before + 1);
}

}  // namespace
}  // namespace trainctl::server
