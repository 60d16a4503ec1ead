// RunCgroups: finding the hierarchies in /proc files, detection over fake files, and
// ProcessLauncher with the host's real cgroups (memory, cpu, pids) where this host lets the tests
// use them; those tests skip elsewhere.
#include "agents/run_cgroup.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/cgroup_fs.h"
#include "agents/launcher.h"
#include "spdlog/spdlog.h"
#include "tests/agents/cgroup_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::Asks;
using ::trainctl::agent::testing::CgroupLauncher;
using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::RealCgroups;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::v1::LaunchReplica;
using ::trainctl::v1::ReplicaExited;

using testing::kWorkload;

// A hybrid host's mountinfo: v1 controllers, cpu and cpuacct mounted together, and an empty
// cgroup2.
const char kHybridMountinfo[] =
    "22 1 0:21 / /proc rw - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 /kubepods /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";

TEST_CASE("cgroup mounts and the agent's place in them come from /proc", "[run_cgroup]") {
  std::vector<CgroupMount> mounts = ParseCgroupMounts(kHybridMountinfo);
  REQUIRE(mounts.size() == 4);
  CHECK(mounts[0].version == CgroupVersion::kV1);
  CHECK(mounts[0].mount_point == "/sys/fs/cgroup/cpu,cpuacct");
  CHECK(mounts[0].controllers == std::vector<std::string>{"cpu", "cpuacct"});
  CHECK(mounts[1].root == "/kubepods");
  CHECK(mounts[2].controllers.empty());  // name=systemd is no controller
  CHECK(mounts[3].version == CgroupVersion::kV2);

  const char self_cgroup[] =
      "9:name=systemd:/system.slice/agent.service\n"
      "4:memory:/kubepods/pod1\n"
      "2:cpu,cpuacct:/system.slice\n"
      "0::/system.slice/agent.service\n";
  CHECK(OwnCgroup(self_cgroup, mounts[0]) == "/system.slice");
  CHECK(OwnCgroup(self_cgroup, mounts[1]) == "/kubepods/pod1");
  CHECK(OwnCgroup(self_cgroup, mounts[3]) == "/system.slice/agent.service");
  CHECK(OwnCgroup("4:memory:/x\n", mounts[3]) == "");

  // The agent's own cgroup first, then the mount's root; a bind mount's root is cut off.
  CHECK(CandidateParents(mounts[0], "/system.slice") ==
        std::vector<std::string>{"/sys/fs/cgroup/cpu,cpuacct/system.slice",
                                 "/sys/fs/cgroup/cpu,cpuacct"});
  CHECK(CandidateParents(mounts[1], "/kubepods/pod1") ==
        std::vector<std::string>{"/sys/fs/cgroup/memory/pod1", "/sys/fs/cgroup/memory"});
  CHECK(CandidateParents(mounts[1], "/elsewhere") ==
        std::vector<std::string>{"/sys/fs/cgroup/memory"});
  CHECK(CandidateParents(mounts[3], "/") == std::vector<std::string>{"/sys/fs/cgroup/unified"});
  CHECK(ListsWord("cpuset cpu io memory pids\n", "memory"));
  CHECK_FALSE(ListsWord("cpuset cpu io memory pids\n", "mem"));
}

// Writes `text` to a new file `name` in `dir` and returns its path.
std::string WriteTemp(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("controllers the host does not offer are listed with the reason", "[run_cgroup]") {
  TempDir dir;
  const std::string fake_mount = dir.path() + "/memory";
  std::filesystem::create_directory(fake_mount);
  RunCgroups::Options options;
  options.self_cgroup = WriteTemp(dir, "cgroup", "4:memory:/\n0::/\n");
  SECTION("no cgroup mount at all") {
    options.mountinfo = WriteTemp(dir, "mountinfo", "22 1 0:21 / /proc rw - proc proc rw\n");
    std::unique_ptr<RunCgroups> cgroups = RunCgroups::Detect("n1", options);
    CHECK(cgroups->Describe() == "none");
    CHECK(cgroups->AgentDirs().empty());
    for (CgroupController controller :
         {CgroupController::kMemory, CgroupController::kCpu, CgroupController::kPids,
          CgroupController::kCpuset, CgroupController::kDevices}) {
      CHECK_FALSE(cgroups->Has(controller));
      CHECK(cgroups->UnavailableReason(controller) == "no cgroup hierarchy offers it");
      CHECK(cgroups->RunDir(controller, "j/1/a/0").empty());
    }
    CHECK(absl::StrContains(cgroups->Unavailable(), "pids (no cgroup hierarchy offers it)"));
  }
  SECTION("a directory that takes no settings is not used, and is left clean") {
    options.mountinfo =
        WriteTemp(dir, "mountinfo",
                  absl::StrCat("35 31 0:32 / ", fake_mount, " rw - cgroup cgroup rw,memory\n"));
    std::unique_ptr<RunCgroups> cgroups = RunCgroups::Detect("n1", options);
    CHECK_FALSE(cgroups->Has(CgroupController::kMemory));
    CHECK(absl::StrContains(cgroups->UnavailableReason(CgroupController::kMemory),
                            "memory.limit_in_bytes"));
    CHECK(std::filesystem::is_empty(fake_mount));
  }
  SECTION("a node name that is no directory name") {
    std::unique_ptr<RunCgroups> cgroups = RunCgroups::Detect("a/b", options);
    CHECK_FALSE(cgroups->Has(CgroupController::kMemory));
    CHECK(absl::StrContains(cgroups->UnavailableReason(CgroupController::kMemory), "a/b"));
  }
}

// The whole of a cgroup file without surrounding whitespace.
std::string Value(const std::string& path) {
  return std::string(absl::StripAsciiWhitespace(ReadFile(path)));
}

TEST_CASE(
    "a run over its memory cgroup's limit is OOM-killed by the kernel and its cgroup removed "
    "(skipped without a memory cgroup)",
    "[run_cgroup]") {
  RealCgroups real;
  std::shared_ptr<const RunCgroups> cgroups = real.With({CgroupController::kMemory});
  if (cgroups == nullptr) return;
  spdlog::info("cgroups for the test: {}", cgroups->Describe());
  CgroupLauncher f(cgroups);
  LaunchReplica launch = f.Launch("worker-0", Asks(0, 64), {kWorkload, "--alloc-until-killed"});
  f.launcher().Launch(launch);
  std::optional<ReplicaExited> exit = f.WaitExit(launch.run_id());
  REQUIRE(exit);
  CHECK(exit->oom_killed());
  CHECK(exit->signal() == SIGKILL);
  CHECK_FALSE(exit->stopped_by_request());
  // Removed right after the exit was reported.
  CHECK(testing::WaitUntil([&] {
    return !std::filesystem::exists(cgroups->RunDir(CgroupController::kMemory, launch.run_id()));
  }));
}

TEST_CASE(
    "a run within its memory cgroup's limit runs in that cgroup and is not OOM-killed "
    "(skipped without a memory cgroup)",
    "[run_cgroup]") {
  RealCgroups real;
  std::shared_ptr<const RunCgroups> cgroups = real.With({CgroupController::kMemory});
  if (cgroups == nullptr) return;
  CgroupLauncher f(cgroups);
  LaunchReplica launch =
      f.Launch("worker-0", Asks(0, 64),
               {kWorkload, "--alloc-mb", "16", "--print", "ready", "--sleep", "60"});
  REQUIRE(f.LaunchAndWait(launch, "ready"));
  const std::string run_dir = cgroups->RunDir(CgroupController::kMemory, launch.run_id());
  CHECK(absl::StrContains(ReadFile(run_dir + "/cgroup.procs"),
                          absl::StrCat(f.PidOf(launch.run_id()))));
  REQUIRE(f.launcher().Stop(launch.run_id(), 0, "test").ok());
  std::optional<ReplicaExited> exit = f.WaitExit(launch.run_id());
  REQUIRE(exit);
  CHECK(exit->signal() == SIGKILL);
  CHECK_FALSE(exit->oom_killed());
  CHECK(exit->stopped_by_request());
  // Removed right after the exit was reported.
  CHECK(testing::WaitUntil([&] { return !std::filesystem::exists(run_dir); }));

  LaunchReplica quick = f.Launch("worker-1", Asks(0, 64), {kWorkload, "--alloc-mb", "8"});
  // The workload never frees what it allocates; in a sanitizer build LeakSanitizer would say so.
  (*quick.mutable_env())["ASAN_OPTIONS"] = "detect_leaks=0";
  f.launcher().Launch(quick);
  std::optional<ReplicaExited> quick_exit = f.WaitExit(quick.run_id());
  REQUIRE(quick_exit);
  CHECK(quick_exit->exit_code() == 0);
  CHECK_FALSE(quick_exit->oom_killed());
  // Removed right after the exit was reported.
  CHECK(testing::WaitUntil([&] {
    return !std::filesystem::exists(cgroups->RunDir(CgroupController::kMemory, quick.run_id()));
  }));
}

// The versions to test the cgroup code of: what the host gives by default, then each one alone
// (on a hybrid host v1 alone is the v1 path of every controller).
std::vector<std::pair<std::string, RunCgroups::Options>> Versions() {
  RunCgroups::Options v1, v2;
  v1.only_version = CgroupVersion::kV1;
  v2.only_version = CgroupVersion::kV2;
  return {{"default", RunCgroups::Options()}, {"v1 only", v1}, {"v2 only", v2}};
}

TEST_CASE(
    "a run's cgroup holds a CPU quota of its cpu request and the agent's pids.max "
    "(skipped without cpu and pids cgroups)",
    "[run_cgroup]") {
  for (const auto& [name, options] : Versions()) {
    INFO("cgroups: " << name);
    RealCgroups real(options);
    std::shared_ptr<const RunCgroups> cgroups =
        real.With({CgroupController::kCpu, CgroupController::kPids});
    if (cgroups == nullptr) continue;
    CgroupLauncher f(cgroups, [](ProcessLauncher::Options& o) { o.pids_max = 4096; });
    LaunchReplica launch =
        f.Launch("worker-0", Asks(1.5), {kWorkload, "--print", "ready", "--sleep", "60"});
    REQUIRE(f.LaunchAndWait(launch, "ready"));
    const std::string pid = absl::StrCat(f.PidOf(launch.run_id()));
    const std::string cpu_dir = cgroups->RunDir(CgroupController::kCpu, launch.run_id());
    const std::string pids_dir = cgroups->RunDir(CgroupController::kPids, launch.run_id());
    if (cgroups->VersionOf(CgroupController::kCpu) == CgroupVersion::kV2) {
      CHECK(Value(cpu_dir + "/cpu.max") == "150000 100000");
    } else {
      CHECK(Value(cpu_dir + "/cpu.cfs_quota_us") == "150000");
      CHECK(Value(cpu_dir + "/cpu.cfs_period_us") == "100000");
    }
    CHECK(Value(pids_dir + "/pids.max") == "4096");
    CHECK(absl::StrContains(ReadFile(cpu_dir + "/cgroup.procs"), pid));
    CHECK(absl::StrContains(ReadFile(pids_dir + "/cgroup.procs"), pid));
    REQUIRE(f.launcher().Stop(launch.run_id(), 0, "test").ok());
    REQUIRE(f.WaitExit(launch.run_id()));
    // Removed right after the exit was reported.
    CHECK(testing::WaitUntil(
        [&] { return !std::filesystem::exists(cpu_dir) && !std::filesystem::exists(pids_dir); }));
  }
}

TEST_CASE("the kernel holds a run to pids.max (skipped without a pids cgroup)", "[run_cgroup]") {
  RealCgroups real;
  std::shared_ptr<const RunCgroups> cgroups = real.With({CgroupController::kPids});
  if (cgroups == nullptr) return;
  CgroupLauncher f(cgroups, [](ProcessLauncher::Options& o) { o.pids_max = 4; });
  // The shell is one task; it cannot start ten background sleeps.
  LaunchReplica launch = f.Launch(
      "worker-0", Asks(0),
      {"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 5 & done; echo started; wait"});
  f.launcher().Launch(launch);
  std::optional<ReplicaExited> exit = f.WaitExit(launch.run_id());
  REQUIRE(exit);
  const std::string log = ReadFile(f.LogPath("worker-0"));
  INFO(log);
  CHECK(exit->exit_code() != 0);
  CHECK(absl::StrContains(absl::AsciiStrToLower(log), "fork"));
  CHECK_FALSE(absl::StrContains(log, "started"));
}

}  // namespace
}  // namespace trainctl::agent
