// CaptureStacks and ProcessGroupMembers (agents/stack_capture.h) against real processes: a
// Python program blocked in load_batch, the workload program hung in a function of its own, a
// shell and its child, and dump programs that hang, flood or do not exist. The gdb-based tests
// need gdb and python3.11-dbg (deploy/install-deps.sh), and fail without them.
#include "agents/stack_capture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agents/proc_stats.h"
#include "agents/spawn.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace stack_capture_test {

constexpr char kNoProgram[] =
    "no stack dump program: install gdb (and python3.11-dbg for Python stacks) or set "
    "--stack-dump-program";

// Debian's Python, whose gdb extension (python3.11-dbg) gives py-bt; not whatever python3 comes
// first in PATH. Its main thread blocks in load_batch, a daemon thread in helper; `ready` is
// written just before it blocks.
constexpr char kPython[] = "/usr/bin/python3";
constexpr char kScript[] = R"(import sys, threading, time
def helper():
    while True:
        time.sleep(0.5)
def load_batch():
    open(sys.argv[1], "w").close()
    time.sleep(3600)
threading.Thread(target=helper, daemon=True).start()
load_batch()
)";

// A started program, killed and reaped (by its pid) when the test ends, however it ends.
class Child {
 public:
  Child(std::vector<std::string> argv, const std::string& output) {
    const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    SpawnRequest request;
    request.argv = std::move(argv);
    request.env = CurrentEnvironment();
    request.working_dir = "/";
    request.output_fd = fd;
    absl::StatusOr<pid_t> pid = SpawnProcess(request);
    close(fd);
    REQUIRE(pid.ok());
    pid_ = *pid;
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { Stop(); }
  pid_t pid() const { return pid_; }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// The state letter of `pid` in /proc ('?' when it is gone).
char StateOf(pid_t pid) {
  ProcStat stat;
  return ReadProcStat(pid, &stat) ? stat.state : '?';
}

// Until `ready` exists and the process sleeps: it is in its blocking call, not on the way to it.
bool WaitBlocked(pid_t pid, const std::function<bool()>& ready) {
  return testing::WaitUntil([&] { return ready() && StateOf(pid) == 'S'; }, absl::Seconds(30));
}

void RequireGdb() {
  if (!ResolveCommand("gdb", SearchPathOf(CurrentEnvironment()), ".").ok()) {
    FAIL(
        "gdb is not installed: stack captures need gdb and python3.11-dbg "
        "(deploy/install-deps.sh installs them)");
  }
}

// Generous: gdb reads Python's debug info on a loaded CI machine.
StackCaptureOptions GdbOptions() {
  StackCaptureOptions options;
  options.timeout = absl::Seconds(60);
  return options;
}

TEST_CASE("CaptureStacks names the Python function a process is blocked in", "[stacks]") {
  RequireGdb();
  testing::TempDir dir;
  const std::string ready = dir.path() + "/ready";
  Child python({kPython, "-c", kScript, ready}, dir.path() + "/out");
  REQUIRE(WaitBlocked(python.pid(), [&] { return access(ready.c_str(), F_OK) == 0; }));

  const trainctl::v1::ReplicaStacks stacks = CaptureStacks({python.pid()}, GdbOptions());
  REQUIRE(stacks.error().empty());
  REQUIRE(stacks.processes_size() == 1);
  const trainctl::v1::ProcessStacks& process = stacks.processes(0);
  INFO(process.text());
  CHECK(process.pid() == python.pid());
  CHECK(absl::StartsWith(process.command(), "/usr/bin/python3 -c import sys"));
  CHECK(process.error().empty());
  CHECK(process.python());
  CHECK(absl::StartsWith(process.summary(), "load_batch ("));
  CHECK(stacks.summary() == process.summary());
  CHECK(!stacks.truncated());
  CHECK(stacks.took().seconds() * 1000 + stacks.took().nanos() / 1000000 > 0);
  // Both stacks of both threads, without gdb's chatter.
  CHECK(absl::StrContains(process.text(), "#0  "));
  CHECK(absl::StrContains(process.text(), "Traceback (most recent call first):"));
  CHECK(absl::StrContains(process.text(), "in load_batch"));
  CHECK(absl::StrContains(process.text(), "in helper"));
  CHECK(!absl::StrContains(process.text(), "[New LWP"));
  CHECK(!absl::StrContains(process.text(), "Using host libthread_db"));
  CHECK(!absl::StrContains(process.text(), "detached]"));
  // gdb let it go: it sleeps on, not stopped.
  CHECK(testing::WaitUntil([&] { return StateOf(python.pid()) == 'S'; }));
}

TEST_CASE("CaptureStacks names the native function a process is hung in", "[stacks]") {
  RequireGdb();
  testing::TempDir dir;
  const std::string out = dir.path() + "/out";
  Child workload({testing::kWorkload, "--print", "ready", "--hang"}, out);
  REQUIRE(WaitBlocked(workload.pid(), [&] { return testing::ReadFile(out) == "ready\n"; }));

  const trainctl::v1::ReplicaStacks stacks = CaptureStacks({workload.pid()}, GdbOptions());
  REQUIRE(stacks.processes_size() == 1);
  const trainctl::v1::ProcessStacks& process = stacks.processes(0);
  INFO(process.text());
  // Not Python: py-bt has nothing to say, and that is no error.
  CHECK(process.error().empty());
  CHECK(!process.python());
  CHECK(absl::StartsWith(process.summary(), "trainctl_workload_wait_for_peer"));
  CHECK(stacks.summary() == process.summary());
  CHECK(absl::StrContains(process.command(), "--print ready --hang"));

  // A process that is gone: gdb exits 0 having printed nothing but its reason.
  Child gone({testing::kWorkload, "--exit", "0"}, dir.path() + "/gone");
  const pid_t gone_pid = gone.pid();
  gone.Stop();
  const trainctl::v1::ReplicaStacks none = CaptureStacks({gone_pid}, GdbOptions());
  REQUIRE(none.processes_size() == 1);
  CHECK(absl::StrContains(none.processes(0).error(), "No such process"));
  CHECK(none.processes(0).summary().empty());
  CHECK(none.summary().empty());
}

TEST_CASE("CaptureStacks dumps a replica's processes in parallel, preferring Python", "[stacks]") {
  RequireGdb();
  testing::TempDir dir;
  const std::string ready = dir.path() + "/ready";
  const std::string out = dir.path() + "/out";
  Child workload({testing::kWorkload, "--print", "ready", "--hang"}, out);
  Child python({kPython, "-c", kScript, ready}, dir.path() + "/python-out");
  REQUIRE(WaitBlocked(workload.pid(), [&] { return testing::ReadFile(out) == "ready\n"; }));
  REQUIRE(WaitBlocked(python.pid(), [&] { return access(ready.c_str(), F_OK) == 0; }));

  const trainctl::v1::ReplicaStacks stacks =
      CaptureStacks({workload.pid(), python.pid()}, GdbOptions());
  REQUIRE(stacks.processes_size() == 2);
  CHECK(stacks.processes(0).pid() == workload.pid());
  CHECK(stacks.processes(1).pid() == python.pid());
  CHECK(absl::StartsWith(stacks.processes(0).summary(), "trainctl_workload_wait_for_peer"));
  CHECK(absl::StartsWith(stacks.summary(), "load_batch ("));
}

TEST_CASE("ProcessGroupMembers lists a group's processes leaves first", "[stacks]") {
  testing::TempDir dir;
  const std::string out = dir.path() + "/out";
  // SpawnProcess gives the shell a session and process group of its own; its child joins it.
  Child shell({"/bin/sh", "-c", "sleep 100 & echo $!; wait"}, out);
  pid_t sleep_pid = 0;
  REQUIRE(testing::WaitUntil([&] {
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(testing::ReadFile(out)), &sleep_pid);
  }));
  struct Cleanup {
    pid_t pid;
    ~Cleanup() { kill(pid, SIGKILL); }
  } kill_sleep{sleep_pid};

  const std::vector<pid_t> both = {sleep_pid, shell.pid()};
  CHECK(testing::WaitUntil([&] { return ProcessGroupMembers(shell.pid()) == both; }));
  CHECK(ProcessGroupMembers(shell.pid(), 1) == std::vector<pid_t>{sleep_pid});
  CHECK(ProcessGroupMembers(0).empty());
  CHECK(ProcessGroupMembers(0x3ffffff0).empty());
}

TEST_CASE("CaptureStacks kills a dump that outlives the timeout", "[stacks]") {
  StackCaptureOptions options;
  // The pid comes as $1 of the script; it prints, then sleeps past the timeout.
  options.program = {"/bin/sh", "-c", "echo partial; exec sleep 100", "dump"};
  options.timeout = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  const trainctl::v1::ReplicaStacks stacks = CaptureStacks({getpid(), getpid()}, options);
  // One deadline for both: they ran side by side.
  CHECK(absl::Now() - start < absl::Seconds(3));
  REQUIRE(stacks.processes_size() == 2);
  for (const trainctl::v1::ProcessStacks& process : stacks.processes()) {
    CHECK(process.error() == "timed out after 300ms");
    CHECK(absl::StrContains(process.text(), "partial"));
  }
  CHECK(stacks.error().empty());
}

TEST_CASE("CaptureStacks cuts the text to max_bytes", "[stacks]") {
  size_t full = 0;  // The size of `seq 1 100000`.
  for (int i = 1; i <= 100000; ++i) full += absl::StrCat(i).size() + 1;
  StackCaptureOptions options;
  options.program = {"/bin/sh", "-c", "seq 1 100000", "dump"};
  options.max_bytes = 4096;
  const trainctl::v1::ReplicaStacks stacks = CaptureStacks({getpid(), getpid()}, options);
  CHECK(stacks.truncated());
  REQUIRE(stacks.processes_size() == 2);
  for (const trainctl::v1::ProcessStacks& process : stacks.processes()) {
    const std::string& text = process.text();
    CHECK(process.error().empty());
    CHECK(text.size() <= 2048);
    CHECK(absl::StartsWith(text, "1\n2\n3\n"));
    const size_t marker = text.rfind("... (cut: ");
    REQUIRE(marker != std::string::npos);
    CHECK(text[marker - 1] == '\n');                    // Cut at a line's end.
    const std::string tail = text.substr(marker + 10);  // "N more bytes)\n"
    CHECK(absl::EndsWith(tail, " more bytes)\n"));
    size_t cut = 0;
    CHECK(absl::SimpleAtoi(tail.substr(0, tail.find(' ')), &cut));
    CHECK(marker + cut == full);
  }

  options.max_bytes = size_t{4} << 20;
  const trainctl::v1::ReplicaStacks whole = CaptureStacks({getpid()}, options);
  CHECK(!whole.truncated());
  REQUIRE(whole.processes_size() == 1);
  CHECK(whole.processes(0).text().size() == full);
}

TEST_CASE("CaptureStacks reports a missing dump program and an empty replica", "[stacks]") {
  StackCaptureOptions options;
  options.program = {"/nonexistent/trainctl-dump"};
  trainctl::v1::ReplicaStacks stacks = CaptureStacks({getpid()}, options);
  CHECK(stacks.error() == kNoProgram);
  CHECK(stacks.processes_size() == 0);

  // gdb, looked for in the PATH of the given environment.
  options.program.clear();
  options.env = {"PATH=/nonexistent"};
  stacks = CaptureStacks({getpid()}, options);
  CHECK(stacks.error() == kNoProgram);

  stacks = CaptureStacks({}, StackCaptureOptions());
  CHECK(stacks.error() == "the replica has no live process");
  CHECK(stacks.processes_size() == 0);
}

}  // namespace stack_capture_test
}  // namespace trainctl::agent
