// Each job's private /tmp and /dev/shm (agents/job_scratch.h, agents/shim/private_tmp.h):
// --job-tmpfs-size, the book-keeping of one tmpfs per job, the shim's mount failure, and real
// replicas of two jobs started by a ProcessLauncher. What mounts needs root and a work dir
// outside /tmp (one under /var/tmp); elsewhere it skips with a WARN saying why.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/agent_flags.h"
#include "agents/job_scratch.h"
#include "agents/launcher.h"
#include "agents/shim_spawn.h"
#include "agents/shim_status.h"
#include "tests/agents/cgroup_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ModeOf;
using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::RealCgroups;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;
using ::trainctl::v1::LaunchReplica;
using ::trainctl::v1::ReplicaExited;

// The mount points in this process's mount namespace, from /proc/self/mountinfo.
std::vector<std::string> MountPoints() {
  std::vector<std::string> points;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() > 4) points.push_back(fields[4]);
  }
  return points;
}

bool IsMounted(const std::string& path) {
  const std::vector<std::string> points = MountPoints();
  return std::find(points.begin(), points.end(), path) != points.end();
}

// A fresh directory under /var/tmp, outside /tmp and /dev/shm, removed on destruction with
// whatever a failed test left mounted below it; its path is "" where none can be made.
class OutsideTmpDir {
 public:
  OutsideTmpDir() {
    std::string pattern = "/var/tmp/trainctl-private-tmp-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr && UnderPrivateDir(pattern).empty()) path_ = pattern;
  }
  OutsideTmpDir(const OutsideTmpDir&) = delete;
  OutsideTmpDir& operator=(const OutsideTmpDir&) = delete;
  ~OutsideTmpDir() {
    if (path_.empty()) return;
    std::vector<std::string> points = MountPoints();
    std::sort(points.rbegin(), points.rend());  // the deepest first
    for (const std::string& point : points) {
      if (absl::StartsWith(point, path_ + "/")) umount2(point.c_str(), MNT_DETACH);
    }
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Whether this test may mount in `dir`; WARNs why not.
bool CanMount(const OutsideTmpDir& dir) {
  if (geteuid() != 0) {
    WARN("skipped: mounting needs root");
  } else if (dir.path().empty()) {
    WARN("skipped: no directory outside /tmp (under /var/tmp) for the work dir");
  } else {
    return true;
  }
  SUCCEED("skipped");
  return false;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

TEST_CASE("private tmp: --job-tmpfs-size takes 0, a percentage or a size", "[private_tmp]") {
  const std::map<std::string, std::string> good = {
      {"0", ""},        {"50%", "50%"},        {"100%", "100%"},       {"1048576", "1048576"},
      {"64k", "65536"}, {"512M", "536870912"}, {"64g", "68719476736"}, {"2T", "2199023255552"}};
  for (const auto& [text, option] : good) {
    absl::StatusOr<std::string> parsed = ParseJobTmpfsSize("--job-tmpfs-size", text);
    INFO(text);
    REQUIRE(parsed.ok());
    CHECK(*parsed == option);
  }
  for (const char* text : {"", "0%", "101%", "-1", "-1g", "12x", "g", "1.5g", " 1g", "0g",
                           "99999999999999999999", "9999999999t", "50%%"}) {
    absl::StatusOr<std::string> parsed = ParseJobTmpfsSize("--job-tmpfs-size", text);
    INFO(text);
    CHECK(absl::IsInvalidArgument(parsed.status()));
  }
  CHECK(ParseJobTmpfsSize("--job-tmpfs-size", "12x").status().message() ==
        "--job-tmpfs-size must be 0 (the host's /tmp and /dev/shm), a percentage of the host's "
        "memory such as 50%, or a size such as 64g, got \"12x\"");

  const std::vector<std::string> required = {
      "--scheduler", "127.0.0.1:7070", "--node", "n1", "--work-dir", "/var/lib/trainctl-agent"};
  absl::StatusOr<AgentFlags> defaults = ParseAgentFlags(required);
  REQUIRE(defaults.ok());
  CHECK(defaults->job_tmpfs_size == "50%");
  std::vector<std::string> args = required;
  args.insert(args.end(), {"--job-tmpfs-size", "0"});
  absl::StatusOr<AgentFlags> off = ParseAgentFlags(args);
  REQUIRE(off.ok());
  CHECK(off->job_tmpfs_size.empty());
  CHECK(absl::StrContains(AgentUsage(), "--job-tmpfs-size SIZE"));
  args.back() = "lots";
  CHECK(ParseAgentFlags(args).status().message() ==
        "--job-tmpfs-size must be 0 (the host's /tmp and /dev/shm), a percentage of the host's "
        "memory such as 50%, or a size such as 64g, got \"lots\"");
}

TEST_CASE("private tmp: paths under /tmp and /dev/shm are recognised", "[private_tmp]") {
  CHECK(UnderPrivateDir("/tmp") == "/tmp");
  CHECK(UnderPrivateDir("/tmp/a/b") == "/tmp");
  CHECK(UnderPrivateDir("/tmp/../tmp/x") == "/tmp");
  CHECK(UnderPrivateDir("/dev/shm/x") == "/dev/shm");
  CHECK(UnderPrivateDir("/tmpfoo").empty());
  CHECK(UnderPrivateDir("/var/tmp/x").empty());
  CHECK(UnderPrivateDir("/dev").empty());
}

TEST_CASE("private tmp: off without a size, or with a work dir under /tmp", "[private_tmp]") {
  TempDir dir;  // under /tmp
  {
    JobScratch scratch({dir.path() + "/scratch", "", "/var/lib/trainctl-agent"});
    CHECK(scratch.off_reason() == "--job-tmpfs-size is 0");
    absl::StatusOr<std::string> job_dir = scratch.Acquire("j1", "j1/1/w/0");
    REQUIRE(job_dir.ok());
    CHECK(job_dir->empty());
    CHECK(scratch.Jobs().empty());
    CHECK(scratch.CheckCheckpointDir("/tmp/ckpt").ok());
  }
  if (geteuid() == 0 && !UnderPrivateDir(dir.path()).empty()) {
    JobScratch scratch({dir.path() + "/scratch", "1m", dir.path()});
    CHECK(scratch.off_reason() == absl::StrCat("--work-dir ", dir.path(), " lies under /tmp"));
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/scratch"));
}

TEST_CASE("private tmp: one tmpfs per job, shared by its runs, gone with the last",
          "[private_tmp]") {
  OutsideTmpDir dir;
  if (!CanMount(dir)) return;
  const std::string root = dir.path() + "/scratch";
  JobScratch scratch({root, "1m", dir.path()});
  REQUIRE(scratch.off_reason().empty());
  CHECK_FALSE(IsMounted(root));  // the probe left nothing behind

  absl::StatusOr<std::string> a1 = scratch.Acquire("job-a", "job-a/1/w-0/0");
  REQUIRE(a1.ok());
  CHECK(*a1 == root + "/job-a");
  CHECK(IsMounted(root));
  CHECK(IsMounted(*a1));
  CHECK(ModeOf(root) == 0700);
  CHECK(ModeOf(*a1) == 0700);
  CHECK(ModeOf(*a1 + "/tmp") == 01777);
  CHECK(ModeOf(*a1 + "/shm") == 01777);
  struct statvfs fs;
  REQUIRE(statvfs(a1->c_str(), &fs) == 0);
  CHECK(fs.f_blocks * fs.f_frsize == uint64_t{1} << 20);
  WriteText(*a1 + "/tmp/file", "a");

  absl::StatusOr<std::string> a2 = scratch.Acquire("job-a", "job-a/1/w-1/0");
  REQUIRE(a2.ok());
  CHECK(*a2 == *a1);
  CHECK(ReadFile(*a2 + "/tmp/file") == "a");
  absl::StatusOr<std::string> b = scratch.Acquire("job-b", "job-b/1/w-0/0");
  REQUIRE(b.ok());
  CHECK(*b == root + "/job-b");
  CHECK(IsMounted(*b));
  CHECK_FALSE(std::filesystem::exists(*b + "/tmp/file"));
  CHECK(scratch.Jobs() == std::vector<std::string>{"job-a", "job-b"});

  scratch.Release("job-a/1/w-0/0");
  scratch.Release("job-a/9/unknown/0");  // holds nothing: ignored
  CHECK(ReadFile(*a1 + "/tmp/file") == "a");
  scratch.Release("job-a/1/w-1/0");
  CHECK_FALSE(IsMounted(*a1));
  CHECK_FALSE(std::filesystem::exists(*a1));
  CHECK(IsMounted(root));
  scratch.Release("job-b/1/w-0/0");
  CHECK_FALSE(std::filesystem::exists(*b));
  CHECK_FALSE(IsMounted(root));
  CHECK(scratch.Jobs().empty());
}

TEST_CASE("private tmp: a restarted agent keeps the tmpfs of adopted jobs and removes the rest",
          "[private_tmp]") {
  OutsideTmpDir dir;
  if (!CanMount(dir)) return;
  const std::string root = dir.path() + "/scratch";
  const JobScratch::Options options{root, "1m", dir.path()};
  {
    JobScratch before(options);
    REQUIRE(before.Acquire("job-a", "job-a/1/w-0/0").ok());
    REQUIRE(before.Acquire("job-b", "job-b/1/w-0/0").ok());
    WriteText(root + "/job-a/shm/segment", "kept");
  }  // the agent ends; its mounts stay
  CHECK(IsMounted(root + "/job-a"));
  JobScratch after(options);
  REQUIRE(after.off_reason().empty());
  after.Adopt("job-a", "job-a/1/w-0/0");
  after.RemoveUnused();
  CHECK(ReadFile(root + "/job-a/shm/segment") == "kept");
  CHECK_FALSE(std::filesystem::exists(root + "/job-b"));
  // A new run of the adopted job shares its tmpfs.
  absl::StatusOr<std::string> again = after.Acquire("job-a", "job-a/1/w-0/1");
  REQUIRE(again.ok());
  CHECK(ReadFile(*again + "/shm/segment") == "kept");
  after.Release("job-a/1/w-0/0");
  after.Release("job-a/1/w-0/1");
  CHECK_FALSE(std::filesystem::exists(root + "/job-a"));
  CHECK_FALSE(IsMounted(root));
}

TEST_CASE("private tmp: a checkpoint dir under /tmp or /dev/shm is refused", "[private_tmp]") {
  OutsideTmpDir dir;
  if (!CanMount(dir)) return;
  JobScratch scratch({dir.path() + "/scratch", "1m", dir.path()});
  REQUIRE(scratch.off_reason().empty());
  CHECK(scratch.CheckCheckpointDir(dir.path() + "/ckpt").ok());
  CHECK(scratch.CheckCheckpointDir("").ok());
  absl::Status refused = scratch.CheckCheckpointDir("/dev/shm/ckpt");
  CHECK(absl::IsInvalidArgument(refused));
  CHECK(refused.message() ==
        "checkpoint dir /dev/shm/ckpt lies under /dev/shm, which each job has to itself on this "
        "node and loses when it ends here (trainctl-agent --job-tmpfs-size): choose a checkpoint "
        "directory outside /tmp and /dev/shm");
}

TEST_CASE("private tmp: a shim that cannot mount fails the launch as the host's fault",
          "[private_tmp]") {
  TempDir dir;
  const std::string run_dir = dir.path() + "/run";
  REQUIRE(mkdir(run_dir.c_str(), 0755) == 0);
  const int log_fd = open((dir.path() + "/log").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(log_fd >= 0);
  ShimRequest request;
  request.shim_path = TRAINCTL_SHIM_PATH;
  request.run_dir = run_dir;
  request.exec_path = "/bin/true";
  request.argv = {"true"};
  request.env = {"PATH=/usr/bin:/bin"};
  request.working_dir = dir.path();
  request.log_fd = log_fd;
  request.private_tmp = "/nonexistent-trainctl-scratch/job-a";
  absl::StatusOr<SpawnedShim> shim = SpawnShim(request);
  close(log_fd);
  REQUIRE(shim.ok());
  std::string ready;
  REQUIRE(WaitUntil([&] {
    char buf[256];
    const ssize_t n = read(shim->ready_fd, buf, sizeof(buf));
    if (n > 0) ready.append(buf, static_cast<size_t>(n));
    return n == 0;
  }));
  close(shim->ready_fd);
  close(shim->pidfd);
  int wait_status = 0;
  REQUIRE(waitpid(shim->pid, &wait_status, 0) == shim->pid);
  CHECK(WEXITSTATUS(wait_status) == 0);
  absl::StatusOr<ShimStatus> status = ReadShimStatus(run_dir);
  REQUIRE(status.ok());
  CHECK(status->failed_stage == "mount");
  const absl::Status error = LaunchErrorOf(*status, "true", dir.path(), "");
  CHECK(absl::IsInternal(error));  // the host's, never the user's
  CHECK(absl::StartsWith(error.message(),
                         "cannot give the replica its job's private /tmp and /dev/shm: "));
  if (geteuid() == 0) {
    CHECK(ready == "failed mount 2\n");
    CHECK(error.message() ==
          "cannot give the replica its job's private /tmp and /dev/shm: cannot mount "
          "/nonexistent-trainctl-scratch/job-a/tmp over /tmp: No such file or directory");
  }
}

// A launcher over a work dir outside /tmp, running replicas as nobody, that records exits.
class PrivateTmpLauncher {
 public:
  PrivateTmpLauncher(const std::string& work_dir, std::shared_ptr<const RunCgroups> cgroups) {
    ProcessLauncher::Options& options = options_;
    options.work_dir = work_dir;
    options.job_tmpfs_size = "16m";
    options.cgroups = std::move(cgroups);
    options.memory_check_interval = absl::Hours(1);  // only the kernel enforces memory limits
    options.on_exited = [this](ReplicaExited exited) {
      absl::MutexLock lock(&mu_);
      exited_[exited.run_id()] = std::move(exited);
    };
    launcher_ = std::make_unique<ProcessLauncher>(options);
  }
  ~PrivateTmpLauncher() {
    launcher_->StopAll(0, "test over");
    launcher_->WaitUntilIdle(absl::Now() + absl::Seconds(10));
  }

  ProcessLauncher& launcher() { return *launcher_; }

  // What an agent restart does: a new launcher on the same work dir, which adopts the runs of the
  // old one.
  void Restart() {
    launcher_.reset();
    launcher_ = std::make_unique<ProcessLauncher>(options_);
    launcher_->AdoptRecordedRuns();
  }

  // Launches replica `replica` of job `job` running `script` with /bin/sh; its run id.
  std::string Launch(const std::string& job, const std::string& replica, const std::string& script,
                     int64_t memory_mb = 0) {
    LaunchReplica launch;
    launch.set_job_id(job);
    launch.set_attempt(1);
    launch.set_replica_name(replica);
    launch.set_run_id(absl::StrCat(job, "/1/", replica, "/0"));
    for (const char* arg : {"/bin/sh", "-c"}) launch.add_argv(arg);
    launch.add_argv(script);
    launch.mutable_resources()->set_memory_mb(memory_mb);
    launcher_->Launch(launch);
    return launch.run_id();
  }

  // Waits until the run's replica runs (its shim said so); false when not in time.
  bool WaitStarted(const std::string& run_id) {
    return WaitUntil([&] {
      for (const trainctl::v1::KnownRun& known : launcher_->KnownRuns()) {
        if (known.run_id() == run_id && known.pid() > 0) return true;
      }
      return false;
    });
  }

  std::optional<ReplicaExited> WaitExit(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exited_.count(run_id) > 0; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(30))) return std::nullopt;
    return exited_.at(run_id);
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, ReplicaExited> exited_ ABSL_GUARDED_BY(mu_);
  ProcessLauncher::Options options_;
  std::unique_ptr<ProcessLauncher> launcher_;
};

TEST_CASE("private tmp: a job's replicas share /tmp and /dev/shm, no one else sees them",
          "[private_tmp]") {
  OutsideTmpDir dir;
  if (!CanMount(dir)) return;
  const std::string scratch = dir.path() + "/scratch";
  const std::string tag = absl::StrCat("trainctl-private-tmp-test-", getpid());
  PrivateTmpLauncher f(dir.path(), nullptr);

  // Replica 0 of job A writes into /tmp and /dev/shm as nobody, and stays.
  const std::string writer =
      f.Launch("job-a", "w-0",
               absl::StrCat("echo in-tmp > /tmp/", tag, " && echo in-shm > /dev/shm/", tag,
                            " && exec sleep 60"));
  REQUIRE(WaitUntil([&] { return ReadFile(scratch + "/job-a/shm/" + tag) == "in-shm\n"; }));
  CHECK(ReadFile(scratch + "/job-a/tmp/" + tag) == "in-tmp\n");
  // The host's /tmp and /dev/shm do not have them.
  CHECK_FALSE(std::filesystem::exists("/tmp/" + tag));
  CHECK_FALSE(std::filesystem::exists("/dev/shm/" + tag));

  // Replica 1 of job A reads them.
  const std::string reader =
      f.Launch("job-a", "w-1", absl::StrCat("cat /tmp/", tag, " /dev/shm/", tag));
  std::optional<ReplicaExited> read = f.WaitExit(reader);
  REQUIRE(read);
  CHECK(read->exit_code() == 0);
  CHECK(read->output_tail() == "in-tmp\nin-shm");

  // A replica of job B sees neither, nor any job's directory, and its own /tmp is empty.
  const std::string other = f.Launch(
      "job-b", "w-0",
      absl::StrCat("test ! -e /tmp/", tag, " && test ! -e /dev/shm/", tag, " && test ! -e ",
                   scratch, "/job-a && [ -z \"$(ls -A /tmp)$(ls -A /dev/shm)\" ] && echo clean"));
  std::optional<ReplicaExited> looked = f.WaitExit(other);
  REQUIRE(looked);
  CHECK(looked->exit_code() == 0);
  CHECK(looked->output_tail() == "clean");

  // Once job A's last replica here ended, its tmpfs is gone; and with the last job, the rest.
  REQUIRE(f.launcher().Stop(writer, 0, "test").ok());
  REQUIRE(f.WaitExit(writer));
  CHECK(WaitUntil([&] { return !std::filesystem::exists(scratch + "/job-a"); }));
  CHECK(WaitUntil([&] { return !IsMounted(scratch); }));
}

TEST_CASE("private tmp: what a replica writes to /dev/shm counts against its memory limit",
          "[private_tmp]") {
  OutsideTmpDir dir;
  if (!CanMount(dir)) return;
  RealCgroups cgroups;
  std::shared_ptr<const RunCgroups> memory = cgroups.With({CgroupController::kMemory});
  if (memory == nullptr) return;
  PrivateTmpLauncher f(dir.path(), memory);
  const std::string shm = dir.path() + "/scratch/job-m/shm";
  const std::string name = absl::StrCat("trainctl-private-tmp-big-", getpid());
  // Another replica of the job keeps its tmpfs, and what the writer left there, after the
  // writer's end.
  const std::string holder = f.Launch("job-m", "w-1", "exec sleep 60");
  REQUIRE(f.WaitStarted(holder));
  // 16 MiB of tmpfs is the whole job's; 12 MiB of it fit a limit of 8 MiB only if tmpfs pages
  // were not charged to the writer.
  const std::string writer =
      f.Launch("job-m", "w-0", absl::StrCat("head -c 12582912 /dev/zero > /dev/shm/", name), 8);
  std::optional<ReplicaExited> exited = f.WaitExit(writer);
  REQUIRE(exited);
  CHECK(exited->oom_killed());
  std::error_code error;
  const uintmax_t written = std::filesystem::file_size(shm + "/" + name, error);
  CHECK_FALSE(error);
  CHECK(written > 0);
  CHECK(written < uintmax_t{8} << 20);
  CHECK_FALSE(std::filesystem::exists("/dev/shm/" + name));
  REQUIRE(f.launcher().Stop(holder, 0, "test").ok());
  CHECK(WaitUntil([&] { return !std::filesystem::exists(dir.path() + "/scratch/job-m"); }));
}

TEST_CASE("private tmp: a job whose tmpfs cannot be mounted fails to launch as the host's fault",
          "[private_tmp]") {
  OutsideTmpDir dir;
  if (!CanMount(dir)) return;
  const std::string scratch = dir.path() + "/scratch";
  PrivateTmpLauncher f(dir.path(), nullptr);
  const std::string holder = f.Launch("job-a", "w-0", "exec sleep 60");
  REQUIRE(f.WaitStarted(holder));
  CHECK(IsMounted(scratch + "/job-a"));
  // A file where job-x's directory goes: no tmpfs can be mounted there.
  WriteText(scratch + "/job-x", "");
  const std::string blocked = f.Launch("job-x", "w-0", "echo ran");
  std::optional<ReplicaExited> exited = f.WaitExit(blocked);
  REQUIRE(exited);
  CHECK(exited->launch_failed());
  CHECK_FALSE(exited->launch_error_is_user());
  CHECK_THAT(exited->launch_error(),
             Catch::StartsWith("cannot set up the job's private /tmp and /dev/shm: cannot mount "
                               "a tmpfs (mode=0700,size=16m) at " +
                               scratch + "/job-x: "));
  CHECK(ReadFile(dir.path() + "/logs/job-x/attempt-1/w-0.restart-0.log").find("ran") ==
        std::string::npos);
  REQUIRE(f.launcher().Stop(holder, 0, "test").ok());
}

TEST_CASE("private tmp: after an agent restart, adopted replicas keep sharing their job's tmpfs",
          "[private_tmp]") {
  OutsideTmpDir dir;
  if (!CanMount(dir)) return;
  const std::string scratch = dir.path() + "/scratch";
  PrivateTmpLauncher f(dir.path(), nullptr);
  f.Launch("job-a", "w-0", "echo kept > /dev/shm/segment && exec sleep 60");
  REQUIRE(WaitUntil([&] { return ReadFile(scratch + "/job-a/shm/segment") == "kept\n"; }));
  // What an earlier agent left of a job that no longer runs here.
  REQUIRE(mkdir((scratch + "/job-gone").c_str(), 0700) == 0);
  f.Restart();
  CHECK_FALSE(std::filesystem::exists(scratch + "/job-gone"));
  const std::string reader = f.Launch("job-a", "w-1", "cat /dev/shm/segment");
  std::optional<ReplicaExited> read = f.WaitExit(reader);
  REQUIRE(read);
  CHECK(read->exit_code() == 0);
  CHECK(read->output_tail() == "kept");
  REQUIRE(f.launcher().Stop("job-a/1/w-0/0", 0, "test").ok());
  CHECK(WaitUntil([&] { return !IsMounted(scratch); }));
}

}  // namespace
}  // namespace trainctl::agent
