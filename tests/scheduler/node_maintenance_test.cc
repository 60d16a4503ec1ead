// NodeMaintenance on its own (node_maintenance.h): a window drains its node at its start and
// lets it go at its end unless an operator holds it too; an agent's window applies once and never
// over an operator's. The nodes are a plain map and the registry a fake of NodeOps that cordons
// and drains as the registry does, so the part is seen deciding alone.
#include "scheduler/node_maintenance.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "model/model_proto.h"

namespace trainctl::sched {
namespace {

// What the part asks of the registry, in order. StartDrain holds the node as the registry does.
class RecordingMaintenanceOps : public NodeOps {
 public:
  void Refresh(Node* node, const std::string& reason, absl::Time, Effects*) override {
    refreshed.push_back(absl::StrCat(node->name, ": ", reason));
  }
  void Changed() override { ++changes; }
  void StartDrain(Node* node, const std::string& why, const std::string&, absl::Duration,
                  absl::Time, Effects*) override {
    node->status.cordoned = true;
    node->draining = true;
    drained.push_back(absl::StrCat(node->name, ": ", why));
  }

  std::vector<std::string> refreshed;
  int changes = 0;
  std::vector<std::string> drained;
};

const absl::Time kMaintT0 = absl::FromUnixSeconds(1'800'000'000);

v1::MaintenanceWindow MaintWindow(absl::Time start, absl::Duration length,
                                  const std::string& reason, const std::string& source) {
  v1::MaintenanceWindow w;
  *w.mutable_start_time() = ToProtoTime(start);
  w.mutable_duration()->set_seconds(absl::ToInt64Seconds(length));
  w.set_reason(reason);
  w.set_source(source);
  return w;
}

v1::MaintenanceReport MaintReport(const std::optional<v1::MaintenanceWindow>& window) {
  v1::MaintenanceReport report;
  if (window.has_value()) *report.mutable_window() = *window;
  return report;
}

struct MaintenanceRig {
  std::map<std::string, Node> nodes;
  RecordingMaintenanceOps ops;
  NodeMaintenance maintenance{&nodes, &ops};

  MaintenanceRig() {
    nodes["node-a"].name = "node-a";
    nodes["node-a"].connected = true;
  }
  Node& a() { return nodes["node-a"]; }
};

// The reasons of the events of `type` in `fx`.
std::vector<std::string> MaintEvents(const Effects& fx, const std::string& type) {
  std::vector<std::string> out;
  for (const Event& e : fx.events) {
    if (e.type == type) out.push_back(e.reason);
  }
  return out;
}

TEST_CASE("NodeMaintenance: a window drains its node at its start and lets it go at its end") {
  MaintenanceRig r;
  Effects fx;
  const absl::Time start = kMaintT0 + absl::Hours(1);
  const absl::Time end = start + absl::Hours(2);
  REQUIRE(r.maintenance
              .Set("node-a", MaintWindow(start, absl::Hours(2), "BIOS update", "operator"),
                   kMaintT0, &fx)
              .ok());
  CHECK(MaintEvents(fx, "NodeMaintenanceScheduled").size() == 1);
  CHECK(r.ops.changes == 1);
  CHECK(r.maintenance.NextChange(kMaintT0) == start);

  CHECK(r.maintenance.Start(start - absl::Seconds(1), &fx).empty());
  const std::vector<NodeMove> moves = r.maintenance.Start(start, &fx);
  REQUIRE(moves.size() == 1);
  CHECK(moves[0].node == "node-a");
  CHECK(absl::StrContains(moves[0].why, "is draining for its maintenance window"));
  CHECK(r.ops.drained.size() == 1);
  REQUIRE(r.a().status.maintenance.has_value());
  CHECK(r.a().status.maintenance->drained());
  CHECK(r.a().status.maintenance->holds_cordon());  // the node was not cordoned before
  CHECK(r.maintenance.Start(start + absl::Minutes(1), &fx).empty());  // drained once
  CHECK(r.maintenance.NextChange(start) == end);

  r.maintenance.End(end - absl::Seconds(1), &fx);
  CHECK(r.a().status.maintenance.has_value());
  r.maintenance.End(end, &fx);
  CHECK_FALSE(r.a().status.maintenance.has_value());
  CHECK_FALSE(r.a().status.cordoned);
  CHECK_FALSE(r.a().draining);
  CHECK(MaintEvents(fx, "NodeUncordoned") ==
        std::vector<std::string>{"uncordoned: its maintenance window ended"});
  CHECK(r.ops.refreshed.back() == "node-a: uncordoned: its maintenance window ended");
  CHECK(r.maintenance.NextChange(end) == absl::InfiniteFuture());
}

TEST_CASE("NodeMaintenance: an operator's cordon stays after the window") {
  MaintenanceRig r;
  Effects fx;
  const absl::Time start = kMaintT0 + absl::Hours(1);
  REQUIRE(r.maintenance
              .Set("node-a", MaintWindow(start, absl::Hours(1), "BIOS update", "operator"),
                   kMaintT0, &fx)
              .ok());

  SECTION("cordoned before the window began") {
    r.a().status.cordoned = true;
    CHECK(r.maintenance.Start(start, &fx).size() == 1);
    CHECK_FALSE(r.a().status.maintenance->holds_cordon());
  }
  SECTION("cordoned by an operator while the window holds it") {
    CHECK(r.maintenance.Start(start, &fx).size() == 1);
    CHECK(NodeMaintenance::OperatorTookHold(&r.a()));
    CHECK_FALSE(NodeMaintenance::OperatorTookHold(&r.a()));  // the hold is the operator's now
  }
  r.maintenance.End(start + absl::Hours(1), &fx);
  CHECK_FALSE(r.a().status.maintenance.has_value());
  CHECK(r.a().status.cordoned);
  CHECK(MaintEvents(fx, "NodeUncordoned").empty());
  const std::vector<std::string> ended = MaintEvents(fx, "NodeMaintenanceEnded");
  REQUIRE(ended.size() == 1);
  CHECK(absl::StrContains(ended[0], "the node stays cordoned: an operator cordoned it"));
}

TEST_CASE("NodeMaintenance: an agent's window applies once, and never over an operator's") {
  MaintenanceRig r;
  Effects fx;
  const v1::MaintenanceWindow agents =
      MaintWindow(kMaintT0 + absl::Hours(1), absl::Hours(1), "kernel upgrade", "");

  r.maintenance.Reported("node-a", MaintReport(agents), kMaintT0, &fx);
  REQUIRE(r.a().status.maintenance.has_value());
  CHECK(r.a().status.maintenance->source() == "agent");
  REQUIRE(r.a().status.agent_maintenance.has_value());

  // An operator clears it: the same window reported again (the agent registers again) stays
  // cleared.
  REQUIRE(r.maintenance.Set("node-a", std::nullopt, kMaintT0, &fx).ok());
  r.maintenance.Reported("node-a", MaintReport(agents), kMaintT0, &fx);
  CHECK_FALSE(r.a().status.maintenance.has_value());

  // An operator's window stands over a new one from the agent.
  REQUIRE(r.maintenance
              .Set("node-a",
                   MaintWindow(kMaintT0 + absl::Hours(5), absl::Hours(1), "rack move", "operator"),
                   kMaintT0, &fx)
              .ok());
  r.maintenance.Reported(
      "node-a", MaintReport(MaintWindow(kMaintT0 + absl::Hours(2), absl::Hours(1), "disk", "")),
      kMaintT0, &fx);
  CHECK(r.a().status.maintenance->reason() == "rack move");

  // No window in the agent's report: what it reported last is forgotten.
  r.maintenance.Reported("node-a", MaintReport(std::nullopt), kMaintT0, &fx);
  CHECK_FALSE(r.a().status.agent_maintenance.has_value());
  CHECK(r.a().status.maintenance->reason() == "rack move");

  // Invalid windows and unknown nodes are ignored.
  r.maintenance.Reported("node-a", MaintReport(MaintWindow(kMaintT0, absl::Hours(1), "", "")),
                         kMaintT0, &fx);
  CHECK_FALSE(r.a().status.agent_maintenance.has_value());
  r.maintenance.Reported("node-x", MaintReport(agents), kMaintT0, &fx);
  CHECK(r.maintenance.Set("node-x", std::nullopt, kMaintT0, &fx).code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace trainctl::sched
