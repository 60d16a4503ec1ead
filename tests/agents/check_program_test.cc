// RunProgram against real shell scripts: exit statuses, the first output line, timeouts that
// kill the whole process group, the environment, and ProgramCheckResult's items.
#include "agents/check_program.h"

#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "agents/proc_stats.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;

// Writes an executable /bin/sh script with `body` and returns a request to run it.
ProgramRequest Script(const TempDir& dir, const std::string& body,
                      absl::Duration timeout = absl::Seconds(10)) {
  const std::string path = dir.path() + "/check.sh";
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  ProgramRequest request;
  request.path = path;
  request.working_dir = dir.path();
  request.timeout = timeout;
  return request;
}

pid_t ReadPid(const std::string& path) {
  pid_t pid = 0;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(path)), &pid) ? pid : 0;
}

TEST_CASE("a program that exits 0 passes", "[check_program]") {
  TempDir dir;
  ProgramRequest request = Script(dir, "echo all good; echo second line");
  ProgramOutcome outcome = RunProgram(request);
  CHECK(outcome.end == ProgramOutcome::End::kExited);
  CHECK(outcome.exit_code == 0);
  CHECK(outcome.first_line == "all good");
  CheckResult item = ProgramCheckResult("health-program", request, outcome);
  CHECK(item.passed);
  CHECK(item.measured == "exit status 0");
  CHECK(item.threshold == "exit status 0");
  CHECK(FormatCheckResult(item) == "item health-program passed: all good");
}

TEST_CASE("a non-zero exit fails with the first output line as its message", "[check_program]") {
  TempDir dir;
  // stderr counts as output too.
  ProgramRequest request = Script(dir, "echo 'ECC errors on GPU 3' >&2; echo more; exit 4");
  ProgramOutcome outcome = RunProgram(request);
  CHECK(outcome.end == ProgramOutcome::End::kExited);
  CHECK(outcome.exit_code == 4);
  CheckResult item = ProgramCheckResult("health-program", request, outcome);
  CHECK_FALSE(item.passed);
  CHECK(item.measured == "exit status 4");
  CHECK(item.message == "ECC errors on GPU 3");

  // Silent: the status says it all.
  request = Script(dir, "exit 2");
  item = ProgramCheckResult("health-program", request, RunProgram(request));
  CHECK_FALSE(item.passed);
  CHECK(item.message == request.path + " exited with status 2");
}

TEST_CASE("a program killed by a signal fails", "[check_program]") {
  TempDir dir;
  ProgramRequest request = Script(dir, "kill -SEGV $$");
  ProgramOutcome outcome = RunProgram(request);
  CHECK(outcome.end == ProgramOutcome::End::kSignaled);
  CHECK(outcome.signal == SIGSEGV);
  CheckResult item = ProgramCheckResult("health-program", request, outcome);
  CHECK_FALSE(item.passed);
  CHECK(item.measured == "killed by signal 11");
}

TEST_CASE("a timeout kills the program's whole process group", "[check_program]") {
  TempDir dir;
  const std::string pidfile = dir.path() + "/grandchild.pid";
  // The grandchild sleeps in the background, so only a group kill reaches it.
  ProgramRequest request = Script(dir, "echo starting; sleep 60 & echo $! > " + pidfile + "; wait",
                                  absl::Milliseconds(300));
  absl::Time start = absl::Now();
  ProgramOutcome outcome = RunProgram(request);
  CHECK(absl::Now() - start < absl::Seconds(5));
  CHECK(outcome.end == ProgramOutcome::End::kTimedOut);
  CheckResult item = ProgramCheckResult("health-program", request, outcome);
  CHECK_FALSE(item.passed);
  CHECK(item.measured == "timed out");
  CHECK(item.message == "timed out after 300ms");
  pid_t grandchild = ReadPid(pidfile);
  REQUIRE(grandchild > 0);
  CHECK(WaitUntil([&] { return ProcessIsGone(grandchild); }));
}

TEST_CASE("what a program leaves running in its group is killed when it exits", "[check_program]") {
  TempDir dir;
  const std::string pidfile = dir.path() + "/left.pid";
  ProgramRequest request = Script(dir, "sleep 60 & echo $! > " + pidfile + "; echo done");
  ProgramOutcome outcome = RunProgram(request);
  CHECK(outcome.end == ProgramOutcome::End::kExited);
  CHECK(outcome.first_line == "done");
  pid_t left = ReadPid(pidfile);
  REQUIRE(left > 0);
  CHECK(WaitUntil([&] { return ProcessIsGone(left); }));
}

TEST_CASE("a cancelled program is killed", "[check_program]") {
  TempDir dir;
  ProgramRequest request = Script(dir, "sleep 60");
  request.cancelled = [] { return true; };
  ProgramOutcome outcome = RunProgram(request);
  CHECK(outcome.end == ProgramOutcome::End::kCancelled);
  CHECK_FALSE(ProgramCheckResult("startup-script", request, outcome).passed);
}

TEST_CASE("a program gets its environment, stdin from /dev/null and the working dir",
          "[check_program]") {
  TempDir dir;
  ProgramRequest request =
      Script(dir, "read line; echo \"$TRAINCTL_NODE $TRAINCTL_WORK_DIR $(pwd) read=$?\"");
  request.env = {{"TRAINCTL_NODE", "gpu-01"}, {"TRAINCTL_WORK_DIR", "/w"}};
  ProgramOutcome outcome = RunProgram(request);
  CHECK(outcome.first_line == "gpu-01 /w " + dir.path() + " read=1");
}

TEST_CASE("a chatty program does not block on its output", "[check_program]") {
  TempDir dir;
  // 1 MB of output, far more than a pipe holds.
  ProgramRequest request =
      Script(dir, "head -c 1000000 /dev/zero | tr '\\0' 'x'; echo; echo tail >&2; exit 3");
  ProgramOutcome outcome = RunProgram(request);
  CHECK(outcome.end == ProgramOutcome::End::kExited);
  CHECK(outcome.exit_code == 3);
  CHECK(outcome.first_line == std::string(512, 'x'));
}

TEST_CASE("a program that cannot start fails with the reason", "[check_program]") {
  TempDir dir;
  ProgramRequest request;
  request.path = dir.path() + "/missing.sh";
  request.working_dir = dir.path();
  ProgramOutcome outcome = RunProgram(request);
  CHECK(outcome.end == ProgramOutcome::End::kNotStarted);
  CheckResult item = ProgramCheckResult("startup-script", request, outcome);
  CHECK_FALSE(item.passed);
  CHECK(item.measured == "not started");
  CHECK(item.message == "command not found: " + request.path);
}

}  // namespace
}  // namespace trainctl::agent
