// The exit decision table of today's policy: success, done, user error, OOM, launch failures.
#include "scheduler/exit_policy.h"

#include <catch2/catch.hpp>

namespace trainctl::sched {
namespace {

struct Row {
  const char* what;
  int rank;
  v1::ReplicaExited exit;
  ExitDecision decision;
  int code;
  const char* message;
};

v1::ReplicaExited Code(int c) {
  v1::ReplicaExited e;
  e.set_exit_code(c);
  return e;
}
v1::ReplicaExited Sig(int s) {
  v1::ReplicaExited e;
  e.set_signal(s);
  return e;
}
v1::ReplicaExited Oom() {
  v1::ReplicaExited e;
  e.set_signal(9);
  e.set_oom_killed(true);
  return e;
}
v1::ReplicaExited Launch(bool user) {
  v1::ReplicaExited e;
  e.set_launch_failed(true);
  e.set_launch_error("command not found: trian.py");
  e.set_launch_error_is_user(user);
  return e;
}

TEST_CASE("DecideOnExit follows the decision table") {
  const Row rows[] = {
      {"primary exits 0 -> success (R6)", 0, Code(0), ExitDecision::kSucceedJob, 0, ""},
      {"worker exits 0 -> keep running", 2, Code(0), ExitDecision::kNothing, 0, ""},
      {"non-zero exit -> user error (R8)", 2, Code(3), ExitDecision::kFailJob, 3,
       "Replica worker-1 exited with a non-zero status of 3. Termination reason: Error."},
      {"killed by a signal -> error", 2, Sig(11), ExitDecision::kFailJob, 3,
       "Replica worker-1 was killed by signal 11 (SIGSEGV). Termination reason: Error."},
      {"OOM kill (R8)", 2, Oom(), ExitDecision::kFailJob, 8,
       "Replica worker-1 ran out of memory and exited with a non-zero status of 137."},
      {"bad command -> user error", 2, Launch(true), ExitDecision::kFailJob, 3,
       "Replica worker-1 could not start: command not found: trian.py."},
      {"host cannot launch -> internal (R9)", 2, Launch(false), ExitDecision::kFailJob, 13,
       "Internal error occurred for the current attempt. Replica worker-1 could not start on "
       "node node-a: command not found: trian.py."},
  };
  for (const Row& row : rows) {
    SECTION(row.what) {
      v1::Job job;
      v1::Replica r;
      r.set_name(row.rank == 0 ? "chief-0" : "worker-1");
      r.set_rank(row.rank);
      r.set_node("node-a");
      ExitOutcome out = DecideOnExit(job, r, row.exit);
      CHECK(out.decision == row.decision);
      CHECK(out.error.code() == row.code);
      CHECK(out.error.message() == row.message);
      if (row.code != 0) CHECK(out.error.node() == "node-a");
    }
  }
}

TEST_CASE("SignalName names common signals") {
  CHECK(SignalName(9) == "SIGKILL");
  CHECK(SignalName(6) == "SIGABRT");
}

}  // namespace
}  // namespace trainctl::sched
