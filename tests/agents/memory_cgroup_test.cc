// MemoryCgroups: parsing of the kernel's OOM counters, detection over fake /proc files, and
// ProcessLauncher with a real memory cgroup where this host lets the tests use one.
#include "agents/memory_cgroup.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/launcher.h"
#include "spdlog/spdlog.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;
using ::trainctl::v1::LaunchReplica;
using ::trainctl::v1::ReplicaExited;

const char kWorkload[] = TRAINCTL_WORKLOAD_PATH;

TEST_CASE("ParseOomKillCount reads memory.events and memory.oom_control", "[memory_cgroup]") {
  struct Case {
    std::string text;
    std::optional<int64_t> count;
  };
  const std::vector<Case> cases = {
      // cgroup v2 memory.events.
      {"low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n", 1},
      {"low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", 0},
      // cgroup v1 memory.oom_control (oom_kill since Linux 4.13).
      {"oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3},
      {"oom_kill_disable 0\nunder_oom 0\n", std::nullopt},
      // Malformed or missing counts.
      {"", std::nullopt},
      {"oom_kill\n", std::nullopt},
      {"oom_kill x\n", std::nullopt},
      {"oom_kill -1\n", std::nullopt},
      {"oom_kill_disable 1\n", std::nullopt},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(ParseOomKillCount(c.text) == c.count);
  }
}

// Writes `text` to a new file `name` in `dir` and returns its path.
std::string WriteTemp(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("Detect reports UNAVAILABLE without a usable memory controller", "[memory_cgroup]") {
  TempDir dir;
  const std::string fake_mount = dir.path() + "/memory";
  std::filesystem::create_directory(fake_mount);
  MemoryCgroups::ProcFiles files;
  files.self_cgroup = WriteTemp(dir, "cgroup", "4:memory:/\n0::/\n");
  SECTION("no cgroup mount at all") {
    files.mountinfo = WriteTemp(dir, "mountinfo", "22 1 0:21 / /proc rw - proc proc rw\n");
    absl::StatusOr<std::unique_ptr<MemoryCgroups>> cgroups = MemoryCgroups::Detect("n1", files);
    REQUIRE_FALSE(cgroups.ok());
    CHECK(absl::IsUnavailable(cgroups.status()));
  }
  SECTION("v1 mounts without the memory controller are ignored") {
    files.mountinfo =
        WriteTemp(dir, "mountinfo",
                  absl::StrCat("32 31 0:29 / ", fake_mount, " rw - cgroup cgroup rw,cpu\n"));
    CHECK(absl::IsUnavailable(MemoryCgroups::Detect("n1", files).status()));
  }
  SECTION("a directory that takes no limit is not used, and is left clean") {
    files.mountinfo =
        WriteTemp(dir, "mountinfo",
                  absl::StrCat("35 31 0:32 / ", fake_mount, " rw - cgroup cgroup rw,memory\n"));
    absl::StatusOr<std::unique_ptr<MemoryCgroups>> cgroups = MemoryCgroups::Detect("n1", files);
    REQUIRE_FALSE(cgroups.ok());
    CHECK(absl::StrContains(cgroups.status().message(), "memory.limit_in_bytes"));
    CHECK(std::filesystem::is_empty(fake_mount));
  }
  SECTION("a node name that is no directory name") {
    CHECK(absl::IsUnavailable(MemoryCgroups::Detect("a/b", files).status()));
  }
}

// The host's memory cgroups for a node name of this test process, or null (after a WARN) when
// this host gives none; removes the agent's parent directory at the end.
class RealCgroups {
 public:
  RealCgroups() {
    absl::StatusOr<std::unique_ptr<MemoryCgroups>> detected =
        MemoryCgroups::Detect(absl::StrCat("test-", getpid()));
    if (!detected.ok()) {
      WARN("no writable memory cgroup here, skipping: " << detected.status().message());
      return;
    }
    cgroups_ = std::move(*detected);
  }
  ~RealCgroups() {
    if (cgroups_ != nullptr) std::filesystem::remove(cgroups_->parent_dir());
  }
  std::shared_ptr<const MemoryCgroups> get() const { return cgroups_; }

 private:
  std::shared_ptr<const MemoryCgroups> cgroups_;
};

// A launcher over a temp work dir with memory cgroups and an RSS watch too slow to ever act,
// so that only the kernel enforces limits.
class CgroupLauncher {
 public:
  explicit CgroupLauncher(std::shared_ptr<const MemoryCgroups> cgroups) {
    ProcessLauncher::Options options;
    options.work_dir = dir_.path();
    options.memory_check_interval = absl::Hours(1);
    options.memory_cgroups = std::move(cgroups);
    options.on_exited = [this](ReplicaExited exited) {
      absl::MutexLock lock(&mu_);
      exited_[exited.run_id()] = std::move(exited);
    };
    launcher_ = std::make_unique<ProcessLauncher>(std::move(options));
  }

  ProcessLauncher& launcher() { return *launcher_; }

  LaunchReplica Launch(const std::string& replica, int64_t memory_mb,
                       std::vector<std::string> argv) {
    LaunchReplica launch;
    launch.set_job_id("j-test");
    launch.set_attempt(1);
    launch.set_replica_name(replica);
    launch.set_run_id(absl::StrCat("j-test/1/", replica, "/0"));
    for (std::string& arg : argv) launch.add_argv(std::move(arg));
    launch.set_checkpoint_dir(dir_.path() + "/ckpt");
    launch.mutable_resources()->set_memory_mb(memory_mb);
    return launch;
  }

  std::optional<ReplicaExited> WaitExit(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exited_.count(run_id) > 0; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(30))) return std::nullopt;
    return exited_.at(run_id);
  }

  std::string LogPath(const std::string& replica) const {
    return absl::StrCat(dir_.path(), "/logs/j-test/attempt-1/", replica, ".restart-0.log");
  }

 private:
  TempDir dir_;
  absl::Mutex mu_;
  std::map<std::string, ReplicaExited> exited_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ProcessLauncher> launcher_;
};

TEST_CASE(
    "a run over its memory cgroup's limit is OOM-killed by the kernel and its cgroup removed "
    "(skipped without a writable memory cgroup)",
    "[memory_cgroup]") {
  RealCgroups cgroups;
  if (cgroups.get() == nullptr) SUCCEED("no writable memory cgroup");
  if (cgroups.get() == nullptr) return;
  spdlog::info("memory cgroups for the test: {}", cgroups.get()->Describe());
  CgroupLauncher f(cgroups.get());
  LaunchReplica launch = f.Launch("worker-0", 64, {kWorkload, "--alloc-until-killed"});
  f.launcher().Launch(launch);
  std::optional<ReplicaExited> exit = f.WaitExit(launch.run_id());
  REQUIRE(exit);
  CHECK(exit->oom_killed());
  CHECK(exit->signal() == SIGKILL);
  CHECK_FALSE(exit->stopped_by_request());
  CHECK_FALSE(std::filesystem::exists(cgroups.get()->RunDir(launch.run_id())));
}

TEST_CASE(
    "a run within its memory cgroup's limit runs in that cgroup and is not OOM-killed "
    "(skipped without a writable memory cgroup)",
    "[memory_cgroup]") {
  RealCgroups cgroups;
  if (cgroups.get() == nullptr) SUCCEED("no writable memory cgroup");
  if (cgroups.get() == nullptr) return;
  CgroupLauncher f(cgroups.get());
  LaunchReplica launch = f.Launch(
      "worker-0", 64, {kWorkload, "--alloc-mb", "16", "--print", "ready", "--sleep", "60"});
  f.launcher().Launch(launch);
  REQUIRE(WaitUntil([&] { return absl::StrContains(ReadFile(f.LogPath("worker-0")), "ready"); }));
  std::vector<trainctl::v1::KnownRun> known = f.launcher().KnownRuns();
  REQUIRE(known.size() == 1);
  const std::string run_dir = cgroups.get()->RunDir(launch.run_id());
  CHECK(absl::StrContains(ReadFile(run_dir + "/cgroup.procs"), absl::StrCat(known[0].pid())));
  REQUIRE(f.launcher().Stop(launch.run_id(), 0, "test").ok());
  std::optional<ReplicaExited> exit = f.WaitExit(launch.run_id());
  REQUIRE(exit);
  CHECK(exit->signal() == SIGKILL);
  CHECK_FALSE(exit->oom_killed());
  CHECK(exit->stopped_by_request());
  CHECK_FALSE(std::filesystem::exists(run_dir));

  LaunchReplica quick = f.Launch("worker-1", 64, {kWorkload, "--alloc-mb", "8"});
  f.launcher().Launch(quick);
  std::optional<ReplicaExited> quick_exit = f.WaitExit(quick.run_id());
  REQUIRE(quick_exit);
  CHECK(quick_exit->exit_code() == 0);
  CHECK_FALSE(quick_exit->oom_killed());
  CHECK_FALSE(std::filesystem::exists(cgroups.get()->RunDir(quick.run_id())));
}

}  // namespace
}  // namespace trainctl::agent
