// Tests of trainctl-shim (agents/shim/shim_main.cc), run as a real process the way the agent
// runs it. The agent's reading of what it writes: shim_status_test.cc.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agents/proc_stats.h"
#include "agents/run_cgroup.h"
#include "agents/shim/log_cap.h"
#include "agents/shim/shim_protocol.h"
#include "agents/shim_status.h"
#include "tests/agents/cgroup_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::RealCgroups;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;

// Where the shim finds its ready pipe and lock file: far above the fds a test has open.
constexpr int kReadyFd = 100;
constexpr int kLockFd = 101;
// A flag value the fixture replaces with the path of the shim's log.
constexpr char kLogPathFlag[] = "<log path>";
// An fd the shim inherits without being told of it.
constexpr int kStrayFd = 102;

// The shim's environment, which the replica gets unchanged.
const std::vector<std::string> kShimEnv = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
    "SHIM_TEST_VAR=passed on"};

// How to start a shim.
struct ShimLaunch {
  ShimLaunch(std::string exec, std::vector<std::string> argv, std::vector<std::string> flags = {})
      : exec(std::move(exec)), argv(std::move(argv)), flags(std::move(flags)) {}

  std::string exec;               // --exec
  std::vector<std::string> argv;  // the replica's, after "--"
  std::vector<std::string> flags;
  // Pass the write end of a ready pipe (--ready-fd), a locked file (--lock-fd), an fd the shim
  // is not told of.
  bool ready_fd = true;
  bool lock_fd = false;
  bool stray_fd = false;
};

ShimLaunch Sh(const std::string& script) { return {"/bin/sh", {"sh", "-c", script}}; }

ShimLaunch Workload(std::vector<std::string> args) {
  args.insert(args.begin(), "workload");
  return {TRAINCTL_WORKLOAD_PATH, std::move(args)};
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Starts `argv` with posix_spawn, its stdin on /dev/null and stdout and stderr on `log_fd`, plus
// each (from, to) fd of `dup_fds`. Returns its pid, 0 on failure.
pid_t Spawn(const std::vector<std::string>& argv, int log_fd,
            const std::vector<std::pair<int, int>>& dup_fds) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
  for (const auto& [from, to] : dup_fds) posix_spawn_file_actions_adddup2(&actions, from, to);
  std::vector<char*> args = CStrings(argv);
  std::vector<char*> env = CStrings(kShimEnv);
  pid_t pid = 0;
  int error = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : 0;
}

// One trainctl-shim with its run dir (<temp>/run) and log (<temp>/log), started by the test as
// the agent starts it. Via a fake agent, the shim's parent is a shell that waits for it, which
// the test can kill. The destructor kills the replica and the shim if they still run.
class Shim {
 public:
  explicit Shim(const ShimLaunch& launch, bool via_fake_agent = false) {
    run_dir_ = dir_.path() + "/run";
    REQUIRE(mkdir(run_dir_.c_str(), 0755) == 0);
    const int log_fd = open(log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    REQUIRE(log_fd >= 0);
    std::vector<std::string> argv = {TRAINCTL_SHIM_PATH, "--run-dir", run_dir_, "--exec",
                                     launch.exec};
    for (const std::string& flag : launch.flags) {
      argv.push_back(flag == kLogPathFlag ? log_path() : flag);
    }
    // By default the replica works in the test's directory, where its core dumps go too.
    if (std::find(launch.flags.begin(), launch.flags.end(), "--cwd") == launch.flags.end()) {
      argv.insert(argv.end(), {"--cwd", dir_.path()});
    }
    std::vector<std::pair<int, int>> dup_fds;
    int ready_write = -1;
    if (launch.ready_fd) {
      int fds[2];
      REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
      ready_read_ = fds[0];
      ready_write = fds[1];
      dup_fds.emplace_back(ready_write, kReadyFd);
      argv.insert(argv.end(), {"--ready-fd", std::to_string(kReadyFd)});
    }
    int lock = -1;
    if (launch.lock_fd) {
      lock = open(lock_path().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      REQUIRE(lock >= 0);
      REQUIRE(flock(lock, LOCK_EX) == 0);
      dup_fds.emplace_back(lock, kLockFd);
      argv.insert(argv.end(), {"--lock-fd", std::to_string(kLockFd)});
    }
    if (launch.stray_fd) dup_fds.emplace_back(log_fd, kStrayFd);
    argv.push_back("--");
    argv.insert(argv.end(), launch.argv.begin(), launch.argv.end());
    if (via_fake_agent) argv.insert(argv.begin(), {"/bin/sh", "-c", "\"$@\" & wait", "agent"});
    pid_ = Spawn(argv, log_fd, dup_fds);
    close(log_fd);
    if (ready_write >= 0) close(ready_write);
    if (lock >= 0) close(lock);  // the shim's copy holds the lock now
    REQUIRE(pid_ > 0);
  }
  Shim(const Shim&) = delete;
  Shim& operator=(const Shim&) = delete;

  ~Shim() {
    if (ready_read_ >= 0) close(ready_read_);
    // The replica, then the shim itself; both end on their own when the test went well.
    absl::StatusOr<ShimPid> shim = ReadShimPid(run_dir_);
    if (shim.ok() && !ProcessIsGone(shim->pid)) {
      sigqueue(shim->pid, shim::ShimForwardSignal(), sigval{.sival_int = SIGKILL});
      if (!WaitUntil([&] { return ProcessIsGone(shim->pid); })) kill(shim->pid, SIGKILL);
    }
    if (!reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // The process the test started: the shim, or the fake agent.
  pid_t pid() const { return pid_; }
  const std::string& run_dir() const { return run_dir_; }
  std::string log_path() const { return dir_.path() + "/log"; }
  std::string lock_path() const { return dir_.path() + "/lock"; }
  std::string Log() const { return ReadFile(log_path()); }

  // What the shim wrote to the ready pipe, read until EOF.
  std::string ReadyText() {
    std::string text;
    char buf[256];
    ssize_t n;
    while ((n = read(ready_read_, buf, sizeof(buf))) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    return text;
  }

  // The ready line, parsed; REQUIREs that it says "started".
  ShimStatus Started() {
    const std::string text = ReadyText();
    absl::StatusOr<ShimStatus> ready = ParseReadyLine(text);
    INFO("ready line: " << text << "log: " << Log());
    REQUIRE(ready.ok());
    REQUIRE(ready->state == ShimStatus::State::kRunning);
    return *ready;
  }

  // Reaps the process the test started; its wait status, or nullopt when it did not end within
  // 30 s.
  std::optional<int> Wait() {
    reaped_ = reaped_ || WaitUntil([&] { return waitpid(pid_, &wait_status_, WNOHANG) == pid_; },
                                   absl::Seconds(30));
    if (!reaped_) return std::nullopt;
    return wait_status_;
  }

  // Waits for the shim to exit 0 and returns its final status.
  ShimStatus Final() {
    std::optional<int> status = Wait();
    INFO("log: " << Log());
    REQUIRE(status.has_value());
    REQUIRE(WIFEXITED(*status));
    REQUIRE(WEXITSTATUS(*status) == 0);
    absl::StatusOr<ShimStatus> final_status = ReadShimStatus(run_dir_);
    INFO("status: " << final_status.status());
    REQUIRE(final_status.ok());
    return *final_status;
  }

  // The names in the run dir.
  std::set<std::string> RunDirFiles() const {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(run_dir_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

 private:
  TempDir dir_;
  std::string run_dir_;
  pid_t pid_ = 0;
  int ready_read_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
};

// Waits until `path` exists.
bool WaitForFile(const std::string& path) {
  return WaitUntil([&] { return access(path.c_str(), F_OK) == 0; });
}

TEST_CASE("shim: a replica's exit code, pid and times are in its status file", "[shim]") {
  Shim shim(Sh("echo \"var=$SHIM_TEST_VAR\"; readlink /proc/$$/fd/0; exit 3"));
  const ShimStatus ready = shim.Started();
  CHECK(ready.pid > 0);
  CHECK(ready.start_ticks > 0);
  CHECK(ready.start_time_ms > 0);

  // shim.pid names the shim: its pid and start time (read while it is ours to reap).
  REQUIRE(WaitUntil([&] { return ProcessIsGone(shim.pid()); }));
  ProcStat stat;
  REQUIRE(ReadProcStat(shim.pid(), &stat));
  absl::StatusOr<ShimPid> shim_pid = ReadShimPid(shim.run_dir());
  REQUIRE(shim_pid.ok());
  CHECK(shim_pid->pid == shim.pid());
  CHECK(shim_pid->start_ticks == stat.start_ticks);

  const ShimStatus status = shim.Final();
  CHECK(status.state == ShimStatus::State::kExited);
  CHECK(status.exit_code == 3);
  CHECK(status.signal == 0);
  CHECK(status.pid == ready.pid);
  CHECK(status.start_ticks == ready.start_ticks);
  CHECK(status.start_ticks >= stat.start_ticks);
  CHECK(status.start_time_ms == ready.start_time_ms);
  CHECK(status.end_time_ms >= status.start_time_ms);
  CHECK_FALSE(status.core_dumped);
  CHECK_FALSE(status.oom_killed);
  // The shim's environment, unchanged; stdin on /dev/null. No tmp file is left.
  CHECK(shim.Log() == "var=passed on\n/dev/null\n");
  CHECK(shim.RunDirFiles() == std::set<std::string>{"shim.pid", "status"});
}

TEST_CASE("shim: a replica killed by a signal has the signal in its status file", "[shim]") {
  struct Row {
    ShimLaunch launch;
    int signal;
  };
  const Row rows[] = {
      {Sh("kill -9 $$"), SIGKILL},
      {Workload({"--signal", "ABRT"}), SIGABRT},
      {Workload({"--signal", "SEGV"}), SIGSEGV},
  };
  for (const Row& row : rows) {
    INFO("replica: " << absl::StrJoin(row.launch.argv, " "));
    Shim shim(row.launch);
    const ShimStatus status = shim.Final();
    CHECK(status.state == ShimStatus::State::kExited);
    CHECK(status.signal == row.signal);  // core_dumped depends on the host's core settings
  }
}

TEST_CASE("shim: an OOM kill counted in --memory-events marks the replica oom_killed", "[shim]") {
  struct Row {
    const char* events;  // nullptr: no such file
    bool oom_killed;
  };
  const Row rows[] = {
      {"low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n", true},  // v2 memory.events
      {"low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 1\n", false},
      {"oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", true},  // v1 memory.oom_control
      {"oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", false},
      {nullptr, false},
  };
  for (const Row& row : rows) {
    INFO("memory.events: " << (row.events != nullptr ? row.events : "(none)"));
    TempDir dir;
    const std::string events = dir.path() + "/memory.events";
    if (row.events != nullptr) std::ofstream(events) << row.events;
    ShimLaunch launch{"/bin/true", {"true"}, {"--memory-events", events}};
    Shim shim(launch);
    const ShimStatus status = shim.Final();
    CHECK(status.exit_code == 0);
    CHECK(status.oom_killed == row.oom_killed);
  }
}

TEST_CASE("shim: a replica the kernel OOM-kills in its memory cgroup is reported oom_killed",
          "[shim][cgroup]") {
  RealCgroups cgroups;
  std::shared_ptr<const RunCgroups> usable = cgroups.With({CgroupController::kMemory});
  if (usable == nullptr) return;  // skipped, with a WARN
  const std::string run_id = "j-shim/1/oom/0";
  RunCgroupSpec spec;
  spec.memory_limit_bytes = 32 << 20;
  RunCgroups::Created created = usable->Create(run_id, spec);
  struct RemoveRun {
    const RunCgroups& cgroups;
    const std::string& run_id;
    ~RemoveRun() { CHECK(cgroups.Remove(run_id).ok()); }
  } remove_run{*usable, run_id};
  INFO("problems: " << absl::StrJoin(created.problems, "; "));
  REQUIRE(created.problems.empty());
  const bool v2 = usable->VersionOf(CgroupController::kMemory) == CgroupVersion::kV2;
  const std::string events = usable->RunDir(CgroupController::kMemory, run_id) +
                             (v2 ? "/memory.events" : "/memory.oom_control");
  ShimLaunch launch = Workload({"--alloc-mb", "256", "--print", "survived"});
  launch.flags = {"--memory-events", events};
  for (const std::string& procs : created.join_paths) {
    launch.flags.insert(launch.flags.end(), {"--cgroup", procs});
  }
  Shim shim(launch);
  const ShimStatus status = shim.Final();
  CHECK(status.signal == SIGKILL);
  CHECK(status.oom_killed);
  CHECK_FALSE(absl::StrContains(shim.Log(), "survived"));
}

TEST_CASE("shim: a launch that fails is reported with its stage and errno", "[shim]") {
  SECTION("the command does not exist") {
    ShimLaunch launch{"/nonexistent/cmd", {"cmd"}};
    Shim shim(launch);
    CHECK(shim.ReadyText() == "failed exec 2\n");
    const ShimStatus status = shim.Final();
    CHECK(status.state == ShimStatus::State::kFailed);
    CHECK(status.failed_stage == "exec");
    CHECK(status.failed_errno == ENOENT);
    CHECK(status.start_time_ms > 0);
    CHECK(status.end_time_ms >= status.start_time_ms);
    CHECK(status.error == "cannot execute /nonexistent/cmd: No such file or directory");
    const absl::Status error = LaunchErrorOf(status, "cmd", "/work", "");
    CHECK(absl::IsInvalidArgument(error));
    CHECK(error.message() == "cannot execute cmd: No such file or directory");
    CHECK(shim.Log() ==
          "trainctl-shim: cannot execute /nonexistent/cmd: No such file or directory\n");
    CHECK(shim.RunDirFiles() == std::set<std::string>{"shim.pid", "status"});
  }
  SECTION("the working directory does not exist") {
    ShimLaunch launch{"/bin/true", {"true"}, {"--cwd", "/nonexistent/dir"}};
    Shim shim(launch);
    CHECK(shim.ReadyText() == "failed chdir 2\n");
    const ShimStatus status = shim.Final();
    CHECK(status.state == ShimStatus::State::kFailed);
    CHECK(status.failed_stage == "chdir");
    CHECK(status.failed_errno == ENOENT);
    const absl::Status error = LaunchErrorOf(status, "true", "/nonexistent/dir", "alice");
    CHECK(absl::IsInternal(error));
    CHECK(error.message() ==
          "cannot enter working directory /nonexistent/dir as user alice: No such file or "
          "directory");
  }
  SECTION("the shim's own arguments are wrong") {
    ShimLaunch launch{"/bin/true", {}, {"--uid", "12"}};  // no --gid, no command
    Shim shim(launch);
    CHECK(shim.ReadyText() == "failed shim 22\n");
    std::optional<int> exit_status = shim.Wait();
    REQUIRE(exit_status.has_value());
    CHECK(WEXITSTATUS(*exit_status) == shim::kShimFailedExitCode);
    absl::StatusOr<ShimStatus> status = ReadShimStatus(shim.run_dir());
    REQUIRE(status.ok());
    CHECK(status->failed_stage == "shim");
    CHECK(status->error == "no replica command after --");
    CHECK(absl::StartsWith(shim.Log(), "trainctl-shim: no replica command after --\nusage: "));
  }
}

TEST_CASE("shim: the replica and its shim outlive the agent that started them", "[shim]") {
  TempDir marks;
  const std::string go = marks.path() + "/go";
  ShimLaunch launch = Workload({"--wait-file", go, "--exit", "5"});
  launch.ready_fd = false;
  Shim agent(launch, /*via_fake_agent=*/true);
  absl::StatusOr<ShimStatus> running = absl::NotFoundError("not yet");
  REQUIRE(WaitUntil([&] {
    running = ReadShimStatus(agent.run_dir());
    return running.ok();
  }));
  REQUIRE(running->state == ShimStatus::State::kRunning);
  absl::StatusOr<ShimPid> shim = ReadShimPid(agent.run_dir());
  REQUIRE(shim.ok());

  REQUIRE(kill(agent.pid(), SIGKILL) == 0);
  REQUIRE(agent.Wait().has_value());
  ProcStat stat;
  REQUIRE(ReadProcStat(shim->pid, &stat));
  CHECK(stat.state != 'Z');
  CHECK(stat.start_ticks == shim->start_ticks);
  CHECK_FALSE(ProcessIsGone(running->pid));

  std::ofstream(go).put('\n');
  absl::StatusOr<ShimStatus> status = running;
  REQUIRE(WaitUntil(
      [&] {
        status = ReadShimStatus(agent.run_dir());
        return status.ok() && status->state == ShimStatus::State::kExited;
      },
      absl::Seconds(30)));
  CHECK(status->pid == running->pid);
  CHECK(status->exit_code == 5);
}

TEST_CASE("shim: the signals the shim gets reach the replica's process group", "[shim]") {
  struct Row {
    int signal;
    const char* trap;  // its name for sh's trap
  };
  const Row rows[] = {{SIGTERM, "TERM"}, {SIGINT, "INT"},   {SIGHUP, "HUP"},
                      {SIGQUIT, "QUIT"}, {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"}};
  for (const Row& row : rows) {
    INFO("signal " << row.trap);
    TempDir marks;
    const std::string trapped = marks.path() + "/trapped";
    // The sleeps get the signal too, and sh runs its trap once the current one ended.
    Shim shim(Sh(absl::StrCat("trap 'exit 7' ", row.trap, "; touch ", trapped,
                              "; while :; do sleep 0.05; done")));
    shim.Started();
    REQUIRE(WaitForFile(trapped));
    REQUIRE(kill(shim.pid(), row.signal) == 0);
    const ShimStatus status = shim.Final();
    CHECK(status.exit_code == 7);
  }
}

TEST_CASE("shim: ShimForwardSignal() sends the signal in its value to the replica", "[shim]") {
  // A signal the replica cannot trap: what the agent sends to kill a replica but not its shim.
  Shim shim({"/bin/sleep", {"sleep", "1000"}});
  const ShimStatus ready = shim.Started();
  REQUIRE(sigqueue(shim.pid(), shim::ShimForwardSignal(), sigval{.sival_int = SIGKILL}) == 0);
  const ShimStatus status = shim.Final();
  CHECK(status.pid == ready.pid);
  CHECK(status.signal == SIGKILL);
}

TEST_CASE("shim: what is left of the replica's process group dies with the replica", "[shim]") {
  TempDir marks;
  const std::string pidfile = marks.path() + "/sleep.pid";
  Shim shim(Sh(absl::StrCat("sleep 1000 & echo $! >", pidfile, ".tmp; mv ", pidfile, ".tmp ",
                            pidfile, "; exit 0")));
  const ShimStatus status = shim.Final();
  CHECK(status.exit_code == 0);
  pid_t sleep_pid = 0;
  REQUIRE(absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pidfile)), &sleep_pid));
  CHECK(WaitUntil([&] { return ProcessIsGone(sleep_pid); }));
}

TEST_CASE("shim: no fd but stdin, stdout and stderr reaches the replica", "[shim]") {
  // ls opens the directory it lists as the lowest free fd: 3 when 0-2 are all the replica has.
  ShimLaunch launch{"/bin/ls", {"ls", "/proc/self/fd"}};
  launch.lock_fd = true;
  launch.stray_fd = true;
  Shim shim(launch);
  shim.Started();
  shim.Final();
  CHECK(shim.Log() == "0\n1\n2\n3\n");
}

TEST_CASE("shim: the shim holds the agent's lock for as long as it lives", "[shim]") {
  ShimLaunch launch{"/bin/sleep", {"sleep", "1000"}};
  launch.lock_fd = true;
  Shim shim(launch);
  shim.Started();
  auto lockable = [&] {
    int fd = open(shim.lock_path().c_str(), O_RDWR | O_CLOEXEC);
    bool locked = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (fd >= 0) close(fd);
    return locked;
  };
  CHECK_FALSE(lockable());
  REQUIRE(sigqueue(shim.pid(), shim::ShimForwardSignal(), sigval{.sival_int = SIGKILL}) == 0);
  shim.Final();
  CHECK(lockable());
}

TEST_CASE("shim: a replica started for a user runs with its uid, gid and groups only", "[shim]") {
  if (geteuid() != 0) {
    WARN("not root: cannot switch users, skipped");
    return;
  }
  struct Row {
    std::vector<std::string> flags;
    std::string id_output;  // of "id -u; id -g; id -G"
  };
  const Row rows[] = {
      {{"--uid", "65534", "--gid", "65534"}, "65534\n65534\n65534\n"},
      {{"--uid", "65534", "--gid", "65534", "--groups", "100"}, "65534\n65534\n65534 100\n"},
  };
  for (const Row& row : rows) {
    INFO("flags: " << absl::StrJoin(row.flags, " "));
    ShimLaunch launch = Sh("id -u; id -g; id -G");
    launch.flags = row.flags;
    launch.flags.insert(launch.flags.end(), {"--cwd", "/"});  // enterable by any user
    Shim shim(launch);
    const ShimStatus status = shim.Final();
    CHECK(status.exit_code == 0);
    CHECK(shim.Log() == row.id_output);
  }
}

TEST_CASE("shim: a shim stays within a few hundred KiB of memory", "[shim]") {
  Shim shim({"/bin/sleep", {"sleep", "1000"}});
  shim.Started();
  // The shim's own numbers, in kB, from /proc/<pid>/status.
  auto kb = [&](const std::string& field) -> int64_t {
    for (absl::string_view line :
         absl::StrSplit(ReadFile(absl::StrCat("/proc/", shim.pid(), "/status")), '\n')) {
      if (!absl::ConsumePrefix(&line, field + ":")) continue;
      line = absl::StripAsciiWhitespace(line);
      int64_t value = -1;
      if (absl::ConsumeSuffix(&line, " kB") && absl::SimpleAtoi(line, &value)) return value;
    }
    return -1;
  };
  const int64_t rss = kb("VmRSS"), anon = kb("RssAnon"), file = kb("RssFile");
  WARN("trainctl-shim while its replica runs: VmRSS " << rss << " kB, RssAnon " << anon
                                                      << " kB, RssFile " << file << " kB");
  REQUIRE(rss > 0);
  REQUIRE(anon > 0);
  REQUIRE(rss <= 1024);
  REQUIRE(anon <= 256);
  REQUIRE(sigqueue(shim.pid(), shim::ShimForwardSignal(), sigval{.sival_int = SIGKILL}) == 0);
  shim.Final();
}

TEST_CASE("shim: --max-log-bytes caps the log of a replica while it runs", "[shim]") {
  ShimLaunch launch = Sh("seq -f 'line %06g' 1 40000; exec sleep 60");  // 480000 bytes
  launch.flags = {"--max-log-bytes", "65536", "--log-file", kLogPathFlag};
  Shim shim(launch);
  shim.Started();
  // Cut at line ends ("line 000001\n" is 12 bytes): the head at half the limit, the tail 3/8 of
  // it, within the shim's check interval and with the replica still running.
  constexpr int64_t kSize = 480000;
  constexpr int64_t kHeadEnd = 32768 - 32768 % 12;
  constexpr int64_t kTailStart = kSize - 24576;  // a line start: 24576 is a multiple of 12
  shim::DroppedRange dropped;
  CHECK(WaitUntil([&] {
    return shim::ParseDroppedRange(ReadFile(shim.log_path() + ".dropped").c_str(), &dropped) &&
           dropped.tail_start == kTailStart;
  }));
  CHECK(dropped.head_end == kHeadEnd);
  CHECK(dropped.limit_bytes == 65536);
  struct stat st;
  REQUIRE(stat(shim.log_path().c_str(), &st) == 0);
  CHECK(st.st_size == kSize);
  CHECK(st.st_blocks * 512 <= 65536 + 8192);
}

}  // namespace
}  // namespace trainctl::agent
