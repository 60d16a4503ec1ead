// CheckInvariants (scheduler/invariants.h): a core that went through real inputs holds them, and
// each invariant, broken by hand in a restored copy of that core's state, is reported.
#include "scheduler/invariants.h"

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "tests/scheduler/core_fixture.h"

namespace trainctl::sched::testing {
namespace {

// Checks that `core` holds its invariants, printing the first broken one.
void CheckHolds(const Core& core) {
  const absl::Status s = CheckInvariants(core);
  INFO(s.ToString());
  CHECK(s.ok());
}

TEST_CASE("CheckInvariants holds through a job's life", "[invariants]") {
  Fixture f;
  std::string id;
  const std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(Spec(2), &id);
  CheckHolds(f.core);
  f.StartAll(launches);
  CheckHolds(f.core);
  for (const v1::LaunchReplica& l : launches) {
    Effects fx;
    f.core.ReplicaExited(f.NodeOf(l), ExitedCode(l.run_id(), 0), FromMs(++f.now), &fx);
    CheckHolds(f.core);
  }
  CHECK(f.Job(id).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("CheckInvariants names each broken invariant", "[invariants]") {
  struct Row {
    const char* broken;
    std::function<void(Job*)> mutate;
    const char* message;
  };
  const std::vector<Row> rows = {
      {"nothing", [](Job*) {}, ""},
      {"a terminal job holds resources",
       [](Job* j) {
         j->state = v1::JOB_STATE_SUCCEEDED;
         j->end_time = absl::FromUnixMillis(2'000'000);
       },
       "is JOB_STATE_SUCCEEDED while replica"},
      {"a replica holds resources on an unknown node",
       [](Job* j) { j->replicas[0].node = "node-gone"; }, "which the core does not know"},
      {"a terminal job has no end time",
       [](Job* j) {
         for (Replica& r : j->replicas) r.state = v1::REPLICA_STATE_SUCCEEDED;
         j->state = v1::JOB_STATE_FAILED;
       },
       "without an end time"},
      {"two replicas share a name", [](Job* j) { j->replicas[1].name = j->replicas[0].name; },
       "two replicas named"},
      {"attempts are numbered out of order", [](Job* j) { j->attempts[0].number = 2; },
       "has attempt 2 in place 1"},
  };
  for (const Row& row : rows) {
    SECTION(row.broken) {
      Fixture f;
      std::string id;
      f.StartAll(f.SubmitAndPlace(Spec(1), &id));
      std::vector<Job> jobs;
      for (const auto& [job_id, job] : f.core.jobs()) jobs.push_back(job);
      row.mutate(&jobs[0]);
      std::vector<Node> nodes;
      for (const auto& [name, node] : f.core.nodes()) nodes.push_back(node);
      Core restored(TestOptions(42));
      restored.Restore(std::move(jobs), std::move(nodes), {});
      const absl::Status s = CheckInvariants(restored);
      INFO(s.ToString());
      if (std::string(row.message).empty()) {
        CHECK(s.ok());
      } else {
        CHECK(s.code() == absl::StatusCode::kInternal);
        CHECK(absl::StrContains(s.message(), row.message));
      }
    }
  }
}

}  // namespace
}  // namespace trainctl::sched::testing
