// Reports from agents about runs: duplicates and stale reports apply once, and a node's reports
// about another node's runs are ignored and counted.
#include <catch2/catch.hpp>

#include "scheduler/core.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

TEST_CASE("duplicate and stale reports are ignored (applied exactly once)") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(1), &id);
  f.StartAll(launches);
  Effects fx;
  f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedCode(launches[1].run_id(), 0), FromMs(++f.now),
                       &fx);
  Effects again;
  f.core.ReplicaExited(f.NodeOf(launches[1]), ExitedCode(launches[1].run_id(), 0), FromMs(++f.now),
                       &again);
  CHECK(again.empty());
  Effects wrong_node;
  f.core.ReplicaExited("node-z", ExitedCode(launches[0].run_id(), 1), FromMs(++f.now), &wrong_node);
  CHECK(wrong_node.empty());
  CHECK(f.Job(id).state() == v1::JOB_STATE_RUNNING);
}

TEST_CASE("a node's report on another node's run is ignored and counted on the reporter") {
  Fixture f;
  std::string id;
  auto launches = f.SubmitAndPlace(Spec(0), &id);
  f.StartAll(launches);
  const std::string owner = f.NodeOf(launches[0]);
  const std::string other = owner == "node-a" ? "node-b" : "node-a";
  Effects fx;
  f.core.ReplicaExited(other, ExitedCode(launches[0].run_id(), 0), FromMs(++f.now), &fx);
  CHECK(f.Job(id).state() == v1::JOB_STATE_RUNNING);
  CHECK(f.core.GetNode(other)->ignored_reports() == 1);
  CHECK(f.core.GetNode(owner)->ignored_reports() == 0);
  CHECK(fx.nodes.count(other) == 1);  // the counter is stored
  REQUIRE(fx.events.size() == 1);
  CHECK(fx.events[0].type == "NodeReportIgnored");
  Effects again;
  f.core.ReplicaExited(other, ExitedCode(launches[0].run_id(), 1), FromMs(++f.now), &again);
  CHECK(f.core.GetNode(other)->ignored_reports() == 2);
  CHECK(again.events.empty());
  CHECK(f.Job(id).state() == v1::JOB_STATE_RUNNING);
}

}  // namespace
}  // namespace trainctl::sched
