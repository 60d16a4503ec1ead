#include "cli/states.h"

#include <catch2/catch.hpp>

namespace trainctl::cli {
namespace {

TEST_CASE("ParseJobState accepts short, upper and full names", "[states]") {
  struct Case {
    const char* text;
    v1::JobState state;
  };
  const Case cases[] = {
      {"running", v1::JOB_STATE_RUNNING},           {"RUNNING", v1::JOB_STATE_RUNNING},
      {"JOB_STATE_RUNNING", v1::JOB_STATE_RUNNING}, {"job_state_queued", v1::JOB_STATE_QUEUED},
      {"Cancelled", v1::JOB_STATE_CANCELLED},       {" failed ", v1::JOB_STATE_FAILED},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<v1::JobState> state = ParseJobState(c.text);
    REQUIRE(state.ok());
    CHECK(*state == c.state);
  }
}

TEST_CASE("ParseJobState rejects unknown and unspecified states", "[states]") {
  for (const char* text :
       {"runing", "", "unspecified", "JOB_STATE_UNSPECIFIED", "REPLICA_STATE_RUNNING"}) {
    INFO(text);
    absl::StatusOr<v1::JobState> state = ParseJobState(text);
    REQUIRE_FALSE(state.ok());
    CHECK(state.status().code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK(ParseJobState("runing").status().message() ==
        "unknown job state \"runing\"; valid states: queued, pending, running, succeeded, failed, "
        "cancelling, cancelled");
}

TEST_CASE("ParseJobStates splits commas and drops duplicates", "[states]") {
  absl::StatusOr<std::vector<v1::JobState>> states =
      ParseJobStates({"running,queued", "RUNNING", "failed,"});
  REQUIRE(states.ok());
  CHECK(*states == std::vector<v1::JobState>{v1::JOB_STATE_RUNNING, v1::JOB_STATE_QUEUED,
                                             v1::JOB_STATE_FAILED});
  CHECK(ParseJobStates({}).value().empty());
  CHECK_FALSE(ParseJobStates({"running,nope"}).ok());
}

TEST_CASE("State names drop the enum prefix", "[states]") {
  CHECK(JobStateName(v1::JOB_STATE_CANCELLING) == "CANCELLING");
  CHECK(JobStateName(v1::JOB_STATE_UNSPECIFIED) == "UNSPECIFIED");
  CHECK(JobStateName(static_cast<v1::JobState>(42)) == "42");
  CHECK(ReplicaStateName(v1::REPLICA_STATE_STOPPING) == "STOPPING");
}

TEST_CASE("Node state and health names drop the enum prefix", "[states]") {
  CHECK(NodeStateName(v1::NODE_STATE_READY) == "READY");
  CHECK(NodeStateName(v1::NODE_STATE_CORDONED) == "CORDONED");
  CHECK(NodeStateName(v1::NODE_STATE_DRAINING) == "DRAINING");
  CHECK(NodeStateName(v1::NODE_STATE_ISOLATED) == "ISOLATED");
  CHECK(NodeStateName(v1::NODE_STATE_LOST) == "LOST");
  // A server that does not report node states.
  CHECK(NodeStateName(v1::NODE_STATE_UNSPECIFIED) == "-");
  CHECK(NodeStateName(static_cast<v1::NodeState>(42)) == "42");
  CHECK(NodeHealthName(v1::NODE_HEALTH_HEALTHY) == "HEALTHY");
  CHECK(NodeHealthName(v1::NODE_HEALTH_UNHEALTHY) == "UNHEALTHY");
  CHECK(NodeHealthName(v1::NODE_HEALTH_UNKNOWN) == "UNKNOWN");
  CHECK(NodeHealthName(v1::NODE_HEALTH_UNSPECIFIED) == "-");
}

TEST_CASE("IsTerminal is true for the three end states only", "[states]") {
  CHECK(IsTerminal(v1::JOB_STATE_SUCCEEDED));
  CHECK(IsTerminal(v1::JOB_STATE_FAILED));
  CHECK(IsTerminal(v1::JOB_STATE_CANCELLED));
  CHECK_FALSE(IsTerminal(v1::JOB_STATE_CANCELLING));
  CHECK_FALSE(IsTerminal(v1::JOB_STATE_RUNNING));
  CHECK_FALSE(IsTerminal(v1::JOB_STATE_QUEUED));
}

}  // namespace
}  // namespace trainctl::cli
