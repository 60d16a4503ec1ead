// NodeLiveness on its own (node_liveness.h): the lost timeout, the fence wait before a LOST
// node's replicas move, a LOST node heard from again, and a restore's first check. The nodes are
// a plain map and the registry a recording fake of NodeOps, so the part is seen deciding alone.
#include "scheduler/node_liveness.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace trainctl::sched {
namespace {

// What the part asks of the registry, in order; derives no state.
class RecordingLivenessOps : public NodeOps {
 public:
  void Refresh(Node* node, const std::string& reason, absl::Time, Effects*) override {
    refreshed.push_back(absl::StrCat(node->name, ": ", reason));
  }
  void Changed() override { ++changes; }
  void StartDrain(Node* node, const std::string&, const std::string&, absl::Duration, absl::Time,
                  Effects*) override {
    drained.push_back(node->name);
  }

  std::vector<std::string> refreshed;
  int changes = 0;
  std::vector<std::string> drained;
};

const absl::Time kLiveT0 = absl::FromUnixSeconds(1'800'000'000);
constexpr absl::Duration kLiveTimeout = absl::Seconds(15);  // fence margin 3s

struct LivenessRig {
  std::map<std::string, Node> nodes;
  RecordingLivenessOps ops;
  NodeLiveness liveness{&nodes, kLiveTimeout, &ops};

  Node& Add(const std::string& name, absl::Time at = kLiveT0) {
    Node& n = nodes[name];
    n.name = name;
    liveness.Connected(&n, at);
    return n;
  }
};

std::vector<std::string> MovedNodes(const std::vector<NodeMove>& moves) {
  std::vector<std::string> out;
  for (const NodeMove& m : moves) out.push_back(m.node);
  return out;
}

// The reasons of the events of `type` in `fx`.
std::vector<std::string> LivenessEvents(const Effects& fx, const std::string& type) {
  std::vector<std::string> out;
  for (const Event& e : fx.events) {
    if (e.type == type) out.push_back(e.reason);
  }
  return out;
}

TEST_CASE("NodeLiveness: LOST at the lost timeout, its replicas move one fence margin later") {
  LivenessRig r;
  Node& a = r.Add("node-a");
  Effects fx;
  CHECK(r.liveness.DetectLost(kLiveT0 + kLiveTimeout - absl::Milliseconds(1), &fx).empty());
  CHECK_FALSE(a.lost);

  const std::vector<NodeMove> lost = r.liveness.DetectLost(kLiveT0 + kLiveTimeout, &fx);
  CHECK(MovedNodes(lost) == std::vector<std::string>{"node-a"});
  CHECK(lost[0].why == "node node-a was lost: no heartbeat for 15s (lost timeout 15s)");
  CHECK(a.lost);
  REQUIRE(a.move_at.has_value());
  CHECK(*a.move_at == kLiveT0 + kLiveTimeout + absl::Seconds(3));
  CHECK(r.ops.refreshed ==
        std::vector<std::string>{"node-a: no heartbeat for 15s (lost timeout 15s)"});
  // Counted once.
  CHECK(r.liveness.DetectLost(kLiveT0 + absl::Seconds(16), &fx).empty());

  CHECK(r.liveness.DueMoves(kLiveT0 + absl::Seconds(18) - absl::Milliseconds(1), &fx).empty());
  const std::vector<NodeMove> due = r.liveness.DueMoves(kLiveT0 + absl::Seconds(18), &fx);
  CHECK(MovedNodes(due) == std::vector<std::string>{"node-a"});
  CHECK(absl::StrContains(due[0].why, "waited 3s more for its agent to fence its replicas"));
  CHECK_FALSE(a.move_at.has_value());
  CHECK(r.liveness.DueMoves(kLiveT0 + absl::Seconds(30), &fx).empty());  // each once
  CHECK(LivenessEvents(fx, "NodeFenced").size() == 1);
}

TEST_CASE("NodeLiveness: a heartbeat keeps a node, one after it was LOST brings it back") {
  LivenessRig r;
  Node& a = r.Add("node-a");
  Effects fx;
  r.liveness.Heartbeat("node-a", kLiveT0 + absl::Seconds(10), &fx);
  CHECK(a.last_heartbeat == kLiveT0 + absl::Seconds(10));
  CHECK(r.liveness.DetectLost(kLiveT0 + absl::Seconds(24), &fx).empty());
  CHECK(MovedNodes(r.liveness.DetectLost(kLiveT0 + absl::Seconds(25), &fx)) ==
        std::vector<std::string>{"node-a"});

  SECTION("before its move: its replicas stay, nothing moves") {
    r.liveness.Heartbeat("node-a", kLiveT0 + absl::Seconds(26), &fx);
    CHECK_FALSE(a.lost);
    CHECK_FALSE(a.move_at.has_value());
    const std::vector<std::string> returned = LivenessEvents(fx, "NodeReturned");
    REQUIRE(returned.size() == 1);
    CHECK(absl::StrContains(returned[0], "before its replicas moved: they stay on it"));
    CHECK(r.liveness.DueMoves(kLiveT0 + absl::Minutes(1), &fx).empty());
    CHECK(fx.commands.empty());
  }
  SECTION("after its move: the runs moved off it meanwhile are stopped on it") {
    CHECK(r.liveness.DueMoves(kLiveT0 + absl::Seconds(28), &fx).size() == 1);
    r.liveness.AddStaleRun("node-a", "run-1");
    r.liveness.AddStaleRun("node-x", "run-2");  // unknown: ignored
    r.liveness.Heartbeat("node-a", kLiveT0 + absl::Seconds(30), &fx);
    CHECK_FALSE(a.lost);
    REQUIRE(fx.commands.size() == 1);
    CHECK(fx.commands[0].node == "node-a");
    CHECK(fx.commands[0].message.stop().run_id() == "run-1");
    CHECK(a.stale_runs.empty());
    CHECK(r.ops.refreshed.back() == "node-a: its agent is heard from again");
  }
  SECTION("a heartbeat without a stream does not bring it back") {
    r.liveness.Disconnect("node-a", kLiveT0 + absl::Seconds(26), &fx);
    r.liveness.Heartbeat("node-a", kLiveT0 + absl::Seconds(27), &fx);
    CHECK(a.lost);
    CHECK(LivenessEvents(fx, "NodeReturned").empty());
  }
}

TEST_CASE("NodeLiveness: a disconnect is recorded once, with when its agent fences") {
  LivenessRig r;
  Node& a = r.Add("node-a");
  Effects fx;
  r.liveness.Disconnect("node-a", kLiveT0, &fx);
  r.liveness.Disconnect("node-a", kLiveT0, &fx);
  r.liveness.Disconnect("node-x", kLiveT0, &fx);  // unknown: ignored
  CHECK_FALSE(a.connected);
  CHECK(r.ops.changes == 1);
  const std::vector<std::string> events = LivenessEvents(fx, "NodeDisconnected");
  REQUIRE(events.size() == 1);
  CHECK(absl::StrContains(events[0], "no word from the scheduler for 12s"));
}

TEST_CASE("NodeLiveness: after a restore the first check counts as every node's heartbeat") {
  LivenessRig r;
  Node& a = r.nodes["node-a"];
  a.name = "node-a";
  a.connected = true;
  a.last_heartbeat = absl::FromUnixMillis(1000);  // long before the restart
  a.status.state = v1::NODE_STATE_READY;
  Node& b = r.nodes["node-b"];
  b.name = "node-b";
  b.status.state = v1::NODE_STATE_LOST;
  r.liveness.Restore(&a);
  r.liveness.Restore(&b);
  r.liveness.Restored();
  CHECK_FALSE(a.connected);
  CHECK_FALSE(a.lost);
  CHECK(b.lost);
  REQUIRE(b.move_at.has_value());  // pending, its time not known yet
  Effects fx;
  CHECK(r.liveness.DueMoves(kLiveT0, &fx).empty());

  CHECK(r.liveness.DetectLost(kLiveT0, &fx).empty());
  CHECK(*b.move_at == kLiveT0 + absl::Seconds(3));
  CHECK(MovedNodes(r.liveness.DueMoves(kLiveT0 + absl::Seconds(3), &fx)) ==
        std::vector<std::string>{"node-b"});
  CHECK(r.liveness.DetectLost(kLiveT0 + kLiveTimeout - absl::Milliseconds(1), &fx).empty());
  CHECK(MovedNodes(r.liveness.DetectLost(kLiveT0 + kLiveTimeout, &fx)) ==
        std::vector<std::string>{"node-a"});
}

TEST_CASE("NodeLiveness: a registration brings a LOST node back, a revoke moves at once") {
  LivenessRig r;
  Node& a = r.Add("node-a");
  Effects fx;
  a.stale_runs.insert("run-1");
  CHECK_FALSE(r.liveness.Rejoined(&a, kLiveT0, &fx));  // not LOST: the caller refreshes
  CHECK(a.stale_runs.empty());  // the runs it reports are reconciled by the core
  CHECK(r.ops.refreshed.empty());

  r.liveness.DetectLost(kLiveT0 + kLiveTimeout, &fx);
  r.liveness.Connected(&a, kLiveT0 + absl::Seconds(16));
  CHECK(r.liveness.Rejoined(&a, kLiveT0 + absl::Seconds(16), &fx));
  CHECK_FALSE(a.lost);
  CHECK(r.ops.refreshed.back() == "node-a: its agent registered again");

  r.liveness.Revoked(&a);
  CHECK(a.lost);
  CHECK_FALSE(a.connected);
  CHECK_FALSE(a.move_at.has_value());  // no fence wait: the core moves its replicas now
  CHECK(r.liveness.DueMoves(kLiveT0 + absl::Hours(1), &fx).empty());
  CHECK(r.ops.drained.empty());
}

}  // namespace
}  // namespace trainctl::sched
