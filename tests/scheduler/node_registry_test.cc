// NodeRegistry on its own (R11-R18): registration, the lost timeout and the restore grace, check
// runs, operator holds, what replicas hold on each node, with a fake clock.
#include "scheduler/node_registry.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using testing::Reg;

constexpr int64_t kNodeLostMs = 15'000;

NodePolicy Policy() {
  NodePolicy p;
  p.lost_timeout = absl::Milliseconds(kNodeLostMs);
  p.flap_threshold = 3;
  p.flap_window = absl::Hours(1);
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

// The reason of the one event of `type` in `fx`: "" when there is none, "2 events" for more.
std::string EventOf(const Effects& fx, const std::string& type) {
  std::vector<std::string> reasons;
  for (const Event& e : fx.events) {
    if (e.type == type) reasons.push_back(e.reason);
  }
  if (reasons.size() > 1) return absl::StrCat(reasons.size(), " events");
  return reasons.empty() ? "" : reasons[0];
}

std::vector<std::string> Names(const std::vector<NodeFree>& nodes) {
  std::vector<std::string> out;
  for (const NodeFree& n : nodes) out.push_back(n.name);
  return out;
}

v1::NodeState StateOf(const NodeRegistry& nodes, const std::string& name) {
  return nodes.Find(name)->status.state;
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
  // Why replicas on `name` may not restart in place; "" when they may.
  std::string WhyNot(const std::string& name) const {
    std::string why;
    return nodes.KeepsReplicas(name, &why) ? "" : why;
  }
  const NodeStatus& Status(const std::string& name) const { return nodes.Find(name)->status; }
};

TEST_CASE("NodeRegistry: register, reconnect and a restarted agent are told apart") {
  NodeRegistry nodes(Policy());
  Effects fx;
  nodes.Register(Reg("node-a", 8, 8192, 2), kT0, &fx);
  CHECK(EventOf(fx, "NodeRegistered") ==
        "agent registered with 8 cpu, 8192 MiB, 2 gpus allocatable; reports 0 runs");
  const Node* a = nodes.Find("node-a");
  CHECK(a->connected);
  CHECK(a->status.state == v1::NODE_STATE_READY);
  CHECK(a->status.health == v1::NODE_HEALTH_UNKNOWN);  // no check ran yet
  CHECK(a->status.state_reason == "its agent registered");

  Effects again;
  nodes.Register(Reg("node-a", 8, 8192, 2), kT0 + absl::Seconds(1), &again);
  CHECK(EventOf(again, "NodeReconnected").rfind("agent reconnected with", 0) == 0);

  v1::Register restarted = Reg("node-a", 8, 8192, 2);
  restarted.set_agent_instance("instance-2");
  Effects third;
  nodes.Register(restarted, kT0 + absl::Seconds(2), &third);
  CHECK(EventOf(third, "NodeReconnected").rfind("agent registered with", 0) == 0);
}

TEST_CASE("NodeRegistry: a disconnected node takes no work and keeps no replicas") {
  Registry r;
  Effects fx;
  r.nodes.Disconnect("node-a", kT0, &fx);
  CHECK(EventOf(fx, "NodeDisconnected") != "");
  CHECK(r.nodes.TakeChanged());
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-b"});
  CHECK(r.WhyNot("node-a") == "node node-a is READY and disconnected");
  CHECK(r.WhyNot("node-x") == "node node-x is unknown");

  Effects twice;
  r.nodes.Disconnect("node-a", kT0, &twice);
  r.nodes.Disconnect("node-x", kT0, &twice);  // unknown: ignored
  CHECK(twice.empty());
}

TEST_CASE("NodeRegistry: a node not heard from for the lost timeout is LOST, once") {
  Registry r;
  Effects fx;
  r.nodes.Heartbeat("node-b", kT0 + absl::Seconds(10), &fx);
  CHECK(r.nodes.DetectLost(kT0 + absl::Milliseconds(kNodeLostMs - 1), &fx).empty());

  const std::vector<NodeRegistry::Lost> lost =
      r.nodes.DetectLost(kT0 + absl::Milliseconds(kNodeLostMs), &fx);
  REQUIRE(lost.size() == 1);  // node-b was heard from at +10s
  CHECK(lost[0].node == "node-a");
  CHECK(lost[0].why == "node node-a was lost: no heartbeat for 15s (lost timeout 15s)");
  CHECK(EventOf(fx, "NodeLost") ==
        "no heartbeat for 15s (lost timeout 15s); its replicas move to other nodes in 3s, once "
        "its agent has fenced them (it stops them after 12s without word from the scheduler)");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_LOST);
  CHECK(r.Status("node-a").health == v1::NODE_HEALTH_UNKNOWN);
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-b"});

  Effects later;
  CHECK(r.nodes.DetectLost(kT0 + absl::Seconds(20), &later).empty());      // reported once
  CHECK(r.nodes.DetectLost(kT0 + absl::Seconds(25), &later).size() == 1);  // node-b now
}

TEST_CASE("NodeRegistry: after a restore the first check counts as a heartbeat") {
  auto stored = [](const std::string& name, v1::NodeState state) {
    Node n;
    n.name = name;
    n.connected = true;  // restored nodes start disconnected whatever was stored
    n.last_heartbeat = absl::FromUnixMillis(1000);  // long before the restart
    n.status.state = state;
    return n;
  };
  NodeRegistry nodes(Policy());
  nodes.Restore({stored("node-a", v1::NODE_STATE_READY), stored("node-gone", v1::NODE_STATE_LOST),
                 stored("node-d", v1::NODE_STATE_DRAINING)});
  CHECK_FALSE(nodes.Find("node-a")->connected);
  CHECK(nodes.Find("node-gone")->lost);
  CHECK(nodes.Find("node-d")->draining);
  CHECK(nodes.TakeChanged());

  Effects fx;
  const absl::Time first = kT0 + absl::Hours(1);
  CHECK(nodes.DetectLost(first, &fx).empty());
  CHECK(nodes.DetectLost(first + absl::Milliseconds(kNodeLostMs - 1), &fx).empty());
  const std::vector<NodeRegistry::Lost> lost =
      nodes.DetectLost(first + absl::Milliseconds(kNodeLostMs), &fx);
  REQUIRE(lost.size() == 2);  // node-gone was LOST already
  CHECK(lost[0].node == "node-a");
  CHECK(lost[1].node == "node-d");
  CHECK(StateOf(nodes, "node-d") == v1::NODE_STATE_LOST);
  CHECK_FALSE(nodes.Find("node-d")->draining);  // a lost node's drain is over
}

TEST_CASE("NodeRegistry: a LOST node is back when heard from, and its stale runs are stopped") {
  Registry r;
  Effects fx;
  r.nodes.Disconnect("node-b", kT0, &fx);
  REQUIRE(r.nodes.DetectLost(kT0 + absl::Seconds(15), &fx).size() == 2);
  r.nodes.AddStaleRun("node-a", "j-1/1/chief-0/0");
  r.nodes.AddStaleRun("node-b", "j-2/1/chief-0/0");
  r.nodes.AddStaleRun("node-x", "j-1/1/chief-0/0");  // unknown node: ignored

  Effects back;
  r.nodes.Heartbeat("node-a", kT0 + absl::Seconds(16), &back);
  CHECK(EventOf(back, "NodeReturned") != "");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
  CHECK(r.Status("node-a").state_reason == "its agent is heard from again");
  REQUIRE(back.commands.size() == 1);
  CHECK(back.commands[0].node == "node-a");
  CHECK(back.commands[0].message.stop().run_id() == "j-1/1/chief-0/0");
  CHECK(r.nodes.Find("node-a")->stale_runs.empty());

  Effects again;
  r.nodes.Heartbeat("node-a", kT0 + absl::Seconds(17), &again);
  CHECK(again.empty());  // not lost: nothing to say

  // node-b's stream closed: only a new registration brings it back, and the runs it reports
  // are the core's to reconcile, so the registry stops nothing there.
  r.nodes.Heartbeat("node-b", kT0 + absl::Seconds(16), &fx);
  CHECK(StateOf(r.nodes, "node-b") == v1::NODE_STATE_LOST);
  Effects reg;
  r.nodes.Register(Reg("node-b"), kT0 + absl::Seconds(17), &reg);
  CHECK(EventOf(reg, "NodeReturned") != "");
  CHECK(StateOf(r.nodes, "node-b") == v1::NODE_STATE_READY);
  CHECK(reg.commands.empty());
  CHECK(r.nodes.Find("node-b")->stale_runs.empty());
}

TEST_CASE("NodeRegistry: a failing check run isolates a node, a passing one brings it back") {
  Registry r;
  Effects fx;
  const NodeRegistry::CheckOutcome out =
      r.nodes.ApplyCheckRun("node-a", Checks("periodic", false, kT0), kT0, &fx);
  CHECK(out.isolated);
  CHECK(EventOf(fx, "NodeIsolated") ==
        "periodic check failed: item disk-size root failed: 3.1 GB "
        "free, needs > 32 GB; no new work until its checks pass again");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_ISOLATED);
  CHECK(r.Status("node-a").health == v1::NODE_HEALTH_UNHEALTHY);
  CHECK(Names(r.nodes.FreeNodes()) == std::vector<std::string>{"node-b"});
  CHECK(r.nodes.TakeChanged());
  CHECK(r.WhyNot("node-a") == "node node-a is ISOLATED");

  Effects up;  // an operator cannot lift failing checks: the node runs them again at once
  REQUIRE(r.nodes.Uncordon("node-a", kT0, &up).ok());
  CHECK(EventOf(up, "NodeUncordoned") ==
        "uncordoned by an operator; stays out until its checks pass");
  REQUIRE(up.commands.size() == 1);
  CHECK(up.commands[0].message.has_run_checks());
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_ISOLATED);

  Effects again;  // still failing: a failed check, not a new isolation
  CHECK(r.nodes
            .ApplyCheckRun("node-a", Checks("periodic", false, kT0 + absl::Seconds(1)),
                           kT0 + absl::Seconds(1), &again)
            .isolated);
  CHECK(EventOf(again, "NodeIsolated").empty());
  CHECK(EventOf(again, "NodeCheckFailed") != "");

  Effects healthy;
  CHECK_FALSE(r.nodes
                  .ApplyCheckRun("node-a", Checks("periodic", true, kT0 + absl::Seconds(2)),
                                 kT0 + absl::Seconds(2), &healthy)
                  .isolated);
  CHECK(EventOf(healthy, "NodeHealthy") == "its periodic check passed again");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
  CHECK(r.Status("node-a").health == v1::NODE_HEALTH_HEALTHY);

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
    CHECK(EventOf(fx, "NodeFlapping").empty() == (i < 2));
    t += absl::Minutes(1);
    r.nodes.ApplyCheckRun("node-a", Checks("periodic", true, t), t, &fx);
    t += absl::Minutes(1);
  }
  Effects fx;
  r.nodes.ApplyCheckRun("node-a", Checks("periodic", true, t), t, &fx);
  // Its checks pass, but it stays out until an operator lifts the hold.
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_ISOLATED);
  CHECK(r.Status("node-a").state_reason ==
        "flapping: its checks pass again, but it stays out until an operator runs `trainctl "
        "node uncordon node-a`");

  Effects uncordon;
  REQUIRE(r.nodes.Uncordon("node-a", t, &uncordon).ok());
  CHECK(EventOf(uncordon, "NodeUncordoned") != "");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
  CHECK(r.Status("node-a").isolation_times.empty());
}

TEST_CASE("NodeRegistry: cordon, uncordon and drain refuse bad input with a message") {
  Registry r;
  Effects fx;
  const std::string long_reason(1025, 'x');
  struct Row {
    const char* what;
    absl::Status got, want;
  };
  const Row rows[] = {
      {"cordon: unknown node", r.nodes.Cordon("node-x", "", kT0, &fx),
       absl::NotFoundError("node node-x not found")},
      {"cordon: a reason over 1024 characters", r.nodes.Cordon("node-a", long_reason, kT0, &fx),
       absl::InvalidArgumentError("reason must be at most 1024 characters, got 1025")},
      {"uncordon: unknown node", r.nodes.Uncordon("node-x", kT0, &fx),
       absl::NotFoundError("node node-x not found")},
      {"drain: unknown node",
       r.nodes.Drain("node-x", "upgrade", absl::ZeroDuration(), kT0, &fx).status(),
       absl::NotFoundError("node node-x not found")},
      {"drain: a reason is required",
       r.nodes.Drain("node-a", "", absl::ZeroDuration(), kT0, &fx).status(),
       absl::InvalidArgumentError(
           "reason is required: say why the node is drained, e.g. \"kernel upgrade\"")},
      {"drain: a reason over 1024 characters",
       r.nodes.Drain("node-a", long_reason, absl::ZeroDuration(), kT0, &fx).status(),
       absl::InvalidArgumentError("reason must be at most 1024 characters, got 1025")},
      {"drain: a deadline over 24h",
       r.nodes.Drain("node-a", "upgrade", absl::Hours(25), kT0, &fx).status(),
       absl::InvalidArgumentError("deadline must be 0s..24h, got 25h0m0s")},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(row.got == row.want);
  }
  CHECK(fx.empty());  // refused input changes nothing
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);
}

// A negative drain deadline is refused with the value as given, not one inside the range.
TEST_CASE("NodeRegistry: a negative drain deadline is named as given") {
  Registry r;
  Effects fx;
  absl::StatusOr<std::string> drain =
      r.nodes.Drain("node-a", "upgrade", absl::Milliseconds(-5000), kT0, &fx);
  CHECK(drain.status().code() == absl::StatusCode::kInvalidArgument);  // refused, as it should be
  CHECK(drain.status().message() == "deadline must be 0s..24h, got -5s");
}

TEST_CASE("NodeRegistry: a cordon keeps what runs, and uncordon lifts it") {
  Registry r;
  Effects fx;
  REQUIRE(r.nodes.Cordon("node-a", "bad fan", kT0, &fx).ok());
  CHECK(EventOf(fx, "NodeCordoned") == "cordoned by an operator: bad fan");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_CORDONED);
  CHECK(Names(r.nodes.IdleNodes()) == std::vector<std::string>{"node-b"});
  CHECK(r.WhyNot("node-a").empty());  // what runs there stays

  Effects twice;
  REQUIRE(r.nodes.Cordon("node-a", "", kT0, &twice).ok());
  CHECK(EventOf(twice, "NodeCordoned").empty());

  Effects up;
  REQUIRE(r.nodes.Uncordon("node-a", kT0, &up).ok());
  CHECK(EventOf(up, "NodeUncordoned") == "uncordoned by an operator");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_READY);

  Effects idle;  // nothing held: no event
  REQUIRE(r.nodes.Uncordon("node-a", kT0, &idle).ok());
  CHECK(EventOf(idle, "NodeUncordoned").empty());
}

TEST_CASE("NodeRegistry: a drain finishes when Release leaves the node empty") {
  Registry r;
  r.nodes.book().Hold("node-a", {1, 100, 0});
  Effects fx;
  absl::StatusOr<std::string> why =
      r.nodes.Drain("node-a", "kernel upgrade", absl::Minutes(1), kT0, &fx);
  REQUIRE(why.ok());
  CHECK(*why == "node node-a is draining: kernel upgrade");
  CHECK(EventOf(fx, "NodeDrainStarted") != "");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_DRAINING);
  CHECK(r.Status("node-a").cordoned);
  CHECK(r.Status("node-a").drain_deadline == absl::Seconds(60));
  CHECK(r.WhyNot("node-a") == "node node-a is DRAINING");

  Effects busy;
  r.nodes.FinishDrains(kT0, &busy);
  CHECK(EventOf(busy, "NodeDrained").empty());  // a replica still holds resources there

  r.nodes.book().Release("node-a", {1, 100, 0});
  Effects done;
  r.nodes.FinishDrains(kT0 + absl::Seconds(1), &done);
  CHECK(EventOf(done, "NodeDrained") != "");
  CHECK(StateOf(r.nodes, "node-a") == v1::NODE_STATE_CORDONED);
  CHECK(r.Status("node-a").drain_deadline == absl::ZeroDuration());
  Effects once;
  r.nodes.FinishDrains(kT0 + absl::Seconds(2), &once);
  CHECK(EventOf(once, "NodeDrained").empty());
}

TEST_CASE("NodeRegistry: Hold and Release keep usage, and only schedulable nodes are free") {
  Registry r;
  r.nodes.book().Hold("node-a", {1.5, 1000, 0});
  r.nodes.book().Hold("node-a", {0.5, 24, 0});
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
  CHECK(r.nodes.View("node-a")->free().memory_mb() == 3072);

  r.nodes.book().Release("node-a", {1.5, 1000, 0});
  r.nodes.book().Release("node-a", {0.5, 24, 0});
  CHECK(r.nodes.UsageOf("node-a").replicas == 0);
  CHECK(r.nodes.UsageOf("node-a").used.memory_mb == 0);
  // FreeNodes keeps its answer between calls and follows each release.
  CHECK(r.nodes.FreeNodes()[0].free.memory_mb == 4096);
  r.nodes.book().Hold("node-b", {1, 96, 0});
  CHECK(r.nodes.FreeNodes()[1].free.memory_mb == 4000);
  r.nodes.book().Release("node-b", {1, 96, 0});
  r.nodes.book().Release("node-x", {1, 1, 0});  // nothing held there: ignored
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

TEST_CASE(
    "NodeRegistry: each node has a pool of its own, and free ports are offered to placement") {
  NodePolicy policy = Policy();
  policy.ports = PortRange{30000, 30099};
  NodeRegistry nodes(policy);
  Effects fx;
  nodes.Register(Reg("node-a"), kT0, &fx);
  nodes.Register(Reg("node-b"), kT0, &fx);
  CHECK(nodes.book().PortsOf("node-a") == nullptr);  // created on first use
  CHECK(nodes.FreeNodes()[0].free_ports == 100);

  const uint64_t version = nodes.version();
  CHECK(nodes.book().AllocatePort("node-a") == std::optional<int32_t>(30000));
  CHECK(nodes.book().AllocatePort("node-a") == std::optional<int32_t>(30001));
  CHECK(nodes.book().AllocatePort("node-b") ==
        std::optional<int32_t>(30000));                    // another node's pool
  CHECK(nodes.version() > version);                        // what FreeNodes returns changed
  CHECK_FALSE(nodes.book().ReservePort("node-a", 30001));  // in use
  CHECK(nodes.book().ReservePort("node-a", 30050));
  CHECK(nodes.book().RestorePort("node-b", 30070));
  const std::vector<NodeFree> free = nodes.FreeNodes();
  REQUIRE(free.size() == 2);
  CHECK(free[0].free_ports == 97);
  CHECK(free[1].free_ports == 98);
  CHECK(nodes.IdleNodes()[0].free_ports == 100);  // as if idle

  nodes.book().ReleasePort("node-a", 30000);
  nodes.book().ReleasePort("node-x", 30000);  // no pool there: ignored
  CHECK(nodes.book().PortsOf("node-a")->used() == 2);
  CHECK(nodes.FreeNodes()[0].free_ports == 98);
  CHECK(nodes.book().PortsOf("node-a")->range() == PortRange{30000, 30099});
  CHECK(nodes.book().PortsOf("node-x") == nullptr);
  CHECK(nodes.book().AllocatePort("node-b") ==
        std::optional<int32_t>(30071));  // after the restored one
}

// A node whose agent is shutting down keeps no replicas, though it is still READY: the reason a
// restart moves names the shutdown.
TEST_CASE("NodeRegistry: KeepsReplicas names an agent's shutdown") {
  Registry r;
  Effects fx;
  r.nodes.MarkShuttingDown("node-a", kT0, &fx);
  CHECK(r.WhyNot("node-a").find("shutting down") != std::string::npos);
}

TEST_CASE("NodeRegistry: TakeChanged reports a change of state or connection once") {
  NodeRegistry nodes(Policy());
  CHECK(nodes.TakeChanged());  // a new registry: look at everything once
  CHECK_FALSE(nodes.TakeChanged());
  Effects fx;
  nodes.Register(Reg("node-a"), kT0, &fx);
  CHECK(nodes.TakeChanged());
  nodes.book().Hold("node-a", {1, 1, 0});
  nodes.Heartbeat("node-a", kT0 + absl::Seconds(1), &fx);
  CHECK_FALSE(nodes.TakeChanged());  // neither is a change of state
  REQUIRE(nodes.Cordon("node-a", "", kT0, &fx).ok());
  CHECK(nodes.TakeChanged());
  nodes.Disconnect("node-a", kT0, &fx);
  CHECK(nodes.TakeChanged());
  CHECK_FALSE(nodes.TakeChanged());
}

TEST_CASE(
    "NodeRegistry: a pass's index is kept between passes and follows holds, its own takes and "
    "node changes") {
  Registry r;
  FreeIndex& index = r.nodes.PassIndex();
  REQUIRE(Names(index.nodes()) == std::vector<std::string>{"node-a", "node-b"});
  auto memory = [&index](const std::string& name) {
    return index.nodes()[index.IndexOf(name)].free.memory_mb;
  };
  // A pass takes room as it places a gang; its starts that were never held are given back.
  const ReplicaDemand worker{"worker-0", {1, 1000, 0}, 0};
  REQUIRE(index.PlaceGang({worker}).value() == std::vector<std::string>{"node-a"});
  CHECK(memory("node-a") == 3096);
  CHECK(&r.nodes.PassIndex() == &index);  // kept, not rebuilt
  CHECK(memory("node-a") == 4096);
  // What replicas hold is followed.
  r.nodes.book().Hold("node-a", {1, 96, 0});
  r.nodes.PassIndex();
  CHECK(memory("node-a") == 4000);
  CHECK(memory("node-b") == 4096);
  CHECK(index.nodes()[index.Choose(worker)].name == "node-b");  // the most free
  r.nodes.book().Release("node-a", {1, 96, 0});
  CHECK(r.nodes.PassIndex().nodes()[0].free.memory_mb == 4096);
  // A node joining or leaving the schedulable set rebuilds it.
  Effects fx;
  r.nodes.Register(Reg("node-c"), kT0, &fx);
  CHECK(Names(r.nodes.PassIndex().nodes()) ==
        std::vector<std::string>{"node-a", "node-b", "node-c"});
  r.nodes.book().Hold("node-c", {2, 2048, 0});
  REQUIRE(r.nodes.MarkShuttingDown("node-a", kT0, &fx));
  FreeIndex& after = r.nodes.PassIndex();
  CHECK(Names(after.nodes()) == std::vector<std::string>{"node-b", "node-c"});
  CHECK(after.nodes()[after.IndexOf("node-c")].free.memory_mb == 2048);
  CHECK(after.IndexOf("node-a") == -1);
}

}  // namespace
}  // namespace trainctl::sched
