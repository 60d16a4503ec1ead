// Run directories and agent restarts: the record is there before the shim exists, its lock says
// whether the shim lives, and a new launcher on the same work dir (what a restarted, crashed or
// upgraded agent builds) watches the shims that still run and reports the true end of the
// replicas that ended meanwhile. The replicas and shims here are real processes.
#include "agents/run_records.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "agents/launcher.h"
#include "agents/proc_stats.h"
#include "agents/run_files.h"
#include "agents/shim_status.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::RootReplicas;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;
using ::trainctl::v1::ReplicaExited;

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// True once no shim holds the run's lock: the shim has exited, not only written its status.
bool ShimGone(const std::string& run_dir) {
  int fd = open((run_dir + "/lock").c_str(), O_RDONLY | O_CLOEXEC);
  bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return free;
}

bool ProcessRuns(pid_t pid) {
  ProcStat stat;
  return ReadProcStat(pid, &stat) && stat.state != 'Z';
}

TEST_CASE("a run record reads back as it was written", "[run_records]") {
  RunRecord record{"j-1/2/worker-0/3", "boot", 64 << 20,
                   "/ckpt/with space", "2-3",  "step (?P<step>\\d+) of \\d+"};
  absl::StatusOr<RunRecord> parsed = ParseRunRecord(FormatRunRecord(record));
  REQUIRE(parsed.ok());
  CHECK(parsed->run_id == record.run_id);
  CHECK(parsed->boot_id == "boot");
  CHECK(parsed->memory_limit_bytes == 64 << 20);
  CHECK(parsed->checkpoint_dir == "/ckpt/with space");
  CHECK(parsed->exclusive_cpus == "2-3");
  CHECK(parsed->progress_pattern == "step (?P<step>\\d+) of \\d+");
  CHECK_FALSE(ParseRunRecord("boot_id x\n").ok());
  CHECK_FALSE(ParseRunRecord("run_id a\nmemory_limit_bytes -1\n").ok());
  CHECK(ParseRunRecord("run_id a\nfuture_key 1\n").ok());
}

TEST_CASE("Load tells a live shim by its lock and drops directories of no run", "[run_records]") {
  TempDir dir;
  RunRecordStore store(dir.path() + "/runs");
  absl::StatusOr<int> held = store.Create({"j/1/alive/0", BootId(), 0, "", "", ""});
  REQUIRE(held.ok());
  absl::StatusOr<int> released = store.Create({"j/1/gone/0", BootId(), 0, "", "", ""});
  REQUIRE(released.ok());
  close(*released);
  // A second Create of a run whose lock is held is refused: no run starts twice.
  CHECK(
      absl::IsFailedPrecondition(store.Create({"j/1/alive/0", BootId(), 0, "", "", ""}).status()));
  absl::StatusOr<int> old_boot = store.Create({"j/1/old-boot/0", "another-boot", 0, "", "", ""});
  REQUIRE(old_boot.ok());
  close(*old_boot);
  REQUIRE(MakeDirs(dir.path() + "/runs/no-record").ok());

  std::map<std::string, bool> found;
  for (const RunRecordStore::Found& f : store.Load()) found[f.record.run_id] = f.shim_alive;
  CHECK(found == std::map<std::string, bool>{{"j/1/alive/0", true}, {"j/1/gone/0", false}});
  CHECK_FALSE(FileExists(dir.path() + "/runs/no-record"));
  CHECK_FALSE(FileExists(store.RunDir("j/1/old-boot/0")));
  close(*held);
  REQUIRE(store.Remove("j/1/alive/0").ok());
  CHECK(store.Remove("j/1/alive/0").ok());
  CHECK(store.Load().size() == 1);
}

// Launchers over one temp work dir, one after the other, as agents restart; collects reports.
class RestartingLauncher {
 public:
  RestartingLauncher() { Start(); }
  ~RestartingLauncher() {
    launcher_->StopAll(0, "test over");
    launcher_->WaitUntilIdle(absl::Now() + absl::Seconds(10));
  }

  // The agent dies (its launcher goes without stopping anything) and a new one starts.
  void Restart() {
    launcher_.reset();
    Start();
  }

  const std::string& work_dir() const { return dir_.path(); }
  ProcessLauncher& launcher() { return *launcher_; }
  std::string RunDir(const std::string& run_id) const {
    return RunRecordStore(dir_.path() + "/runs").RunDir(run_id);
  }

  trainctl::v1::LaunchReplica Launch(const std::string& replica, const std::string& script) {
    trainctl::v1::LaunchReplica launch;
    launch.set_job_id("j-rec");
    launch.set_attempt(1);
    launch.set_replica_name(replica);
    launch.set_run_id(absl::StrCat("j-rec/1/", replica, "/0"));
    for (const char* arg : {"/bin/sh", "-c"}) launch.add_argv(arg);
    launch.add_argv(script);
    launcher_->Launch(launch);
    return launch;
  }

  // The pid the run's replica reported starting with; 0 if it did not within 10s.
  pid_t WaitStarted(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return started_.count(run_id) > 0; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(10))) return 0;
    return started_.at(run_id);
  }

  std::optional<ReplicaExited> WaitExit(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exited_.count(run_id) > 0; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(10))) return std::nullopt;
    return exited_.at(run_id);
  }

  int exit_reports() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(exited_.size());
  }

 private:
  void Start() {
    ProcessLauncher::Options options;
    options.work_dir = dir_.path();
    options.run_as = RootReplicas();
    options.on_started = [this](trainctl::v1::ReplicaStarted s) {
      absl::MutexLock lock(&mu_);
      started_[s.run_id()] = static_cast<pid_t>(s.pid());
    };
    options.on_exited = [this](ReplicaExited e) {
      absl::MutexLock lock(&mu_);
      exited_.emplace(e.run_id(), std::move(e));
    };
    launcher_ = std::make_unique<ProcessLauncher>(std::move(options));
  }

  TempDir dir_;  // Declared first: outlives the launchers.
  absl::Mutex mu_;
  std::map<std::string, pid_t> started_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ReplicaExited> exited_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ProcessLauncher> launcher_;
};

TEST_CASE("the run is recorded before its shim starts, and the record stays until forgotten",
          "[run_records]") {
  RestartingLauncher f;
  trainctl::v1::LaunchReplica launch = f.Launch("worker-0", "exit 0");
  const std::string dir = f.RunDir(launch.run_id());
  REQUIRE(f.WaitExit(launch.run_id()));
  // The exit report is not in a journal here: the directory keeps the run's end.
  absl::StatusOr<RunRecord> record = ParseRunRecord(ReadFile(dir + "/record"));
  REQUIRE(record.ok());
  CHECK(record->run_id == launch.run_id());
  absl::StatusOr<ShimStatus> status = ReadShimStatus(dir);
  REQUIRE(status.ok());
  CHECK(status->state == ShimStatus::State::kExited);
  f.launcher().ForgetRun(launch.run_id());
  CHECK_FALSE(FileExists(dir));
}

TEST_CASE("after a restart, running replicas keep their pids and are watched and stopped again",
          "[run_records]") {
  RestartingLauncher f;
  const std::string release = f.work_dir() + "/release";
  trainctl::v1::LaunchReplica kept = f.Launch(
      "kept", "echo kept; while [ ! -e " + release + " ]; do sleep 0.01; done; echo done; exit 3");
  trainctl::v1::LaunchReplica unwanted = f.Launch("unwanted", "echo unwanted; exec sleep 60");
  const pid_t kept_pid = f.WaitStarted(kept.run_id());
  const pid_t unwanted_pid = f.WaitStarted(unwanted.run_id());
  REQUIRE(kept_pid > 0);
  REQUIRE(unwanted_pid > 0);

  f.Restart();
  CHECK(ProcessRuns(kept_pid));
  CHECK(ProcessRuns(unwanted_pid));
  std::vector<std::string> adopted = f.launcher().AdoptRecordedRuns();
  CHECK(adopted == std::vector<std::string>{kept.run_id(), unwanted.run_id()});
  std::map<std::string, int64_t> pids;
  for (const trainctl::v1::KnownRun& run : f.launcher().KnownRuns()) pids[run.run_id()] = run.pid();
  CHECK(pids == std::map<std::string, int64_t>{{kept.run_id(), kept_pid},
                                               {unwanted.run_id(), unwanted_pid}});

  // The new launcher stops a replica it did not start.
  REQUIRE(f.launcher().Stop(unwanted.run_id(), 5000, "not wanted any more").ok());
  std::optional<ReplicaExited> exited = f.WaitExit(unwanted.run_id());
  REQUIRE(exited);
  CHECK(exited->stopped_by_request());
  CHECK(exited->signal() == SIGTERM);
  CHECK_FALSE(ProcessRuns(unwanted_pid));

  // And learns how the other ended: its true exit code.
  std::ofstream(release) << "";
  exited = f.WaitExit(kept.run_id());
  REQUIRE(exited);
  CHECK(exited->exit_code() == 3);
  CHECK_FALSE(exited->stopped_by_request());
  CHECK(exited->output_tail() == "kept\ndone");
  trainctl::v1::LogData log = f.launcher().ReadLog(kept.run_id(), 0, 0);
  CHECK(log.data() == "kept\ndone\n");
  CHECK(log.complete());
}

TEST_CASE("a replica that ended while no agent ran is reported with its exit code",
          "[run_records]") {
  RestartingLauncher f;
  const std::string release = f.work_dir() + "/release";
  trainctl::v1::LaunchReplica launch =
      f.Launch("worker-0", "while [ ! -e " + release + " ]; do sleep 0.01; done; exit 3");
  const pid_t pid = f.WaitStarted(launch.run_id());
  REQUIRE(pid > 0);
  f.Restart();  // The old launcher is gone; the new one has not looked yet.
  std::ofstream(release) << "";
  REQUIRE(WaitUntil([&] { return !ProcessRuns(pid); }));
  REQUIRE(WaitUntil([&] {
    absl::StatusOr<ShimStatus> s = ReadShimStatus(f.RunDir(launch.run_id()));
    return s.ok() && s->state == ShimStatus::State::kExited;
  }));
  // The shim writes its status just before it exits; the run is adopted until it is gone.
  REQUIRE(WaitUntil([&] { return ShimGone(f.RunDir(launch.run_id())); }));
  CHECK(f.launcher().AdoptRecordedRuns().empty());
  std::optional<ReplicaExited> exited = f.WaitExit(launch.run_id());
  REQUIRE(exited);
  CHECK(exited->exit_code() == 3);
  CHECK_FALSE(exited->launch_failed());
  // Runs whose exit the agent already journaled are only forgotten.
  CHECK(f.launcher().AdoptRecordedRuns({launch.run_id()}).empty());
  CHECK_FALSE(FileExists(f.RunDir(launch.run_id())));
  CHECK(f.exit_reports() == 1);
}

TEST_CASE("a replica whose shim was killed is killed too, and a run never started fails",
          "[run_records]") {
  RestartingLauncher f;
  trainctl::v1::LaunchReplica launch = f.Launch("orphan", "exec sleep 60");
  const pid_t pid = f.WaitStarted(launch.run_id());
  REQUIRE(pid > 0);
  absl::StatusOr<ShimPid> shim = ReadShimPid(f.RunDir(launch.run_id()));
  REQUIRE(shim.ok());
  f.Restart();
  REQUIRE(kill(shim->pid, SIGKILL) == 0);
  // The shim was the old launcher's child; it is reaped once that launcher's process waits, so
  // look at the lock rather than the pid.
  REQUIRE(WaitUntil([&] { return ShimGone(f.RunDir(launch.run_id())); }));
  // What an agent that died between writing a record and starting the shim leaves.
  RunRecordStore store(f.work_dir() + "/runs");
  absl::StatusOr<int> lock = store.Create({"j-rec/1/never/0", BootId(), 0, "", "", ""});
  REQUIRE(lock.ok());
  close(*lock);

  CHECK(f.launcher().AdoptRecordedRuns().empty());
  std::optional<ReplicaExited> orphan = f.WaitExit(launch.run_id());
  REQUIRE(orphan);
  CHECK_FALSE(orphan->has_exit_code());
  CHECK_FALSE(orphan->has_signal());
  CHECK_FALSE(orphan->launch_failed());
  CHECK(WaitUntil([&] { return !ProcessRuns(pid); }));
  std::optional<ReplicaExited> never = f.WaitExit("j-rec/1/never/0");
  REQUIRE(never);
  CHECK(never->launch_failed());
  CHECK_FALSE(never->launch_error_is_user());
}

}  // namespace
}  // namespace trainctl::agent
