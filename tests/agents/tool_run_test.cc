// RunTool (agents/tool_run.h): stdout and stderr kept apart, the exit status, a timeout that
// kills the tool's whole process group, ticks while it runs, and a tool that does not exist.
#include "agents/tool_run.h"

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/spawn.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace tool_run_test {

ToolRequest Shell(const std::string& script) {
  ToolRequest request;
  request.argv = {"/bin/sh", "-c", script};
  request.env = CurrentEnvironment();
  return request;
}

TEST_CASE("RunTool keeps stdout and stderr apart", "[image]") {
  ToolOutcome outcome = RunTool(Shell("echo out; echo err1 >&2; echo err2 >&2; exit 3"));
  CHECK(outcome.end == ToolOutcome::End::kExited);
  CHECK(outcome.exit_code == 3);
  CHECK(!outcome.ok());
  CHECK(outcome.stdout_text == "out\n");
  CHECK(outcome.stderr_text == "err1\nerr2\n");
  CHECK(outcome.Describe(absl::Seconds(1)) == "exit status 3: err2");

  ToolOutcome ok = RunTool(Shell("head -c 200000 /dev/zero; head -c 100000 /dev/zero >&2"));
  CHECK(ok.ok());
  CHECK(ok.stdout_text.size() == 200000);
  CHECK(ok.stderr_text.size() == 65536);  // The tail.

  ToolRequest cwd = Shell("pwd");
  cwd.working_dir = "/";
  CHECK(RunTool(cwd).stdout_text == "/\n");
}

TEST_CASE("RunTool kills the tool's process group at its timeout", "[image]") {
  ToolRequest request = Shell("sleep 60 & echo $!; wait");
  request.timeout = absl::Milliseconds(300);
  int ticks = 0;
  request.tick = [&] { ++ticks; };
  request.tick_every = absl::Milliseconds(50);
  ToolOutcome outcome = RunTool(request);
  CHECK(outcome.end == ToolOutcome::End::kTimedOut);
  CHECK(outcome.elapsed >= absl::Milliseconds(300));
  CHECK(outcome.elapsed < absl::Seconds(5));
  CHECK(ticks >= 3);
  CHECK(outcome.Describe(request.timeout) == "timed out after 300ms");
  // The background sleep went with the group (gone, or a zombie of whoever reaps orphans).
  const std::string pid = LastLine(outcome.stdout_text);
  REQUIRE(!pid.empty());
  CHECK(testing::WaitUntil([&] {
    const std::string stat = testing::ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    return stat.empty() || absl::StrContains(stat, ") Z ");
  }));
}

TEST_CASE("RunTool reports a tool that cannot start", "[image]") {
  ToolRequest request;
  request.argv = {"trainctl-no-such-tool"};
  request.env = CurrentEnvironment();
  ToolOutcome outcome = RunTool(request);
  CHECK(outcome.end == ToolOutcome::End::kNotStarted);
  CHECK(absl::StrContains(outcome.error, "command not found"));
  CHECK(absl::StrContains(outcome.Describe(absl::Seconds(1)), "not started"));
}

}  // namespace tool_run_test
}  // namespace trainctl::agent
