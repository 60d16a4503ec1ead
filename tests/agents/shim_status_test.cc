// The agent's reading of what trainctl-shim writes (agents/shim_status.h): status files, ready
// lines, shim.pid files, and the words of a failed launch.
#include "agents/shim_status.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>

#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::TempDir;

TEST_CASE("shim: status files are parsed, skipping unknown keys", "[shim]") {
  ShimStatus running;
  running.pid = 42;
  running.start_ticks = 1000;
  running.start_time_ms = 1700000000000;
  auto exited = [&](int exit_code, int signal, bool core, bool oom) {
    ShimStatus s = running;
    s.state = ShimStatus::State::kExited;
    s.end_time_ms = 1700000000500;
    s.exit_code = exit_code;
    s.signal = signal;
    s.core_dumped = core;
    s.oom_killed = oom;
    return s;
  };
  ShimStatus failed;
  failed.state = ShimStatus::State::kFailed;
  failed.failed_stage = "exec";
  failed.failed_errno = 2;
  failed.start_time_ms = 1700000000000;
  failed.end_time_ms = 1700000000001;
  failed.error = "cannot execute /x: No such file or directory";

  const std::string kRunning = "pid 42\nstart_ticks 1000\nstart_time_ms 1700000000000\n";
  const std::string kExited = kRunning + "end_time_ms 1700000000500\n";
  struct Row {
    std::string text;
    ShimStatus want;
  };
  const Row rows[] = {
      {"state running\n" + kRunning, running},
      {"state running\npid 42\nstart_ticks 1000\nstart_time_ms 1700000000000", running},
      {"state running\ncgroup /sys/fs/cgroup/x\n" + kRunning + "new_key with spaces\n", running},
      {"state exited\n" + kExited + "exit_code 3\ncore_dumped 0\noom_killed 0\n",
       exited(3, 0, false, false)},
      {"state exited\n" + kExited + "signal 9\ncore_dumped 0\noom_killed 1\n",
       exited(0, 9, false, true)},
      {"state exited\n" + kExited + "signal 6\ncore_dumped 1\noom_killed 0\n",
       exited(0, 6, true, false)},
      {"state failed\nfailed_stage exec\nfailed_errno 2\nstart_time_ms 1700000000000\n"
       "end_time_ms 1700000000001\nerror cannot execute /x: No such file or directory\n",
       failed},
  };
  for (const Row& row : rows) {
    INFO("text: " << row.text);
    absl::StatusOr<ShimStatus> got = ParseShimStatus(row.text);
    REQUIRE(got.ok());
    CHECK(got->state == row.want.state);
    CHECK(got->pid == row.want.pid);
    CHECK(got->start_ticks == row.want.start_ticks);
    CHECK(got->start_time_ms == row.want.start_time_ms);
    CHECK(got->end_time_ms == row.want.end_time_ms);
    CHECK(got->exit_code == row.want.exit_code);
    CHECK(got->signal == row.want.signal);
    CHECK(got->core_dumped == row.want.core_dumped);
    CHECK(got->oom_killed == row.want.oom_killed);
    CHECK(got->failed_stage == row.want.failed_stage);
    CHECK(got->failed_errno == row.want.failed_errno);
    CHECK(got->error == row.want.error);
  }
}

TEST_CASE("shim: malformed status files are rejected", "[shim]") {
  const char* const kRunning = "state running\npid 42\nstart_ticks 1000\n";
  const std::string rows[] = {
      "",
      "pid 42\nstart_ticks 1000\n",                   // no state
      "state sleeping\npid 42\nstart_ticks 1000\n",   // unknown state
      "state running\npid 42\n",                      // no start_ticks
      "state running\npid x\nstart_ticks 1000\n",     // malformed numbers
      "state running\npid 0\nstart_ticks 1000\n",     //
      "state running\npid 42\nstart_ticks -1\n",      //
      absl::StrCat(kRunning, "start_time_ms 12x\n"),  //
      absl::StrCat(kRunning, "end_time_ms \n"),       //
      absl::StrCat(kRunning, "core_dumped 2\n"),      // flags are 0 or 1
      absl::StrCat(kRunning, "oom_killed yes\n"),     //
      "state exited\npid 42\nstart_ticks 1000\n",     // neither exit_code nor signal
      "state exited\npid 42\nstart_ticks 1000\nexit_code 0\nsignal 9\n",  // both
      "state exited\npid 42\nstart_ticks 1000\nexit_code 256\n",          //
      "state exited\npid 42\nstart_ticks 1000\nsignal 0\n",               //
      "state failed\nfailed_errno 2\n",                                   // no stage
      "state failed\nfailed_stage exec\n",                                // no errno
      "state failed\nfailed_stage exec\nfailed_errno two\n",              //
  };
  for (const std::string& text : rows) {
    INFO("text: " << text);
    CHECK(absl::IsInvalidArgument(ParseShimStatus(text).status()));
  }
}

TEST_CASE("shim: ready lines and shim.pid files are parsed", "[shim]") {
  absl::StatusOr<ShimStatus> started = ParseReadyLine("started 42 1000 1700000000000\n");
  REQUIRE(started.ok());
  CHECK(started->state == ShimStatus::State::kRunning);
  CHECK(started->pid == 42);
  CHECK(started->start_ticks == 1000);
  CHECK(started->start_time_ms == 1700000000000);
  absl::StatusOr<ShimStatus> failed = ParseReadyLine("failed chdir 13");
  REQUIRE(failed.ok());
  CHECK(failed->state == ShimStatus::State::kFailed);
  CHECK(failed->failed_stage == "chdir");
  CHECK(failed->failed_errno == 13);
  for (const char* bad :
       {"", "\n", "started 42 1000", "started 42 1000 17 extra\n", "started x 1000 17\n",
        "started 0 1000 17\n", "failed exec\n", "failed exec -1\n", "failed  2\n",
        "begun 42 1000 17\n", "started 42 1000 17\n\n"}) {
    INFO("line: " << bad);
    CHECK(absl::IsInvalidArgument(ParseReadyLine(bad).status()));
  }

  absl::StatusOr<ShimPid> shim_pid = ParseShimPid("pid 7\nstart_ticks 99\n");
  REQUIRE(shim_pid.ok());
  CHECK(shim_pid->pid == 7);
  CHECK(shim_pid->start_ticks == 99);
  CHECK(absl::IsInvalidArgument(ParseShimPid("pid 7\n").status()));
  CHECK(absl::IsInvalidArgument(ParseShimPid("pid -7\nstart_ticks 99\n").status()));
  TempDir dir;
  CHECK(absl::IsNotFound(ReadShimPid(dir.path()).status()));
  CHECK(absl::IsNotFound(ReadShimStatus(dir.path()).status()));
}

TEST_CASE("shim: failed launches read as SpawnProcess words them", "[shim]") {
  struct Row {
    const char* stage;
    int error;
    const char* user;
    absl::StatusCode code;
    std::string message;
  };
  const Row rows[] = {
      {"exec", ENOENT, "", absl::StatusCode::kInvalidArgument,
       "cannot execute train.py: No such file or directory"},
      {"exec", EACCES, "bob", absl::StatusCode::kInvalidArgument,
       "cannot execute train.py: Permission denied"},
      {"exec", ENOEXEC, "", absl::StatusCode::kInvalidArgument,
       "cannot execute train.py: Exec format error"},
      {"exec", ENOMEM, "", absl::StatusCode::kInternal,
       "cannot execute train.py: Cannot allocate memory"},
      {"chdir", EACCES, "bob", absl::StatusCode::kInternal,
       "cannot enter working directory /w as user bob: Permission denied"},
      {"chdir", ENOENT, "", absl::StatusCode::kInternal,
       "cannot enter working directory /w: No such file or directory"},
      {"user", EPERM, "bob", absl::StatusCode::kInternal,
       "cannot switch to user bob: Operation not permitted"},
      {"stdio", EMFILE, "", absl::StatusCode::kInternal,
       "cannot set up stdin/stdout/stderr: Too many open files"},
      {"shim", EINVAL, "", absl::StatusCode::kInternal, "trainctl-shim failed: bad flags"},
  };
  for (const Row& row : rows) {
    INFO("stage " << row.stage << ", errno " << row.error);
    ShimStatus status;
    status.state = ShimStatus::State::kFailed;
    status.failed_stage = row.stage;
    status.failed_errno = row.error;
    status.error = "bad flags";
    const absl::Status error = LaunchErrorOf(status, "train.py", "/w", row.user);
    CHECK(error.code() == row.code);
    CHECK(error.message() == row.message);
  }
  ShimStatus running;
  CHECK(LaunchErrorOf(running, "train.py", "/w", "").ok());
}

}  // namespace
}  // namespace trainctl::agent
