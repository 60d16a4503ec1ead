// ProcessLauncher against real processes: the workload program and /bin/sh, in a temp dir.
#include "agents/launcher.h"

#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agents/preemption_notice.h"
#include "agents/proc_stats.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::RootReplicas;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;
using ::trainctl::v1::LaunchReplica;
using ::trainctl::v1::ReplicaExited;
using ::trainctl::v1::ReplicaStarted;

using testing::kWorkload;

// A launcher over a temp work dir that records every report.
class LauncherFixture {
 public:
  explicit LauncherFixture(int inject_launch_failures = 0)
      : inject_launch_failures_(inject_launch_failures), launcher_(MakeOptions()) {}
  // Replicas outlive their launcher: stop what is left.
  ~LauncherFixture() {
    launcher_.StopAll(0, "test over");
    launcher_.WaitUntilIdle(absl::Now() + absl::Seconds(10));
  }

  ProcessLauncher& launcher() { return launcher_; }
  const std::string& work_dir() const { return dir_.path(); }

  // A launch of replica `replica` of job "j-test", attempt 1.
  LaunchReplica Launch(const std::string& replica, std::vector<std::string> argv, int restart = 0) {
    LaunchReplica launch;
    launch.set_job_id("j-test");
    launch.set_attempt(1);
    launch.set_replica_name(replica);
    launch.set_restart(restart);
    launch.set_run_id(absl::StrCat("j-test/1/", replica, "/", restart));
    for (std::string& arg : argv) launch.add_argv(std::move(arg));
    launch.set_checkpoint_dir(dir_.path() + "/ckpt");
    return launch;
  }

  std::string LogPath(const std::string& replica, int restart = 0) const {
    return absl::StrCat(dir_.path(), "/logs/j-test/attempt-1/", replica, ".restart-", restart,
                        ".log");
  }

  // The exit report of `run_id`, waiting up to `timeout` for it.
  std::optional<ReplicaExited> WaitExit(const std::string& run_id,
                                        absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exited_.count(run_id) > 0; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout)) return std::nullopt;
    return exited_.at(run_id);
  }

  std::vector<ReplicaStarted> started() const {
    absl::MutexLock lock(&mu_);
    return started_;
  }
  std::vector<trainctl::v1::ReplicaProgress> progress() const {
    absl::MutexLock lock(&mu_);
    return progress_;
  }
  int exit_reports(const std::string& run_id) const {
    absl::MutexLock lock(&mu_);
    auto it = exit_reports_.find(run_id);
    return it == exit_reports_.end() ? 0 : it->second;
  }

 private:
  ProcessLauncher::Options MakeOptions() {
    ProcessLauncher::Options options;
    options.work_dir = dir_.path();
    options.run_as = RootReplicas();
    options.on_started = [this](ReplicaStarted s) {
      absl::MutexLock lock(&mu_);
      started_.push_back(std::move(s));
    };
    options.progress_interval = absl::Milliseconds(50);
    options.inject_launch_failures = inject_launch_failures_;
    options.on_progress = [this](trainctl::v1::ReplicaProgress p) {
      absl::MutexLock lock(&mu_);
      progress_.push_back(std::move(p));
    };
    options.on_exited = [this](ReplicaExited e) {
      absl::MutexLock lock(&mu_);
      ++exit_reports_[e.run_id()];
      exited_.emplace(e.run_id(), std::move(e));
    };
    return options;
  }

  TempDir dir_;  // Declared first: outlives the launcher.
  const int inject_launch_failures_;
  mutable absl::Mutex mu_;
  std::vector<ReplicaStarted> started_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ReplicaExited> exited_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> exit_reports_ ABSL_GUARDED_BY(mu_);
  std::vector<trainctl::v1::ReplicaProgress> progress_ ABSL_GUARDED_BY(mu_);
  ProcessLauncher launcher_;
};

TEST_CASE("an exit code is reported with the captured output", "[launcher]") {
  LauncherFixture f;
  f.launcher().Launch(
      f.Launch("worker-0", {kWorkload, "--print", "hello", "--stderr", "oops", "--exit", "3"}));
  std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/worker-0/0");
  REQUIRE(exit);
  CHECK(exit->exit_code() == 3);
  CHECK_FALSE(exit->has_signal());
  CHECK_FALSE(exit->launch_failed());
  CHECK_FALSE(exit->stopped_by_request());
  CHECK(exit->output_tail() == "hello\noops");
  CHECK(exit->end_time_ms() > 0);
  CHECK(ReadFile(f.LogPath("worker-0")) == "hello\noops\n");
  REQUIRE(f.started().size() == 1);
  CHECK(f.started()[0].run_id() == "j-test/1/worker-0/0");
  CHECK(f.started()[0].pid() > 0);
  CHECK(f.started()[0].start_time_ms() <= exit->end_time_ms());
}

TEST_CASE("a death by signal is reported as the signal", "[launcher]") {
  LauncherFixture f;
  f.launcher().Launch(f.Launch("worker-0", {kWorkload, "--signal", "USR1"}));
  f.launcher().Launch(f.Launch("worker-1", {kWorkload, "--signal", "KILL"}));
  std::optional<ReplicaExited> usr1 = f.WaitExit("j-test/1/worker-0/0");
  std::optional<ReplicaExited> kill = f.WaitExit("j-test/1/worker-1/0");
  REQUIRE(usr1);
  REQUIRE(kill);
  CHECK(usr1->signal() == SIGUSR1);
  CHECK_FALSE(usr1->has_exit_code());
  CHECK(kill->signal() == SIGKILL);
  CHECK_FALSE(kill->oom_killed());
}

TEST_CASE("Stop lets a process that traps SIGTERM exit within its grace period", "[launcher]") {
  LauncherFixture f;
  f.launcher().Launch(
      f.Launch("chief-0", {kWorkload, "--trap-term", "--print", "ready", "--sleep", "60"}));
  REQUIRE(WaitUntil([&] { return absl::StrContains(ReadFile(f.LogPath("chief-0")), "ready"); }));
  absl::Time stop_time = absl::Now();
  REQUIRE(f.launcher().Stop("j-test/1/chief-0/0", 30000, "test").ok());
  std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/chief-0/0");
  REQUIRE(exit);
  CHECK(absl::Now() - stop_time < absl::Seconds(10));
  CHECK(exit->exit_code() == 0);
  CHECK(exit->stopped_by_request());
  CHECK(absl::StrContains(exit->output_tail(), "got SIGTERM"));
}

TEST_CASE("a Stop while the launch is under way reaches the replica, not the shim", "[launcher]") {
  // The stop is sent the moment the shim exists, before it has blocked the forward signal: the
  // shim starts with it blocked, so it is never killed by the signal's default action.
  LauncherFixture f;
  for (int i = 0; i < 10; ++i) {
    const std::string replica = absl::StrCat("worker-", i);
    f.launcher().Launch(f.Launch(replica, {kWorkload, "--sleep", "60"}));
    REQUIRE(f.launcher().Stop(absl::StrCat("j-test/1/", replica, "/0"), 30000, "test").ok());
  }
  for (int i = 0; i < 10; ++i) {
    std::optional<ReplicaExited> exit = f.WaitExit(absl::StrCat("j-test/1/worker-", i, "/0"));
    REQUIRE(exit);
    INFO(exit->ShortDebugString());
    CHECK(exit->stopped_by_request());
    CHECK_FALSE(exit->launch_failed());
    CHECK(exit->signal() == SIGTERM);
  }
}

TEST_CASE("Stop SIGKILLs a process that ignores SIGTERM after the grace period", "[launcher]") {
  LauncherFixture f;
  f.launcher().Launch(
      f.Launch("chief-0", {kWorkload, "--ignore-term", "--print", "ready", "--sleep", "60"}));
  REQUIRE(WaitUntil([&] { return absl::StrContains(ReadFile(f.LogPath("chief-0")), "ready"); }));
  absl::Time stop_time = absl::Now();
  REQUIRE(f.launcher().Stop("j-test/1/chief-0/0", 300, "test").ok());
  std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/chief-0/0");
  REQUIRE(exit);
  CHECK(absl::Now() - stop_time >= absl::Milliseconds(300));
  CHECK(exit->signal() == SIGKILL);
  CHECK(exit->stopped_by_request());
  // Stopping a run that is gone is fine; an unknown run is not.
  CHECK(f.launcher().Stop("j-test/1/chief-0/0", 300, "again").ok());
  CHECK(absl::IsNotFound(f.launcher().Stop("j-test/1/nope-0/0", 300, "test")));
}

TEST_CASE("processes left behind by the replica are killed when it exits", "[launcher]") {
  LauncherFixture f;
  std::string pidfile = f.work_dir() + "/background.pid";
  f.launcher().Launch(f.Launch(
      "worker-0", {"sh", "-c", absl::StrCat("sleep 1000 & echo $! > ", pidfile, "; exit 0")}));
  std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/worker-0/0");
  REQUIRE(exit);
  CHECK(exit->exit_code() == 0);
  pid_t background = 0;
  REQUIRE(absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pidfile)), &background));
  CHECK(WaitUntil([&] { return ProcessIsGone(background); }));
}

TEST_CASE("a command that cannot run is a launch failure", "[launcher]") {
  LauncherFixture f;
  SECTION("not found in PATH is the user's") {
    f.launcher().Launch(f.Launch("worker-0", {"trian.py", "--epochs", "3"}));
    std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/worker-0/0");
    REQUIRE(exit);
    CHECK(exit->launch_failed());
    CHECK(exit->launch_error() == "command not found: trian.py");
    CHECK(exit->launch_error_is_user());
    CHECK_FALSE(exit->has_exit_code());
    CHECK(f.started().empty());
    CHECK(absl::StrContains(ReadFile(f.LogPath("worker-0")), "command not found: trian.py"));
    trainctl::v1::LogData log = f.launcher().ReadLog("j-test/1/worker-0/0", 0, 0);
    CHECK(log.complete());
  }
  SECTION("a file without execute permission is the user's") {
    std::string script = f.work_dir() + "/train.sh";
    REQUIRE(system(absl::StrCat("echo 'echo hi' > ", script).c_str()) == 0);
    chmod(script.c_str(), 0644);
    f.launcher().Launch(f.Launch("worker-0", {script}));
    std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/worker-0/0");
    REQUIRE(exit);
    CHECK(exit->launch_failed());
    CHECK(exit->launch_error() == absl::StrCat("cannot execute ", script, ": Permission denied"));
    CHECK(exit->launch_error_is_user());
  }
  SECTION("an executable in an unknown format is the user's") {
    std::string binary = f.work_dir() + "/garbage";
    REQUIRE(system(absl::StrCat("printf '\\001\\002\\003\\004' > ", binary).c_str()) == 0);
    chmod(binary.c_str(), 0755);
    f.launcher().Launch(f.Launch("worker-0", {binary}));
    std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/worker-0/0");
    REQUIRE(exit);
    CHECK(exit->launch_failed());
    CHECK(exit->launch_error() == absl::StrCat("cannot execute ", binary, ": Exec format error"));
    CHECK(exit->launch_error_is_user());
  }
  SECTION("a directory that cannot be created is the host's") {
    LaunchReplica launch = f.Launch("worker-0", {kWorkload});
    launch.set_checkpoint_dir("/proc/trainctl-cannot-exist");
    f.launcher().Launch(launch);
    std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/worker-0/0");
    REQUIRE(exit);
    CHECK(exit->launch_failed());
    CHECK_FALSE(exit->launch_error_is_user());
    CHECK(f.started().empty());
  }
  SECTION("a malformed launch is the host's") {
    LaunchReplica launch = f.Launch("worker-0", {kWorkload});
    launch.set_replica_name("../escape");
    f.launcher().Launch(launch);
    std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/worker-0/0");
    REQUIRE(exit);
    CHECK(exit->launch_failed());
    CHECK_FALSE(exit->launch_error_is_user());
  }
}

TEST_CASE("a second Launch of a known run id does nothing", "[launcher]") {
  LauncherFixture f;
  LaunchReplica launch = f.Launch("worker-0", {kWorkload, "--print", "once", "--sleep", "60"});
  f.launcher().Launch(launch);
  f.launcher().Launch(launch);
  REQUIRE(WaitUntil([&] { return ReadFile(f.LogPath("worker-0")) == "once\n"; }));
  // The start is reported once the shim has said so, which may come after the replica's first
  // output; the second Launch was refused before either (a log line says so).
  REQUIRE(WaitUntil([&] { return !f.started().empty(); }));
  CHECK(f.started().size() == 1);
  CHECK(f.launcher().KnownRuns().size() == 1);
  CHECK(f.launcher().ActiveCount() == 1);
  REQUIRE(f.launcher().Stop(launch.run_id(), 0, "test").ok());
  REQUIRE(f.WaitExit(launch.run_id()));
  f.launcher().Launch(launch);  // Exited runs are remembered too.
  CHECK(f.started().size() == 1);
  CHECK(f.exit_reports(launch.run_id()) == 1);
  // Known until its exit report has been delivered, which ends just after the callback.
  CHECK(WaitUntil([&] { return f.launcher().KnownRuns().empty(); }));
  CHECK(ReadFile(f.LogPath("worker-0")) == "once\n");
}

TEST_CASE("the process gets the agent's environment overlaid with the launch's", "[launcher]") {
  LauncherFixture f;
  setenv("TRAINCTL_TEST_AGENT_ONLY", "from-agent", 1);
  setenv("TRAINCTL_TEST_OVERRIDDEN", "from-agent", 1);
  LaunchReplica launch = f.Launch("worker-0", {kWorkload, "--env"});
  (*launch.mutable_env())["TRAINCTL_TEST_OVERRIDDEN"] = "from-launch";
  (*launch.mutable_env())["RANK"] = "3";
  (*launch.mutable_env())["MASTER_ADDR"] = "node-a";
  f.launcher().Launch(launch);
  REQUIRE(f.WaitExit(launch.run_id()));
  std::string log = ReadFile(f.LogPath("worker-0"));
  CHECK(absl::StrContains(log, "TRAINCTL_TEST_AGENT_ONLY=from-agent\n"));
  CHECK(absl::StrContains(log, "TRAINCTL_TEST_OVERRIDDEN=from-launch\n"));
  CHECK_FALSE(absl::StrContains(log, "TRAINCTL_TEST_OVERRIDDEN=from-agent"));
  CHECK(absl::StrContains(log, "RANK=3\n"));
  CHECK(absl::StrContains(log, "MASTER_ADDR=node-a\n"));
}

TEST_CASE("the process runs in its replica's working dir, stable across restarts", "[launcher]") {
  LauncherFixture f;
  for (int restart = 0; restart < 2; ++restart) {
    LaunchReplica launch = f.Launch("ps-0", {"sh", "-c", "pwd; echo step >> progress"}, restart);
    f.launcher().Launch(launch);
    REQUIRE(f.WaitExit(launch.run_id()));
    CHECK(ReadFile(f.LogPath("ps-0", restart)) == f.work_dir() + "/jobs/j-test/ps-0\n");
  }
  CHECK(ReadFile(f.work_dir() + "/jobs/j-test/ps-0/progress") == "step\nstep\n");
  struct stat st;
  CHECK(stat((f.work_dir() + "/ckpt").c_str(), &st) == 0);
}

TEST_CASE("ReadLog reads by offset and says when the output is complete", "[launcher]") {
  LauncherFixture f;
  LaunchReplica launch = f.Launch("worker-0", {kWorkload, "--print", "line1", "--print", "line2",
                                               "--trap-term", "--sleep", "60"});
  f.launcher().Launch(launch);
  const std::string& id = launch.run_id();
  REQUIRE(WaitUntil([&] { return f.launcher().ReadLog(id, 0, 0).data() == "line1\nline2\n"; }));
  trainctl::v1::LogData running = f.launcher().ReadLog(id, 12, 0);
  CHECK(running.data().empty());
  CHECK(running.next_offset() == 12);
  CHECK_FALSE(running.complete());  // Nothing left, but the process may write more.

  REQUIRE(f.launcher().Stop(id, 10000, "test").ok());
  REQUIRE(f.WaitExit(id));
  trainctl::v1::LogData first = f.launcher().ReadLog(id, 0, 4);
  CHECK(first.data() == "line");
  CHECK(first.next_offset() == 4);
  CHECK_FALSE(first.complete());
  trainctl::v1::LogData rest = f.launcher().ReadLog(id, first.next_offset(), 1 << 20);
  CHECK(rest.data() == "1\nline2\ngot SIGTERM\n");
  CHECK(rest.next_offset() == 24);
  CHECK(rest.complete());
  CHECK(rest.error().empty());
  CHECK(f.launcher().ReadLog(id, 100, 10).complete());
  CHECK_FALSE(f.launcher().ReadLog("j-test/1/other-0/0", 0, 10).error().empty());
  CHECK_FALSE(f.launcher().ReadLog("not a run id", 0, 10).error().empty());
}

TEST_CASE("ReadLog reads a run the launcher does not remember from its log file", "[launcher]") {
  LauncherFixture f;
  LaunchReplica launch = f.Launch("worker-0", {kWorkload, "--print", "kept"});
  {
    // A first launcher runs it; a second one, over the same work dir, reads it.
    ProcessLauncher::Options options;
    options.work_dir = f.work_dir();
    options.run_as = RootReplicas();
    ProcessLauncher first(options);
    first.Launch(launch);
    REQUIRE(WaitUntil([&] { return first.ReadLog(launch.run_id(), 0, 0).complete(); }));
  }
  trainctl::v1::LogData log = f.launcher().ReadLog(launch.run_id(), 0, 0);
  CHECK(log.data() == "kept\n");
  CHECK(log.complete());
}

TEST_CASE("a run over its memory limit is killed and reported as out of memory", "[launcher]") {
  LauncherFixture f;
  LaunchReplica launch = f.Launch("worker-0", {kWorkload, "--alloc-until-killed"});
  launch.mutable_resources()->set_memory_mb(64);
  f.launcher().Launch(launch);
  std::optional<ReplicaExited> exit = f.WaitExit(launch.run_id(), absl::Seconds(30));
  REQUIRE(exit);
  CHECK(exit->oom_killed());
  CHECK(exit->signal() == SIGKILL);
  CHECK_FALSE(exit->stopped_by_request());
}

TEST_CASE("a run the agent killed for its memory is reported as out of memory by its marker",
          "[launcher]") {
  LauncherFixture f;
  LaunchReplica launch = f.Launch("worker-0", {kWorkload, "--sleep", "60"});
  f.launcher().Launch(launch);
  REQUIRE(WaitUntil([&] { return f.started().size() == 1; }));
  // What an agent that killed it for its memory leaves for the agent that reports the exit.
  std::ofstream(f.work_dir() + "/runs/j-test+1+worker-0+0/oom-kill").close();
  REQUIRE(kill(static_cast<pid_t>(f.started()[0].pid()), SIGKILL) == 0);
  std::optional<ReplicaExited> exit = f.WaitExit(launch.run_id());
  REQUIRE(exit);
  CHECK(exit->oom_killed());
  CHECK(exit->signal() == SIGKILL);
}

TEST_CASE("while fenced a launch starts nothing and is reported as fenced, until Unfence",
          "[launcher]") {
  LauncherFixture f;
  LaunchReplica running = f.Launch("worker-0", {kWorkload, "--sleep", "60"});
  f.launcher().Launch(running);
  REQUIRE(WaitUntil([&] { return f.started().size() == 1; }));
  CHECK(f.launcher().Fence(0, "fenced: no word from the scheduler for 3.2s") == 1);
  std::optional<ReplicaExited> stopped = f.WaitExit(running.run_id());
  REQUIRE(stopped);
  CHECK(stopped->fenced());

  // A launch sent before the scheduler gave the node up, or delivered late, must not run.
  LaunchReplica late = f.Launch("worker-1", {kWorkload, "--sleep", "60"});
  f.launcher().Launch(late);
  std::optional<ReplicaExited> refused = f.WaitExit(late.run_id());
  REQUIRE(refused);
  CHECK(refused->launch_failed());
  CHECK(refused->fenced());
  CHECK_FALSE(refused->launch_error_is_user());
  CHECK_THAT(refused->launch_error(), Catch::Contains("fenced") && Catch::Contains("not starting"));
  CHECK(f.started().size() == 1);

  f.launcher().Unfence();
  // A launch the agent judged fenced as it arrived is refused even once unfenced, and a second
  // delivery of it starts nothing.
  LaunchReplica judged = f.Launch("worker-3", {kWorkload, "--sleep", "60"});
  f.launcher().RefuseFencedLaunch(judged.run_id(), "fenced: no word for 3.5s");
  std::optional<ReplicaExited> judged_exit = f.WaitExit(judged.run_id());
  REQUIRE(judged_exit);
  CHECK(judged_exit->launch_failed());
  CHECK(judged_exit->fenced());
  f.launcher().Launch(judged);
  CHECK(f.exit_reports(judged.run_id()) == 1);
  CHECK(f.started().size() == 1);

  LaunchReplica next = f.Launch("worker-2", {kWorkload});
  f.launcher().Launch(next);
  std::optional<ReplicaExited> ran = f.WaitExit(next.run_id());
  REQUIRE(ran);
  CHECK_FALSE(ran->launch_failed());
  CHECK(ran->exit_code() == 0);
}

TEST_CASE("StopAll stops every run and WaitUntilIdle sees them reaped", "[launcher]") {
  LauncherFixture f;
  for (const char* name : {"worker-0", "worker-1", "worker-2"}) {
    f.launcher().Launch(f.Launch(name, {kWorkload, "--sleep", "60"}));
  }
  CHECK(f.launcher().KnownRuns().size() == 3);
  CHECK_FALSE(f.launcher().WaitUntilIdle(absl::Now() + absl::Milliseconds(50)));
  f.launcher().StopAll(5000, "test");
  CHECK(f.launcher().WaitUntilIdle(absl::Now() + absl::Seconds(10)));
  for (const char* name : {"worker-0", "worker-1", "worker-2"}) {
    std::optional<ReplicaExited> exit = f.WaitExit(absl::StrCat("j-test/1/", name, "/0"));
    REQUIRE(exit);
    CHECK(exit->signal() == SIGTERM);
    CHECK_FALSE(exit->stopped_by_request());  // The agent stopped it, not the scheduler.
  }
  f.launcher().RejectNewLaunches("shutting down");
  f.launcher().Launch(f.Launch("late-0", {kWorkload}));
  std::optional<ReplicaExited> late = f.WaitExit("j-test/1/late-0/0");
  REQUIRE(late);
  CHECK(late->launch_failed());
  CHECK(late->launch_error() == "shutting down");
  CHECK_FALSE(late->launch_error_is_user());
}

TEST_CASE("touching the progress file or writing a checkpoint is progress", "[launcher]") {
  LauncherFixture f;
  std::string marker = f.work_dir() + "/go";
  // Touches its progress file, then waits for the test, then writes a checkpoint.
  LaunchReplica launch = f.Launch(
      "worker-0", {"sh", "-c",
                   absl::StrCat("sleep 0.05; touch \"$TRAINCTL_PROGRESS_FILE\"; while [ ! -e ",
                                marker, " ]; do sleep 0.01; done; sleep 0.05; echo 1 > ",
                                f.work_dir(), "/ckpt/step-1; exec sleep 60")});
  f.launcher().Launch(launch);
  REQUIRE(WaitUntil([&] { return f.progress().size() == 1; }));
  CHECK(f.progress()[0].run_id() == launch.run_id());
  CHECK(f.progress()[0].source() == "progress-file");
  CHECK(f.progress()[0].time_ms() >= f.started()[0].start_time_ms());
  REQUIRE(system(absl::StrCat("touch ", marker).c_str()) == 0);
  REQUIRE(WaitUntil([&] { return f.progress().size() == 2; }));
  CHECK(f.progress()[1].source() == "checkpoint");
  CHECK(f.progress()[1].time_ms() > f.progress()[0].time_ms());
  CHECK(f.launcher().Stop(launch.run_id(), 0, "test").ok());
  REQUIRE(f.WaitExit(launch.run_id()));
}

TEST_CASE("a notice writes the replica's notice file and signals it once", "[launcher]") {
  LauncherFixture f;
  // Says where its notice file is and that it does not exist yet; on each SIGUSR1 prints the
  // count and the file; on SIGTERM prints the count and exits.
  const std::string script =
      "n=0; [ -e \"$TRAINCTL_PREEMPTION_NOTICE\" ] || echo \"no notice at "
      "$TRAINCTL_PREEMPTION_NOTICE\"; "
      "trap 'n=$((n+1)); echo \"usr1 $n\"; cat \"$TRAINCTL_PREEMPTION_NOTICE\"' USR1; "
      "trap 'echo \"term after $n\"; exit 0' TERM; echo ready; while :; do sleep 0.01; done";
  LaunchReplica launch = f.Launch("worker-0", {"sh", "-c", script});
  const std::string run = launch.run_id();
  f.launcher().Launch(launch);
  REQUIRE(WaitUntil([&] { return absl::StrContains(ReadFile(f.LogPath("worker-0")), "ready"); }));
  const std::string path = f.work_dir() + "/notices/j-test/attempt-1/worker-0.restart-0.json";
  CHECK(absl::StrContains(ReadFile(f.LogPath("worker-0")), "no notice at " + path));

  trainctl::v1::NoticeReplica notice;
  notice.set_run_id(run);
  notice.set_kind("preemption");
  notice.set_reason("job j-big needs 8 gpus");
  notice.set_preempting_job("j-big");
  notice.set_deadline_ms(1'796'403'600'000);
  notice.set_signal(SIGUSR1);
  REQUIRE(f.launcher().Notice(notice).ok());
  REQUIRE(WaitUntil([&] {
    return absl::StrContains(ReadFile(f.LogPath("worker-0")), "\"signal\":\"SIGUSR1\"}");
  }));
  const std::string log = ReadFile(f.LogPath("worker-0"));
  CHECK(absl::StrContains(log, "usr1 1\n" + NoticeJson(notice)));
  CHECK(ReadFile(path) == NoticeJson(notice));

  // The same notice again (a reconnect, a scheduler restart): nothing is written or sent.
  trainctl::v1::NoticeReplica again = notice;
  again.set_reason("said again");
  REQUIRE(f.launcher().Notice(again).ok());
  CHECK(ReadFile(path) == NoticeJson(notice));
  // A new notice (another deadline) is delivered.
  trainctl::v1::NoticeReplica sooner = notice;
  sooner.set_kind("drain");
  sooner.set_deadline_ms(notice.deadline_ms() - 1000);
  REQUIRE(f.launcher().Notice(sooner).ok());
  REQUIRE(WaitUntil([&] { return absl::StrContains(ReadFile(f.LogPath("worker-0")), "usr1 2"); }));
  CHECK(ReadFile(path) == NoticeJson(sooner));

  // Unknown runs are refused as unknown; the replica kept running all along.
  trainctl::v1::NoticeReplica unknown = notice;
  unknown.set_run_id("j-test/1/nobody/0");
  CHECK(absl::IsNotFound(f.launcher().Notice(unknown)));
  REQUIRE(f.launcher().Stop(run, 10'000, "test").ok());
  std::optional<ReplicaExited> exit = f.WaitExit(run);
  REQUIRE(exit);
  CHECK(exit->exit_code() == 0);
  CHECK(absl::StrContains(exit->output_tail(), "term after 2"));
  // After its end a notice does nothing.
  CHECK(f.launcher().Notice(notice).ok());
}

TEST_CASE("injected launch failures fail the first launches as the host's", "[launcher]") {
  LauncherFixture f(/*inject_launch_failures=*/2);
  for (const char* name : {"worker-0", "worker-1", "worker-2"}) {
    f.launcher().Launch(f.Launch(name, {kWorkload}));
  }
  for (const char* name : {"worker-0", "worker-1"}) {
    std::optional<ReplicaExited> exit = f.WaitExit(absl::StrCat("j-test/1/", name, "/0"));
    REQUIRE(exit);
    CHECK(exit->launch_failed());
    CHECK_FALSE(exit->launch_error_is_user());
  }
  std::optional<ReplicaExited> exit = f.WaitExit("j-test/1/worker-2/0");
  REQUIRE(exit);
  CHECK_FALSE(exit->launch_failed());
  CHECK(exit->exit_code() == 0);
}

}  // namespace
}  // namespace trainctl::agent
