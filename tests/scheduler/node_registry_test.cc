// NodeRegistry on its own (R11-R18): registration, the lost timeout and the restore grace, check
// runs, operator holds, what replicas hold on each node, with a fake clock.
#include "scheduler/node_registry.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using testing::Reg;

constexpr int64_t kLostMs = 15'000;
const absl::Time kT0 = FromMs(1'000'000);

NodePolicy Policy() {
  NodePolicy p;
  p.lost_timeout_ms = kLostMs;
  p.flap_threshold = 3;
  p.flap_window_ms = 3'600'000;
  return p;
}

v1::CheckRun Checks(const std::string& phase, bool passed, absl::Time t) {
  v1::CheckRun run;
  run.set_phase(phase);
  run.set_passed(passed);
  *run.mutable_time() = MsToTimestamp(ToMs(t));
  v1::CheckResult* item = run.add_items();
  item->set_item("disk-size root");
  item->set_passed(passed);
  item->set_message("3.1 GB free, needs > 32 GB");
  return run;
}

// The reasons of the events of `type` in `fx`, in order.
std::vector<std::string> Events(const Effects& fx, const std::string& type) {
  std::vector<std::string> out;
  for (const Event& e : fx.events) {
    if (e.type == type) out.push_back(e.reason);
  }
  return out;
}

std::vector<std::string> Names(const std::vector<NodeFree>& nodes) {
  std::vector<std::string> out;
  for (const NodeFree& n : nodes) out.push_back(n.name);
  return out;
}

v1::NodeState StateOf(const NodeRegistry& nodes, const std::string& name) {
  return nodes.Find(name)->status.state();
}

// A registry with node-a and node-b registered at kT0.
struct Registry {
  NodeRegistry nodes{Policy()};
  Registry() {
    Effects fx;
    nodes.Register(Reg("node-a"), kT0, &fx);
    nodes.Register(Reg("node-b"), kT0, &fx);
    nodes.TakeChanged();
  }
};

TEST_CASE("NodeRegistry: register, reconnect and a restarted agent are told apart") {
  NodeRegistry nodes(Policy());
  Effects fx;
  nodes.Register(Reg("node-a", 8, 8192, 2), kT0, &fx);
  CHECK(Events(fx, "NodeRegistered") ==
        std::vector<std::string>{
            "agent registered with 8 cpu, 8192 MiB, 2 gpus allocatable; reports 0 runs"});
  CHECK(fx.nodes.count("node-a") == 1);
  const Node* a = nodes.Find("node-a");
  REQUIRE(a != nullptr);
  CHECK(a->connected);
  CHECK(a->status.state() == v1::NODE_STATE_READY);
  CHECK(a->status.health() == v1::NODE_HEALTH_UNKNOWN);  // no check ran yet
  CHECK(a->status.state_reason() == "its agent registered");

  Effects again;
  nodes.Register(Reg("node-a", 8, 8192, 2), kT0 + absl::Seconds(1), &again);
  CHECK(Events(again, "NodeReconnected").size() == 1);
  CHECK(Events(again, "NodeReconnected")[0].rfind("agent reconnected with", 0) == 0);

  v1::Register restarted = Reg("node-a", 8, 8192, 2);
  restarted.set_agent_instance("instance-2");
  Effects third;
  nodes.Register(restarted, kT0 + absl::Seconds(2), &third);
  CHECK(Events(third, "NodeReconnected")[0].rfind("agent registered with", 0) == 0);
}

TEST_CASE("NodeRegistry: a disconnected node takes no work and keeps no replicas") {
  Registry r;
  Effects fx;
  r.nodes.Disconnect("node-a", kT0, &fx);
  CHECK(Events(fx, "NodeDisconnected").size() == 1);
  CHECK(r.nodes.TakeChanged());
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-b"});
  std::string why;
  CHECK_FALSE(r.nodes.KeepsReplicas("node-a", &why));
  CHECK(why == "node node-a is READY and disconnected");

  Effects twice;
  r.nodes.Disconnect("node-a", kT0, &twice);
  r.nodes.Disconnect("node-x", kT0, &twice);  // unknown: ignored
  CHECK(twice.empty());
}

TEST_CASE("NodeRegistry: a node not heard from for the lost timeout is LOST, once") {
  Registry r;
  Effects fx;
  r.nodes.Heartbeat("node-b", kT0 + absl::Seconds(10), &fx);
  CHECK(r.nodes.DetectLost(kT0 + absl::Milliseconds(kLostMs - 1), &fx).empty());

  const std::vector<NodeRegistry::Lost> lost =
      r.nodes.DetectLost(kT0 + absl::Milliseconds(kLostMs), &fx);
  REQUIRE(lost.size() == 1);  // node-b was heard from at +10s
  CHECK(lost[0].node == "node-a");
  CHECK(lost[0].why == "node node-a was lost: no heartbeat for 15s (lost timeout 15s)");
  CHECK(Events(fx, "NodeLost") ==
        std::vector<std::string>{
            "no heartbeat for 15s (lost timeout 15s); moving its replicas to other nodes"});
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_LOST);
  CHECK(r.nodes.Find("node-a")->status.health() == v1::NODE_HEALTH_UNKNOWN);
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-b"});

  Effects later;
  CHECK(r.nodes.DetectLost(kT0 + absl::Seconds(20), &later).empty());      // reported once
  CHECK(r.nodes.DetectLost(kT0 + absl::Seconds(25), &later).size() == 1);  // node-b now
}

TEST_CASE("NodeRegistry: after a restore the first check counts as a heartbeat") {
  Node a;
  a.name = "node-a";
  a.connected = true;          // restored nodes start disconnected whatever was stored
  a.last_heartbeat_ms = 1000;  // long before the restart
  Node gone;
  gone.name = "node-gone";
  gone.status.set_state(v1::NODE_STATE_LOST);
  Node draining;
  draining.name = "node-d";
  draining.status.set_state(v1::NODE_STATE_DRAINING);
  draining.status.set_cordoned(true);
  NodeRegistry nodes(Policy());
  nodes.Restore({a, gone, draining});
  CHECK_FALSE(nodes.Find("node-a")->connected);
  CHECK(nodes.Find("node-gone")->lost);
  CHECK(nodes.Find("node-d")->draining);
  CHECK(nodes.TakeChanged());

  Effects fx;
  const absl::Time first = kT0 + absl::Hours(1);
  CHECK(nodes.DetectLost(first, &fx).empty());
  CHECK(nodes.DetectLost(first + absl::Milliseconds(kLostMs - 1), &fx).empty());
  const std::vector<NodeRegistry::Lost> lost =
      nodes.DetectLost(first + absl::Milliseconds(kLostMs), &fx);
  REQUIRE(lost.size() == 2);  // node-gone was LOST already
  CHECK(lost[0].node == "node-a");
  CHECK(lost[1].node == "node-d");
  CHECK(StateOf(nodes, "node-d") == v1::NODE_STATE_LOST);
  CHECK_FALSE(nodes.Find("node-d")->draining);  // a lost node's drain is over
}

TEST_CASE("NodeRegistry: a heartbeat brings a LOST node back and stops its stale runs") {
  Registry r;
  Effects fx;
  r.nodes.Heartbeat("node-b", kT0 + absl::Seconds(15), &fx);
  REQUIRE(r.nodes.DetectLost(kT0 + absl::Seconds(15), &fx).size() == 1);
  r.nodes.AddStaleRun("node-a", "j-1/1/chief-0/0");
  r.nodes.AddStaleRun("node-x", "j-1/1/chief-0/0");  // unknown node: ignored

  Effects back;
  r.nodes.Heartbeat("node-a", kT0 + absl::Seconds(16), &back);
  CHECK(Events(back, "NodeReturned").size() == 1);
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
  CHECK(r.nodes.Find("node-a")->status.state_reason() == "its agent is heard from again");
  REQUIRE(back.commands.size() == 1);
  CHECK(back.commands[0].first == "node-a");
  CHECK(back.commands[0].second.stop().run_id() == "j-1/1/chief-0/0");
  CHECK(r.nodes.Find("node-a")->stale_runs.empty());

  Effects again;
  r.nodes.Heartbeat("node-a", kT0 + absl::Seconds(17), &again);
  CHECK(again.empty());  // not lost: nothing to say
}

TEST_CASE("NodeRegistry: a LOST node without a stream stays LOST until it registers") {
  Registry r;
  Effects fx;
  r.nodes.Disconnect("node-a", kT0, &fx);
  REQUIRE(r.nodes.DetectLost(kT0 + absl::Seconds(15), &fx).size() == 2);
  r.nodes.AddStaleRun("node-a", "j-1/1/chief-0/0");
  r.nodes.Heartbeat("node-a", kT0 + absl::Seconds(16), &fx);
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_LOST);

  Effects reg;
  r.nodes.Register(Reg("node-a"), kT0 + absl::Seconds(17), &reg);
  CHECK(Events(reg, "NodeReturned").size() == 1);
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
  // The runs it reports are the core's to reconcile: no stop from the registry here.
  CHECK(reg.commands.empty());
  CHECK(r.nodes.Find("node-a")->stale_runs.empty());
}

TEST_CASE("NodeRegistry: a failing check run isolates a node; a passing one brings it back") {
  Registry r;
  Effects fx;
  const NodeRegistry::CheckOutcome out =
      r.nodes.ApplyCheckRun("node-a", Checks("periodic", false, kT0), kT0, &fx);
  CHECK(out.isolated);
  CHECK(Events(fx, "NodeIsolated") ==
        std::vector<std::string>{"periodic check failed: item disk-size root failed: 3.1 GB "
                                 "free, needs > 32 GB; no new work until its checks pass again"});
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_ISOLATED);
  CHECK(r.nodes.Find("node-a")->status.health() == v1::NODE_HEALTH_UNHEALTHY);
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-b"});
  CHECK(r.nodes.TakeChanged());

  Effects again;  // still failing: a failed check, not a new isolation
  CHECK(r.nodes
            .ApplyCheckRun("node-a", Checks("periodic", false, kT0 + absl::Seconds(1)),
                           kT0 + absl::Seconds(1), &again)
            .isolated);
  CHECK(Events(again, "NodeIsolated").empty());
  CHECK(Events(again, "NodeCheckFailed").size() == 1);

  Effects healthy;
  CHECK_FALSE(r.nodes
                  .ApplyCheckRun("node-a", Checks("periodic", true, kT0 + absl::Seconds(2)),
                                 kT0 + absl::Seconds(2), &healthy)
                  .isolated);
  CHECK(Events(healthy, "NodeHealthy") ==
        std::vector<std::string>{"its periodic check passed again"});
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
  CHECK(r.nodes.Find("node-a")->status.health() == v1::NODE_HEALTH_HEALTHY);

  Effects unknown;
  CHECK_FALSE(
      r.nodes.ApplyCheckRun("node-x", Checks("periodic", false, kT0), kT0, &unknown).isolated);
  CHECK(unknown.empty());
}

TEST_CASE("NodeRegistry: the third isolation within the window makes a node flapping") {
  Registry r;
  absl::Time t = kT0;
  for (int i = 0; i < 3; ++i) {
    Effects fx;
    r.nodes.ApplyCheckRun("node-a", Checks("periodic", false, t), t, &fx);
    CHECK(Events(fx, "NodeFlapping").size() == (i == 2 ? 1u : 0u));
    t += absl::Minutes(1);
    r.nodes.ApplyCheckRun("node-a", Checks("periodic", true, t), t, &fx);
    t += absl::Minutes(1);
  }
  Effects fx;
  r.nodes.ApplyCheckRun("node-a", Checks("periodic", true, t), t, &fx);
  // Its checks pass, but it stays out until an operator lifts the hold.
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_ISOLATED);
  CHECK(r.nodes.Find("node-a")->status.state_reason() ==
        "flapping: its checks pass again, but it stays out until an operator runs `trainctl "
        "node uncordon node-a`");

  Effects uncordon;
  REQUIRE(r.nodes.Uncordon("node-a", t, &uncordon).ok());
  CHECK(Events(uncordon, "NodeUncordoned").size() == 1);
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
  CHECK(r.nodes.Find("node-a")->status.isolation_times_size() == 0);
}

TEST_CASE("NodeRegistry: cordon, uncordon and drain refuse bad input with a message") {
  Registry r;
  Effects fx;
  const std::string long_reason(1025, 'x');
  struct Row {
    const char* what;
    absl::Status status;
    absl::StatusCode code;
    const char* message;
  };
  const Row rows[] = {
      {"cordon: unknown node", r.nodes.Cordon("node-x", "", kT0, &fx), absl::StatusCode::kNotFound,
       "node node-x not found"},
      {"cordon: a reason over 1024 characters", r.nodes.Cordon("node-a", long_reason, kT0, &fx),
       absl::StatusCode::kInvalidArgument, "reason must be at most 1024 characters, got 1025"},
      {"uncordon: unknown node", r.nodes.Uncordon("node-x", kT0, &fx), absl::StatusCode::kNotFound,
       "node node-x not found"},
      {"drain: unknown node", r.nodes.Drain("node-x", "upgrade", 0, kT0, &fx).status(),
       absl::StatusCode::kNotFound, "node node-x not found"},
      {"drain: a reason is required", r.nodes.Drain("node-a", "", 0, kT0, &fx).status(),
       absl::StatusCode::kInvalidArgument,
       "reason is required: say why the node is drained, e.g. \"kernel upgrade\""},
      {"drain: a reason over 1024 characters",
       r.nodes.Drain("node-a", long_reason, 0, kT0, &fx).status(),
       absl::StatusCode::kInvalidArgument, "reason must be at most 1024 characters, got 1025"},
      {"drain: a negative deadline", r.nodes.Drain("node-a", "upgrade", -1, kT0, &fx).status(),
       absl::StatusCode::kInvalidArgument, nullptr},  // its message: see the [!mayfail] below
      {"drain: a deadline over 24h",
       r.nodes.Drain("node-a", "upgrade", 25 * 3'600'000LL, kT0, &fx).status(),
       absl::StatusCode::kInvalidArgument, "deadline must be 0s..24h, got 25h0m0s"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(row.status.code() == row.code);
    if (row.message != nullptr) CHECK(row.status.message() == row.message);
  }
  CHECK(fx.empty());  // refused input changes nothing
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
}

// BUG (scheduler/node_registry.cc:232-234, through common/time_util.cc:52): a negative drain
// deadline is refused with "deadline must be 0s..24h, got 0ms": FormatDuration prints every
// negative duration as 0ms, so the message names a value inside the range it asks for.
TEST_CASE("NodeRegistry: a negative drain deadline is named as given", "[!mayfail]") {
  Registry r;
  Effects fx;
  absl::StatusOr<std::string> drain = r.nodes.Drain("node-a", "upgrade", -5000, kT0, &fx);
  CHECK(drain.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(drain.status().message() != "deadline must be 0s..24h, got 0ms");
}

TEST_CASE("NodeRegistry: a cordon keeps what runs; uncordon lifts it") {
  Registry r;
  Effects fx;
  REQUIRE(r.nodes.Cordon("node-a", "bad fan", kT0, &fx).ok());
  CHECK(Events(fx, "NodeCordoned") == std::vector<std::string>{"cordoned by an operator: bad fan"});
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_CORDONED);
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-b"});
  CHECK(Names(r.nodes.IdleNodes()) == std::vector<std::string>{"node-b"});
  std::string why;
  CHECK(r.nodes.KeepsReplicas("node-a", &why));

  Effects twice;
  REQUIRE(r.nodes.Cordon("node-a", "", kT0, &twice).ok());
  CHECK(Events(twice, "NodeCordoned").empty());

  Effects up;
  REQUIRE(r.nodes.Uncordon("node-a", kT0, &up).ok());
  CHECK(Events(up, "NodeUncordoned") == std::vector<std::string>{"uncordoned by an operator"});
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);

  Effects idle;  // nothing held: no event
  REQUIRE(r.nodes.Uncordon("node-a", kT0, &idle).ok());
  CHECK(Events(idle, "NodeUncordoned").empty());
}

TEST_CASE("NodeRegistry: uncordoning a node whose checks fail asks it to run them again") {
  Registry r;
  Effects fx;
  r.nodes.ApplyCheckRun("node-a", Checks("periodic", false, kT0), kT0, &fx);
  Effects up;
  REQUIRE(r.nodes.Uncordon("node-a", kT0, &up).ok());
  CHECK(Events(up, "NodeUncordoned") ==
        std::vector<std::string>{"uncordoned by an operator; stays out until its checks pass"});
  REQUIRE(up.commands.size() == 1);
  CHECK(up.commands[0].first == "node-a");
  CHECK(up.commands[0].second.has_run_checks());
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_ISOLATED);
}

TEST_CASE("NodeRegistry: a drain finishes when Release leaves the node empty") {
  Registry r;
  r.nodes.Hold("node-a", {1, 100, 0});
  Effects fx;
  absl::StatusOr<std::string> why = r.nodes.Drain("node-a", "kernel upgrade", 60'000, kT0, &fx);
  REQUIRE(why.ok());
  CHECK(*why == "node node-a is draining: kernel upgrade");
  CHECK(Events(fx, "NodeDrainStarted").size() == 1);
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_DRAINING);
  CHECK(r.nodes.Find("node-a")->status.cordoned());
  CHECK(r.nodes.Find("node-a")->status.drain_deadline().seconds() == 60);
  std::string why_not;
  CHECK_FALSE(r.nodes.KeepsReplicas("node-a", &why_not));
  CHECK(why_not == "node node-a is DRAINING");

  Effects busy;
  r.nodes.FinishDrains(kT0, &busy);
  CHECK(Events(busy, "NodeDrained").empty());  // a replica still holds resources there

  r.nodes.Release("node-a", {1, 100, 0});
  Effects done;
  r.nodes.FinishDrains(kT0 + absl::Seconds(1), &done);
  CHECK(Events(done, "NodeDrained").size() == 1);
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_CORDONED);
  CHECK_FALSE(r.nodes.Find("node-a")->status.has_drain_deadline());
  Effects once;
  r.nodes.FinishDrains(kT0 + absl::Seconds(2), &once);
  CHECK(Events(once, "NodeDrained").empty());
}

TEST_CASE("NodeRegistry: Hold and Release keep usage; free nodes are the schedulable ones") {
  Registry r;
  r.nodes.Hold("node-a", {1.5, 1000, 0});
  r.nodes.Hold("node-a", {0.5, 24, 0});
  CHECK(r.nodes.UsageOf("node-a").replicas == 2);
  CHECK(r.nodes.UsageOf("node-a").used.cpu == 2.0);
  CHECK(r.nodes.UsageOf("node-a").used.memory_mb == 1024);
  CHECK(r.nodes.UsageOf("node-b").replicas == 0);

  const std::vector<NodeFree> free = r.nodes.FreeNodes();
  REQUIRE(free.size() == 2);
  CHECK(free[0].free.cpu == 2.0);  // Reg's 4 cpu, 4096 MiB less what is held
  CHECK(free[0].free.memory_mb == 3072);
  CHECK(free[1].free.memory_mb == 4096);
  CHECK(r.nodes.IdleNodes()[0].free.memory_mb == 4096);  // as if idle
  absl::StatusOr<v1::Node> view = r.nodes.View("node-a");
  REQUIRE(view.ok());
  CHECK(view->replicas() == 2);
  CHECK(view->free().memory_mb() == 3072);

  r.nodes.Release("node-a", {1.5, 1000, 0});
  r.nodes.Release("node-a", {0.5, 24, 0});
  CHECK(r.nodes.UsageOf("node-a").replicas == 0);
  CHECK(r.nodes.UsageOf("node-a").used.memory_mb == 0);
  r.nodes.Release("node-x", {1, 1, 0});  // nothing held there: ignored
  CHECK(r.nodes.UsageOf("node-x").replicas == 0);

  Effects fx;  // shutting down, isolated, lost: none is schedulable
  CHECK(r.nodes.MarkShuttingDown("node-a", kT0, &fx));
  CHECK_FALSE(r.nodes.MarkShuttingDown("node-a", kT0, &fx));  // known already
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-b"});
  r.nodes.ApplyCheckRun("node-b", Checks("periodic", false, kT0), kT0, &fx);
  CHECK(r.nodes.FreeNodes().empty());
  CHECK(r.nodes.IdleNodes().empty());
  r.nodes.Register(Reg("node-a"), kT0, &fx);  // registering again ends the shutdown
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-a"});
}

TEST_CASE("NodeRegistry: KeepsReplicas says why not") {
  Registry r;
  std::string why;
  CHECK(r.nodes.KeepsReplicas("node-a", &why));
  CHECK_FALSE(r.nodes.KeepsReplicas("node-x", &why));
  CHECK(why == "node node-x is unknown");
  Effects fx;
  r.nodes.ApplyCheckRun("node-a", Checks("periodic", false, kT0), kT0, &fx);
  CHECK_FALSE(r.nodes.KeepsReplicas("node-a", &why));
  CHECK(why == "node node-a is ISOLATED");
}

// DOUBTFUL (scheduler/node_registry.cc:352-354): a node whose agent is shutting down keeps no
// replicas, but the why-not text names only its derived state, READY, which says nothing of the
// shutdown: an in-place restart there moves with the reason "node node-a is READY".
TEST_CASE("NodeRegistry: KeepsReplicas names an agent's shutdown", "[!mayfail]") {
  Registry r;
  Effects fx;
  r.nodes.MarkShuttingDown("node-a", kT0, &fx);
  std::string why;
  CHECK_FALSE(r.nodes.KeepsReplicas("node-a", &why));
  CHECK(why.find("shutting down") != std::string::npos);
}

TEST_CASE("NodeRegistry: TakeChanged reports a change of state or connection once") {
  NodeRegistry nodes(Policy());
  CHECK(nodes.TakeChanged());  // a new registry: look at everything once
  CHECK_FALSE(nodes.TakeChanged());
  Effects fx;
  nodes.Register(Reg("node-a"), kT0, &fx);
  CHECK(nodes.TakeChanged());
  nodes.Hold("node-a", {1, 1, 0});
  nodes.Heartbeat("node-a", kT0 + absl::Seconds(1), &fx);
  CHECK_FALSE(nodes.TakeChanged());  // neither is a change of state
  REQUIRE(nodes.Cordon("node-a", "", kT0, &fx).ok());
  CHECK(nodes.TakeChanged());
  nodes.Disconnect("node-a", kT0, &fx);
  CHECK(nodes.TakeChanged());
  CHECK_FALSE(nodes.TakeChanged());
}

}  // namespace
}  // namespace trainctl::sched
