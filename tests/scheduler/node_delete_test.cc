// Core::DeleteNode: which nodes an operator may forget, and what the store is told to keep.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "scheduler/core.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

TEST_CASE_METHOD(Fixture,
                 "DeleteNode: only a node without its agent and replicas, revocations kept") {
  std::string id;
  std::vector<v1::LaunchReplica> launches = SubmitAndPlace(Spec(0), &id);
  REQUIRE(launches.size() == 1);
  StartAll(launches);
  const std::string busy = NodeOf(launches[0]);
  const std::string idle = busy == "node-a" ? "node-b" : "node-a";
  Effects fx;
  // Connected: refused, whatever it runs.
  absl::StatusOr<v1::Node> refused = core.DeleteNode(idle, "", FromMs(++now), &fx);
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(refused.status().message(), "agent is connected"));
  // Gone, but a replica of a live job is still on it.
  core.AgentDisconnected(busy, FromMs(++now), &fx);
  refused = core.DeleteNode(busy, "", FromMs(++now), &fx);
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(refused.status().message(), "still has replica chief-0 of job " + id));
  CHECK(core.DeleteNode("node-z", "", FromMs(++now), &fx).status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(fx.deleted_nodes.empty());

  // A node whose certificate was revoked: deleted, the fingerprint kept for the store.
  v1::Register reg = Reg("node-c");
  reg.set_certificate_fingerprint("fp-node-c");
  core.AgentRegistered(reg, FromMs(++now), &fx);
  REQUIRE(core.RevokeNode("node-c", "stolen disk", FromMs(++now), &fx).ok());
  Effects del;
  absl::StatusOr<v1::Node> was = core.DeleteNode("node-c", "host scrapped", FromMs(++now), &del);
  REQUIRE(was.ok());
  CHECK(was->name() == "node-c");
  CHECK(core.FindNode("node-c") == nullptr);
  CHECK(del.deleted_nodes ==
        std::map<std::string, std::vector<std::string>>{{"node-c", {"fp-node-c"}}});
  CHECK(del.nodes.count("node-c") == 0);
  REQUIRE(del.events.size() == 1);
  CHECK(del.events[0].type == "NodeDeleted");
  CHECK(del.events[0].reason == "node node-c was deleted by an operator: host scrapped");
  // The name is free: an agent registering it again is a new node.
  core.AgentRegistered(Reg("node-c"), FromMs(++now), &fx);
  CHECK(core.FindNode("node-c") != nullptr);
}

}  // namespace
}  // namespace trainctl::sched
