// Run records and orphans: a record names one process (pid + start time); the launcher records
// the runs it starts, and adopts, watches and stops the processes an earlier agent left running.
// The orphans here are real: started through a shell that exits at once, so that they are not
// this test's children.
#include "agents/run_records.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agents/launcher.h"
#include "agents/proc_stats.h"
#include "agents/run_files.h"
#include "tests/agents/orphan_util.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::RootReplicas;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;
using ::trainctl::v1::ReplicaExited;

using ::trainctl::agent::testing::RecordOf;
using ::trainctl::agent::testing::StartOrphan;

uint64_t StartTicks(pid_t pid) {
  ProcStat stat;
  return ReadProcStat(pid, &stat) ? stat.start_ticks : 0;
}

pid_t ReadPid(const std::string& path) {
  pid_t pid = 0;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(path)), &pid) ? pid : 0;
}

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST_CASE("a run record reads back as it was written", "[run_records]") {
  RunRecord record{"j-1/2/worker-0/3", 4242, 987654, "b0-07", 64 << 20, "/ckpt/a b", "2-3,6"};
  absl::StatusOr<RunRecord> back = ParseRunRecord(FormatRunRecord(record));
  REQUIRE(back.ok());
  CHECK(back->run_id == record.run_id);
  CHECK(back->pid == 4242);
  CHECK(back->start_ticks == 987654);
  CHECK(back->boot_id == "b0-07");
  CHECK(back->memory_limit_bytes == 64 << 20);
  CHECK(back->checkpoint_dir == "/ckpt/a b");
  CHECK(back->exclusive_cpus == "2-3,6");
  record.exclusive_cpus = "";
  CHECK(ParseRunRecord(FormatRunRecord(record))->exclusive_cpus.empty());
  CHECK_FALSE(ParseRunRecord("run_id x\npid 12\n").ok());
  CHECK_FALSE(ParseRunRecord("run_id x\npid zero\nstart_ticks 5\n").ok());
  CHECK(ParseRunRecord("run_id x\npid 12\nstart_ticks 5\nfuture_key 1\n").ok());
}

TEST_CASE("a record names one process: pid, start time and boot", "[run_records]") {
  RunRecord self = RecordOf("j/1/w/0", getpid());
  CHECK_FALSE(self.boot_id.empty());
  CHECK(RecordedProcessRuns(self));
  RunRecord reused = self;  // The pid, reused by a later process.
  reused.start_ticks += 1;
  CHECK_FALSE(RecordedProcessRuns(reused));
  RunRecord rebooted = self;
  rebooted.boot_id = "another-boot";
  CHECK_FALSE(RecordedProcessRuns(rebooted));
  pid_t child = fork();
  if (child == 0) _exit(0);
  RunRecord dead = RecordOf("j/1/w/0", child);
  waitpid(child, nullptr, 0);
  CHECK_FALSE(RecordedProcessRuns(dead));
}

TEST_CASE("loading keeps the records of live processes and deletes the rest", "[run_records]") {
  TempDir dir;
  RunRecordStore store(dir.path() + "/run-records");
  CHECK(store.LoadAlive().empty());  // No directory yet.
  REQUIRE(store.Write(RecordOf("j/1/alive/0", getpid())).ok());
  RunRecord reused = RecordOf("j/1/reused/0", getpid());
  reused.start_ticks += 1;
  REQUIRE(store.Write(reused).ok());
  std::ofstream(store.dir() + "/junk.run") << "not a record";
  std::vector<RunRecord> alive = store.LoadAlive();
  REQUIRE(alive.size() == 1);
  CHECK(alive[0].run_id == "j/1/alive/0");
  CHECK(FileExists(store.dir() + "/j+1+alive+0.run"));
  CHECK_FALSE(FileExists(store.dir() + "/j+1+reused+0.run"));
  CHECK_FALSE(FileExists(store.dir() + "/junk.run"));
  REQUIRE(store.Remove("j/1/alive/0").ok());
  CHECK(store.Remove("j/1/alive/0").ok());
  CHECK(store.LoadAlive().empty());
}

// A launcher over a temp work dir with run records, collecting exit reports.
class RecordingLauncher {
 public:
  RecordingLauncher() {
    store_ = std::make_shared<RunRecordStore>(dir_.path() + "/run-records");
    ProcessLauncher::Options options;
    options.work_dir = dir_.path();
    options.run_as = RootReplicas();
    options.run_records = store_;
    options.on_exited = [this](ReplicaExited e) {
      absl::MutexLock lock(&mu_);
      exited_.emplace(e.run_id(), std::move(e));
    };
    launcher_.emplace(std::move(options));
  }

  const std::string& work_dir() const { return dir_.path(); }
  const RunRecordStore& store() const { return *store_; }
  ProcessLauncher& launcher() { return *launcher_; }
  std::string RecordPath(const std::string& run_id) const {
    std::string name = run_id;
    for (char& c : name) c = c == '/' ? '+' : c;
    return store_->dir() + "/" + name + ".run";
  }

  std::optional<ReplicaExited> WaitExit(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exited_.count(run_id) > 0; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(10))) return std::nullopt;
    return exited_.at(run_id);
  }

 private:
  TempDir dir_;  // Declared first: outlives the launcher.
  std::shared_ptr<RunRecordStore> store_;
  absl::Mutex mu_;
  std::map<std::string, ReplicaExited> exited_ ABSL_GUARDED_BY(mu_);
  std::optional<ProcessLauncher> launcher_;
};

TEST_CASE("the launcher records a started run until it ends", "[run_records]") {
  RecordingLauncher f;
  trainctl::v1::LaunchReplica launch;
  launch.set_job_id("j-rec");
  launch.set_attempt(1);
  launch.set_replica_name("worker-0");
  launch.set_run_id("j-rec/1/worker-0/0");
  launch.add_argv("sleep");
  launch.add_argv("60");
  launch.mutable_resources()->set_memory_mb(64);
  f.launcher().Launch(launch);
  std::vector<trainctl::v1::KnownRun> runs = f.launcher().KnownRuns();
  REQUIRE(runs.size() == 1);
  absl::StatusOr<RunRecord> record = ParseRunRecord(ReadFile(f.RecordPath(launch.run_id())));
  REQUIRE(record.ok());
  CHECK(record->pid == runs[0].pid());
  CHECK(record->start_ticks == StartTicks(record->pid));
  CHECK(record->memory_limit_bytes == 64 << 20);
  CHECK(RecordedProcessRuns(*record));

  REQUIRE(f.launcher().Stop(launch.run_id(), 0, "test").ok());
  REQUIRE(f.WaitExit(launch.run_id()));
  CHECK_FALSE(FileExists(f.RecordPath(launch.run_id())));
}

TEST_CASE("an adopted orphan is stopped by signalling its group", "[run_records]") {
  RecordingLauncher f;
  const std::string run_id = "j-old/1/worker-0/0";
  const std::string child_pidfile = f.work_dir() + "/grandchild.pid";
  pid_t orphan = StartOrphan(f.work_dir(), run_id,
                             "echo started; sleep 60 & echo $! >" + child_pidfile + "; wait");
  REQUIRE(orphan > 0);
  // Not ours: no waiting for it.
  CHECK(waitpid(orphan, nullptr, WNOHANG) == -1);
  REQUIRE(f.store().Write(RecordOf(run_id, orphan)).ok());
  RunRecord gone = RecordOf("j-old/1/worker-1/0", getpid());
  gone.start_ticks += 1;
  REQUIRE(f.store().Write(gone).ok());

  CHECK(f.launcher().AdoptRecordedRuns() == std::vector<std::string>{run_id});
  CHECK_FALSE(FileExists(f.RecordPath(gone.run_id)));
  std::vector<trainctl::v1::KnownRun> runs = f.launcher().KnownRuns();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].run_id() == run_id);
  CHECK(runs[0].running());
  CHECK(runs[0].pid() == orphan);
  CHECK(f.launcher().ActiveCount() == 1);
  REQUIRE(WaitUntil([&] { return ReadPid(child_pidfile) > 0; }));
  pid_t grandchild = ReadPid(child_pidfile);

  REQUIRE(f.launcher().Stop(run_id, 5000, "not wanted any more").ok());
  std::optional<ReplicaExited> exited = f.WaitExit(run_id);
  REQUIRE(exited);
  CHECK(exited->stopped_by_request());
  CHECK_FALSE(exited->has_exit_code());
  CHECK_FALSE(exited->has_signal());
  CHECK(exited->launch_error().empty());
  CHECK(exited->output_tail() == "started");
  CHECK(WaitUntil([&] { return ProcessIsGone(orphan) && ProcessIsGone(grandchild); }));
  CHECK_FALSE(FileExists(f.RecordPath(run_id)));
  CHECK(f.launcher().ActiveCount() == 0);
}

TEST_CASE("an adopted orphan that ignores SIGTERM is killed after the grace period",
          "[run_records]") {
  RecordingLauncher f;
  const std::string run_id = "j-old/1/stubborn/0";
  pid_t orphan = StartOrphan(f.work_dir(), run_id,
                             "trap '' TERM; echo stubborn; while true; do sleep 0.01; done");
  REQUIRE(orphan > 0);
  REQUIRE(f.store().Write(RecordOf(run_id, orphan)).ok());
  REQUIRE(f.launcher().AdoptRecordedRuns().size() == 1);
  REQUIRE(f.launcher().Stop(run_id, 200, "not wanted").ok());
  std::optional<ReplicaExited> exited = f.WaitExit(run_id);
  REQUIRE(exited);
  CHECK(exited->stopped_by_request());
  CHECK(ProcessIsGone(orphan));
}

TEST_CASE("an adopted orphan that ends on its own is reported without a status", "[run_records]") {
  RecordingLauncher f;
  const std::string run_id = "j-old/1/worker-0/0";
  const std::string release = f.work_dir() + "/release";
  pid_t orphan = StartOrphan(
      f.work_dir(), run_id,
      "echo hello; while [ ! -e " + release + " ]; do sleep 0.01; done; echo bye; exit 7");
  REQUIRE(orphan > 0);
  REQUIRE(f.store().Write(RecordOf(run_id, orphan)).ok());
  REQUIRE(f.launcher().AdoptRecordedRuns().size() == 1);
  std::ofstream(release) << "";
  std::optional<ReplicaExited> exited = f.WaitExit(run_id);
  REQUIRE(exited);
  CHECK_FALSE(exited->stopped_by_request());
  CHECK_FALSE(exited->has_exit_code());  // Its status went to whoever reaped it.
  CHECK_FALSE(exited->has_signal());
  CHECK_FALSE(exited->launch_failed());
  CHECK(exited->launch_error().empty());
  CHECK(exited->output_tail() == "hello\nbye");
  CHECK_FALSE(FileExists(f.RecordPath(run_id)));
  // The log stays readable through the launcher.
  trainctl::v1::LogData log = f.launcher().ReadLog(run_id, 0, 0);
  CHECK(log.data() == "hello\nbye\n");
  CHECK(log.complete());
}

}  // namespace
}  // namespace trainctl::agent
