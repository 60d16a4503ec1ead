// RunIsolation: which GPU device nodes a run is denied, the cgroup v2 device program (run in a
// small interpreter here), and, with the host's real cgroups where it allows them, exclusive
// cpusets under the static CPU policy and device nodes a run may not open.
#include "agents/run_isolation.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/cgroup_fs.h"
#include "agents/cgroup_text.h"
#include "agents/device_filter.h"
#include "agents/run_records.h"
#include "tests/agents/cgroup_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::Asks;
using ::trainctl::agent::testing::CgroupLauncher;
using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::RealCgroups;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;
using ::trainctl::v1::GpuDevice;
using ::trainctl::v1::LaunchReplica;

using testing::kWorkload;

GpuDevice Gpu(int index, int minor) {
  GpuDevice gpu;
  gpu.set_index(index);
  gpu.set_minor(minor);
  return gpu;
}

google::protobuf::RepeatedField<int32_t> Owned(std::vector<int32_t> indices) {
  return google::protobuf::RepeatedField<int32_t>(indices.begin(), indices.end());
}

TEST_CASE("a run is denied the device nodes of every GPU that is not its own", "[run_isolation]") {
  // Indices and minors differ on hosts where nvidia-smi's PCI order is not the minor order.
  const std::vector<GpuDevice> inventory = {Gpu(0, 2), Gpu(1, 0), Gpu(2, 3), Gpu(3, 1)};
  struct Row {
    const char* requirement;
    std::vector<int32_t> owned;
    std::vector<int> denied;
  };
  const Row rows[] = {
      {"a run without GPUs may open none", {}, {0, 1, 2, 3}},
      {"its own GPU's minor stays allowed", {0}, {0, 1, 3}},
      {"two GPUs", {1, 3}, {2, 3}},
      {"all of them", {0, 1, 2, 3}, {}},
      {"an index the node does not have changes nothing", {7}, {0, 1, 2, 3}},
  };
  for (const Row& row : rows) {
    INFO(row.requirement);
    CHECK(DeniedGpuMinors(inventory, Owned(row.owned)) == row.denied);
  }
  // Synthetic GPUs (--gpus N) have no device node; an empty inventory denies nothing.
  CHECK(DeniedGpuMinors({Gpu(0, -1), Gpu(1, -1)}, Owned({})).empty());
  CHECK(DeniedGpuMinors({}, Owned({})).empty());
}

// Runs a cgroup device program as the kernel would for one access: the opcodes
// DeviceFilterProgram uses, and nothing else (an unknown one fails the test).
int RunDeviceProgram(const std::vector<bpf_insn>& program, uint32_t type, uint32_t major,
                     uint32_t minor) {
  const uint32_t ctx[3] = {(BPF_DEVCG_ACC_READ << 16) | type, major, minor};
  uint64_t reg[11] = {};
  for (size_t pc = 0; pc < program.size(); ++pc) {
    const bpf_insn& insn = program[pc];
    const uint64_t imm = static_cast<uint32_t>(insn.imm);
    switch (insn.code) {
      case BPF_LDX | BPF_MEM | BPF_W:
        REQUIRE(insn.src_reg == 1);
        reg[insn.dst_reg] = ctx[insn.off / 4];
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        reg[insn.dst_reg] = static_cast<uint32_t>(reg[insn.dst_reg] & imm);
        break;
      case BPF_ALU64 | BPF_MOV | BPF_K:
        reg[insn.dst_reg] = imm;
        break;
      case BPF_JMP | BPF_JNE | BPF_K:
        if (reg[insn.dst_reg] != imm) pc += insn.off;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        if (reg[insn.dst_reg] == imm) pc += insn.off;
        break;
      case BPF_JMP | BPF_EXIT:
        return static_cast<int>(reg[0]);
      default:
        FAIL("unexpected opcode " << static_cast<int>(insn.code));
    }
  }
  FAIL("the program ran off its end");
  return -1;
}

TEST_CASE("the v2 device program denies exactly the listed minors of its major",
          "[run_isolation]") {
  const std::vector<bpf_insn> program = DeviceFilterProgram(kNvidiaMajor, {1, 3});
  struct Row {
    uint32_t type, major, minor;
    int verdict;
  };
  const Row rows[] = {
      {BPF_DEVCG_DEV_CHAR, 195, 1, 0},   {BPF_DEVCG_DEV_CHAR, 195, 3, 0},
      {BPF_DEVCG_DEV_CHAR, 195, 0, 1},   {BPF_DEVCG_DEV_CHAR, 195, 2, 1},
      {BPF_DEVCG_DEV_CHAR, 195, 255, 1},  // nvidiactl
      {BPF_DEVCG_DEV_CHAR, 1, 3, 1},      // /dev/null
      {BPF_DEVCG_DEV_BLOCK, 195, 1, 1},
  };
  for (const Row& row : rows) {
    INFO(row.type << " " << row.major << ":" << row.minor);
    CHECK(RunDeviceProgram(program, row.type, row.major, row.minor) == row.verdict);
  }
  CHECK(RunDeviceProgram(DeviceFilterProgram(kNvidiaMajor, {}), BPF_DEVCG_DEV_CHAR, 195, 1) == 1);
}

std::set<int> CpusetOf(const RunCgroups& cgroups, const std::string& run_id) {
  return ParseCpuList(ReadFile(cgroups.RunDir(CgroupController::kCpuset, run_id) + "/cpuset.cpus"))
      .value_or(std::set<int>{-1});
}

// The CPUs the kernel lets `pid` run on (Cpus_allowed_list of /proc/<pid>/status).
std::set<int> AllowedCpus(int64_t pid) {
  const std::string status = ReadFile(absl::StrCat("/proc/", pid, "/status"));
  const size_t at = status.find("Cpus_allowed_list:");
  if (at == std::string::npos) return {-1};
  const size_t start = at + std::strlen("Cpus_allowed_list:");
  return ParseCpuList(status.substr(start, status.find('\n', start) - start))
      .value_or(std::set<int>{-1});
}

std::set<int> Minus(std::set<int> a, const std::set<int>& b) {
  for (int cpu : b) a.erase(cpu);
  return a;
}

// A launcher with the static CPU policy and run records, over the host's cpuset cgroup.
class StaticPolicy {
 public:
  // ok() is false (after a WARN) without a cpuset cgroup or with fewer than 2 CPUs, since the
  // policy always keeps one shared.
  StaticPolicy() : cgroups_(real_.With({CgroupController::kCpuset})), cpus_(AffinityCpus()) {
    if (cgroups_ == nullptr) return;
    if (cpus_.size() < 2) {
      WARN("skipped: " << cpus_.size() << " CPU; the static policy keeps 1 shared");
      return;
    }
    launcher_.emplace(cgroups_,
                      [](ProcessLauncher::Options& o) { o.cpu_policy = CpuPolicy::kStatic; });
  }

  bool ok() const { return launcher_.has_value(); }
  const RunCgroups& cgroups() const { return *cgroups_; }
  // The agent's CPUs.
  const std::set<int>& all() const { return cpus_; }
  CgroupLauncher& f() { return *launcher_; }
  RunRecordStore records() { return RunRecordStore(launcher_->work_dir() + "/runs"); }

 private:
  RealCgroups real_;
  std::shared_ptr<const RunCgroups> cgroups_;
  const std::set<int> cpus_;
  std::optional<CgroupLauncher> launcher_;
};

TEST_CASE(
    "under the static CPU policy whole-CPU runs get disjoint exclusive cpusets and the others "
    "share the rest (skipped without a cpuset cgroup or with fewer than 2 CPUs)",
    "[run_isolation]") {
  StaticPolicy fixture;
  if (!fixture.ok()) return;
  const RunCgroups* cgroups = &fixture.cgroups();
  const std::set<int>& all = fixture.all();
  CgroupLauncher& f = fixture.f();
  // Two exclusive runs of k CPUs fit beside the one always-shared CPU only with 2k + 1 CPUs;
  // with fewer, the second falls back to the shared pool.
  const int k = all.size() >= 5 ? 2 : 1;
  const bool both_fit = static_cast<int>(all.size()) >= 2 * k + 1;
  const std::vector<std::string> sleep = {kWorkload, "--print", "ready", "--sleep", "60"};
  LaunchReplica a = f.Launch("a", Asks(k), sleep);
  LaunchReplica b = f.Launch("b", Asks(k), sleep);
  LaunchReplica c = f.Launch("c", Asks(0.5), sleep);
  for (const LaunchReplica* launch : {&a, &b, &c}) REQUIRE(f.LaunchAndWait(*launch, "ready"));

  const std::set<int> a_cpus = CpusetOf(*cgroups, a.run_id());
  const std::set<int> b_cpus = CpusetOf(*cgroups, b.run_id());
  INFO("CPUs " << FormatCpuList(all) << ": a " << FormatCpuList(a_cpus) << ", b "
               << FormatCpuList(b_cpus));
  CHECK(static_cast<int>(a_cpus.size()) == k);
  CHECK(Minus(a_cpus, all).empty());
  std::set<int> shared = Minus(all, a_cpus);
  if (both_fit) {
    CHECK(static_cast<int>(b_cpus.size()) == k);
    CHECK(Minus(b_cpus, shared) == std::set<int>());  // disjoint from a's
    shared = Minus(shared, b_cpus);
  } else {
    CHECK(b_cpus == shared);  // fell back to the shared pool
  }
  CHECK(CpusetOf(*cgroups, c.run_id()) == shared);
  CHECK(AllowedCpus(f.PidOf(c.run_id())) == shared);
  CHECK(AllowedCpus(f.PidOf(a.run_id())) == a_cpus);
  // The run records keep the exclusive CPUs for an agent that restarts.
  std::map<std::string, std::string> recorded;
  for (const RunRecordStore::Found& found : fixture.records().Load()) {
    CHECK(found.shim_alive);
    recorded[found.record.run_id] = found.record.exclusive_cpus;
  }
  CHECK(recorded[a.run_id()] == FormatCpuList(a_cpus));
  CHECK(recorded[b.run_id()] == (both_fit ? FormatCpuList(b_cpus) : ""));
  CHECK(recorded[c.run_id()] == "");

  // a's CPUs go back to the shared runs when it ends.
  REQUIRE(f.launcher().Stop(a.run_id(), 0, "test").ok());
  REQUIRE(f.WaitExit(a.run_id()));
  const std::set<int> grown = both_fit ? Minus(all, b_cpus) : all;
  CHECK(CpusetOf(*cgroups, c.run_id()) == grown);
  CHECK(AllowedCpus(f.PidOf(c.run_id())) == grown);
  f.launcher().StopAll(0, "test");
  CHECK(f.launcher().WaitUntilIdle(absl::Now() + absl::Seconds(10)));
}

TEST_CASE(
    "a run adopted after an agent restart keeps its exclusive CPUs until it ends "
    "(skipped without a cpuset cgroup or with fewer than 2 CPUs)",
    "[run_isolation]") {
  StaticPolicy fixture;
  if (!fixture.ok()) return;
  const RunCgroups* cgroups = &fixture.cgroups();
  const std::set<int>& all = fixture.all();
  CgroupLauncher& f = fixture.f();
  // What an earlier agent left: a run with an exclusive CPU, in its cgroups, and its record.
  LaunchReplica old = f.Launch("old", Asks(1), {kWorkload, "--print", "ready", "--sleep", "60"});
  REQUIRE(f.LaunchAndWait(old, "ready"));
  const std::string old_run = old.run_id();
  const std::set<int> old_cpus = CpusetOf(*cgroups, old_run);
  REQUIRE(old_cpus.size() == 1);
  f.Restart();
  REQUIRE(f.launcher().AdoptRecordedRuns() == std::vector<std::string>{old_run});

  // A new whole-CPU run goes around the adopted run's CPU: on another exclusive CPU, or, with 2
  // CPUs, in the shared pool.
  LaunchReplica b = f.Launch("b", Asks(1), {kWorkload, "--print", "ready", "--sleep", "60"});
  REQUIRE(f.LaunchAndWait(b, "ready"));
  const std::set<int> b_cpus = CpusetOf(*cgroups, b.run_id());
  INFO("CPUs " << FormatCpuList(all) << ": adopted " << FormatCpuList(old_cpus) << ", b "
               << FormatCpuList(b_cpus));
  CHECK(Minus(b_cpus, Minus(all, old_cpus)).empty());
  CHECK(CpusetOf(*cgroups, old_run) == old_cpus);

  // Its end frees the CPU and removes its cgroups.
  REQUIRE(f.launcher().Stop(old_run, 0, "test").ok());
  REQUIRE(f.WaitExit(old_run));
  CHECK_FALSE(std::filesystem::exists(cgroups->RunDir(CgroupController::kCpuset, old_run)));
  if (all.size() == 2) CHECK(CpusetOf(*cgroups, b.run_id()) == all);
  f.launcher().StopAll(0, "test");
  CHECK(f.launcher().WaitUntilIdle(absl::Now() + absl::Seconds(10)));
}

// What opening `path` read-write gives this process: "opened" or the errno text.
std::string TryOpen(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    return "opened";
  }
  return std::strerror(errno);
}

TEST_CASE(
    "a run cannot open the device nodes of other runs' GPUs, only its own "
    "(skipped without a devices cgroup or where device nodes cannot be made)",
    "[run_isolation]") {
  for (const auto& [name, only] : std::vector<std::pair<std::string, std::optional<CgroupVersion>>>{
           {"default", std::nullopt},
           {"v1 devices.deny", CgroupVersion::kV1},
           {"v2 BPF program", CgroupVersion::kV2}}) {
    INFO("cgroups: " << name);
    RunCgroups::Options options;
    options.only_version = only;
    RealCgroups real(options);
    std::shared_ptr<const RunCgroups> cgroups = real.With({CgroupController::kDevices});
    if (cgroups == nullptr) continue;
    // A GPU's device node without its driver: opening it fails with ENXIO, unless a device
    // cgroup denies it first (EPERM).
    TempDir dir;
    constexpr int kMinor = 200;
    const std::string node = dir.path() + "/nvidia200";
    if (mknod(node.c_str(), S_IFCHR | 0666, makedev(kNvidiaMajor, kMinor)) != 0 ||
        TryOpen(node) != std::strerror(ENXIO)) {
      WARN("skipped: cannot make a usable device node in " << dir.path() << ": " << TryOpen(node));
      continue;
    }
    CgroupLauncher f(cgroups, [&](ProcessLauncher::Options& o) {
      o.gpu_inventory = {Gpu(0, kMinor), Gpu(1, kMinor + 1), Gpu(2, -1)};
    });
    const std::vector<std::string> try_open = {"/bin/sh", "-c", "exec 3<> \"$0\"; echo opened",
                                               node};
    LaunchReplica owner = f.Launch("owner", Asks(0), try_open);
    owner.add_gpu_devices(0);
    LaunchReplica other = f.Launch("other", Asks(0), try_open);
    other.add_gpu_devices(1);
    other.add_gpu_devices(2);
    for (const LaunchReplica* launch : {&owner, &other}) {
      f.launcher().Launch(*launch);
      REQUIRE(f.WaitExit(launch->run_id()));
    }
    const std::string owner_log = ReadFile(f.LogPath("owner"));
    const std::string other_log = ReadFile(f.LogPath("other"));
    INFO("owner: " << owner_log << "other: " << other_log);
    CHECK(absl::StrContains(owner_log, std::strerror(ENXIO)));
    CHECK(absl::StrContains(other_log, std::strerror(EPERM)));
    CHECK_FALSE(absl::StrContains(other_log, "opened"));
  }
}

}  // namespace
}  // namespace trainctl::agent
