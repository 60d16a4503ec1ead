// Maintenance windows and what else holds a node, in the core with a fake clock: a replica that
// moves keeps off nodes whose window starts before its job's expected end and follows its job's
// BINPACK policy; a window's end (or clear) lifts only the cordon the window set, never an
// operator's; the window's drain says it was the window's; and an agent's window that an
// operator cleared does not come back while the agent's file stays the same.
#include <catch2/catch.hpp>

#include "common/time_util.h"
#include "scheduler/maintenance.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/maintenance_requests.h"

namespace trainctl::sched::testing {
namespace {

constexpr int64_t kHoldsMinute = 60'000;
constexpr int64_t kHoldsHour = 60 * kHoldsMinute;

// A one-replica job of `cpu` cores expected to run `expected_ms`.
v1::JobSpec Expected(double cpu, int64_t expected_ms) {
  v1::JobSpec spec = Spec(0, cpu);
  *spec.mutable_scheduling()->mutable_expected_duration() = MsToDuration(expected_ms);
  return spec;
}

// Drains `node` and confirms every stop it sent: the moved replicas' launches.
std::vector<v1::LaunchReplica> DrainAndStop(Fixture* f, const std::string& node, Effects* fx) {
  REQUIRE(
      f->core.DrainNode(node, "kernel upgrade", absl::Milliseconds(0), FromMs(f->now), fx).ok());
  std::vector<v1::LaunchReplica> launches;
  for (const v1::StopReplica& stop : Stops(*fx)) {
    v1::ReplicaExited exited;
    exited.set_run_id(stop.run_id());
    exited.set_exit_code(0);
    exited.set_stopped_by_request(true);
    Effects moved;
    f->core.ReplicaExited(node, exited, FromMs(++f->now), &moved);
    for (v1::LaunchReplica& l : Launches(moved)) launches.push_back(std::move(l));
    for (Event& e : moved.events) fx->events.push_back(std::move(e));
  }
  return launches;
}

v1::MaintenanceReport AgentReport(int64_t start_ms, const std::string& reason) {
  v1::MaintenanceReport report;
  v1::MaintenanceWindow& w = *report.mutable_window();
  *w.mutable_start_time() = MsToTimestamp(start_ms);
  *w.mutable_duration() = MsToDuration(kHoldsHour);
  w.set_reason(reason);
  return report;
}

}  // namespace

TEST_CASE(
    "maintenance: a moving replica keeps off nodes whose window starts before its job's "
    "expected end") {
  struct Row {
    const char* name;
    // Windows on node-b and node-c, from the job's start (0: none).
    int64_t window_b_ms;
    int64_t window_c_ms;
    // When node-a is drained, from the job's start.
    int64_t drain_at_ms;
    // Where the replica goes; "" when it finds no node and its job is re-dispatched.
    const char* to;
  };
  // The job runs 3 cpus for 2 h from its start on node-a; node-b and node-c are empty and
  // equally free, so a move with no window goes to node-b (ties by name).
  const Row rows[] = {
      {"no window: the first by name", 0, 0, kHoldsMinute, "node-b"},
      {"node-b's window starts before the expected end", 90 * kHoldsMinute, 0, kHoldsMinute,
       "node-c"},
      {"node-b's window starts after the expected end", 3 * kHoldsHour, 0, kHoldsMinute, "node-b"},
      {"the expected end counts from the job's start, not the move", 130 * kHoldsMinute, 0,
       90 * kHoldsMinute, "node-b"},
      {"only windowed nodes have room: the move waits in the queue", 90 * kHoldsMinute,
       100 * kHoldsMinute, kHoldsMinute, ""},
  };
  for (const Row& row : rows) {
    SECTION(row.name) {
      Fixture f;
      Effects fx;
      f.core.AgentRegistered(Reg("node-c"), FromMs(f.now), &fx);
      // node-b and node-c get their windows once the job runs on node-a.
      std::string id;
      std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(Expected(3, 2 * kHoldsHour), &id);
      REQUIRE(launches.size() == 1);
      REQUIRE(f.NodeOf(launches[0]) == "node-a");
      f.StartAll(launches);
      const int64_t started = f.now;
      if (row.window_b_ms > 0) {
        REQUIRE(f.core
                    .SetNodeMaintenance(
                        WindowReq("node-b", started + row.window_b_ms, kHoldsHour, "PSU swap"),
                        FromMs(f.now), &fx)
                    .ok());
      }
      if (row.window_c_ms > 0) {
        REQUIRE(f.core
                    .SetNodeMaintenance(
                        WindowReq("node-c", started + row.window_c_ms, kHoldsHour, "BIOS"),
                        FromMs(f.now), &fx)
                    .ok());
      }
      f.now = started + row.drain_at_ms;
      Effects moved;
      std::vector<v1::LaunchReplica> relaunched = DrainAndStop(&f, "node-a", &moved);
      if (std::string(row.to).empty()) {
        CHECK(relaunched.empty());
        const v1::Job job = f.Job(id);
        CHECK(job.state() == v1::JOB_STATE_QUEUED);
        CHECK(HasEvent(moved, "JobRedispatched", "only nodes whose maintenance window"));
        CHECK(HasEvent(moved, "JobRedispatched", "node-b from"));
        // Its new attempt waits for a node without a window, with the MAINTENANCE blocker.
        Effects pass;
        f.core.Schedule(FromMs(f.now), &pass);
        CHECK(Launches(pass).empty());
        CHECK_THAT(f.Job(id).queue_reason(), Catch::StartsWith("MAINTENANCE"));
      } else {
        REQUIRE(relaunched.size() == 1);
        CHECK(f.NodeOf(relaunched[0]) == row.to);
        CHECK(f.Job(id).replicas(0).moves() == 1);
      }
    }
  }
}

TEST_CASE("maintenance: a moving replica of a BINPACK job goes to the fullest node that fits") {
  struct Row {
    const char* name;
    v1::PlacementPolicy policy;
    const char* to;
  };
  // node-b has 4 free cpus, node-c 8: SPREAD takes the most free, BINPACK the least.
  const Row rows[] = {
      {"SPREAD: the most free node", v1::PLACEMENT_POLICY_SPREAD, "node-c"},
      {"BINPACK: the fullest node that fits", v1::PLACEMENT_POLICY_BINPACK, "node-b"},
  };
  for (const Row& row : rows) {
    SECTION(row.name) {
      Fixture f;
      Effects fx;
      f.core.AgentRegistered(Reg("node-c", 8), FromMs(f.now), &fx);
      REQUIRE(f.core.CordonNode("node-b", "", FromMs(f.now), &fx).ok());
      REQUIRE(f.core.CordonNode("node-c", "", FromMs(f.now), &fx).ok());
      v1::JobSpec spec = Spec(0, 2);
      spec.mutable_scheduling()->mutable_placement()->set_policy(row.policy);
      std::string id;
      std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(spec, &id);
      REQUIRE(launches.size() == 1);
      REQUIRE(f.NodeOf(launches[0]) == "node-a");
      f.StartAll(launches);
      REQUIRE(f.core.UncordonNode("node-b", FromMs(++f.now), &fx).ok());
      REQUIRE(f.core.UncordonNode("node-c", FromMs(++f.now), &fx).ok());
      Effects moved;
      std::vector<v1::LaunchReplica> relaunched = DrainAndStop(&f, "node-a", &moved);
      REQUIRE(relaunched.size() == 1);
      CHECK(f.NodeOf(relaunched[0]) == row.to);
    }
  }
}

TEST_CASE("maintenance: a window's end lifts only the cordon the window set") {
  enum class Operator { kNone, kCordonBefore, kCordonDuring, kDrainDuring, kUncordonDuring };
  struct Row {
    const char* name;
    Operator op;
    // Ended by its clear instead of its end.
    bool cleared;
    v1::NodeState after;
  };
  const Row rows[] = {
      {"no operator: uncordoned at the end", Operator::kNone, false, v1::NODE_STATE_READY},
      {"no operator: uncordoned by the clear", Operator::kNone, true, v1::NODE_STATE_READY},
      {"an operator's cordon before the window stays", Operator::kCordonBefore, false,
       v1::NODE_STATE_CORDONED},
      {"an operator's cordon during the window stays", Operator::kCordonDuring, false,
       v1::NODE_STATE_CORDONED},
      {"an operator's cordon during the window stays after a clear", Operator::kCordonDuring, true,
       v1::NODE_STATE_CORDONED},
      {"an operator's drain during the window stays", Operator::kDrainDuring, false,
       v1::NODE_STATE_CORDONED},
      {"an operator's uncordon during the window leaves nothing to lift", Operator::kUncordonDuring,
       false, v1::NODE_STATE_READY},
  };
  for (const Row& row : rows) {
    SECTION(row.name) {
      Fixture f;
      Effects fx;
      if (row.op == Operator::kCordonBefore) {
        REQUIRE(f.core.CordonNode("node-a", "ticket 4711", FromMs(f.now), &fx).ok());
      }
      REQUIRE(f.core
                  .SetNodeMaintenance(WindowReq("node-a", f.now + kHoldsHour, kHoldsHour, "BIOS"),
                                      FromMs(f.now), &fx)
                  .ok());
      f.now += kHoldsHour;
      Effects start;
      f.core.Tick(FromMs(f.now), &start);
      v1::Node during = *f.core.GetNode("node-a");
      REQUIRE(during.maintenance().drained());
      CHECK(during.maintenance().holds_cordon() == (row.op != Operator::kCordonBefore));
      CHECK(during.cordoned());
      Effects op;
      if (row.op == Operator::kCordonDuring) {
        REQUIRE(f.core.CordonNode("node-a", "ticket 4711", FromMs(++f.now), &op).ok());
        CHECK(HasEvent(op, "NodeCordoned", "stays cordoned after its maintenance window"));
      } else if (row.op == Operator::kDrainDuring) {
        REQUIRE(f.core.DrainNode("node-a", "disk swap", absl::Milliseconds(0), FromMs(++f.now), &op)
                    .ok());
      } else if (row.op == Operator::kUncordonDuring) {
        REQUIRE(f.core.UncordonNode("node-a", FromMs(++f.now), &op).ok());
      }
      if (row.op != Operator::kNone) {
        CHECK_FALSE(f.core.GetNode("node-a")->maintenance().holds_cordon());
      }
      Effects end;
      if (row.cleared) {
        REQUIRE(f.core.SetNodeMaintenance(ClearReq("node-a"), FromMs(++f.now), &end).ok());
      } else {
        f.now += kHoldsHour;
        f.core.Tick(FromMs(f.now), &end);
        CHECK(HasEvent(end, "NodeMaintenanceEnded"));
      }
      const v1::Node after = *f.core.GetNode("node-a");
      CHECK_FALSE(after.has_maintenance());
      CHECK(after.state() == row.after);
      CHECK(after.cordoned() == (row.after == v1::NODE_STATE_CORDONED));
      // The window lifts what it set, with its own words; nothing else is lifted.
      const bool lifted = row.op == Operator::kNone;
      CHECK(HasEvent(end, "NodeUncordoned", "its maintenance window") == lifted);
      CHECK(HasEvent(end, "NodeUncordoned", "operator") == false);
      if (row.after == v1::NODE_STATE_CORDONED && !row.cleared) {
        CHECK(HasEvent(end, "NodeMaintenanceEnded", "stays cordoned"));
      }
    }
  }
}

TEST_CASE("maintenance: the drain at a window's start names the window, not an operator") {
  Fixture f;
  Effects fx;
  const int64_t start = f.now + kHoldsHour;
  REQUIRE(f.core
              .SetNodeMaintenance(WindowReq("node-a", start, 2 * kHoldsHour, "BIOS update"),
                                  FromMs(f.now), &fx)
              .ok());
  std::string id;
  std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(Expected(3, 30 * kHoldsMinute), &id);
  REQUIRE(f.NodeOf(launches[0]) == "node-a");
  f.StartAll(launches);
  f.now = start;
  Effects drain;
  f.core.Tick(FromMs(f.now), &drain);
  const std::string span =
      absl::StrCat("from ", FormatRfc3339(start), " to ", FormatRfc3339(start + 2 * kHoldsHour));
  CHECK(HasEvent(drain, "NodeDrainStarted",
                 absl::StrCat("drained by its maintenance window ", span, ": BIOS update")));
  CHECK_FALSE(HasEvent(drain, "NodeDrainStarted", "operator"));
  CHECK(HasEvent(drain, "ReplicaStopping", "maintenance window " + span));
  const v1::Node node = *f.core.GetNode("node-a");
  CHECK_THAT(node.state_reason(), Catch::StartsWith("drained by its maintenance window"));
  CHECK_THAT(node.health_description(), Catch::Contains("BIOS update (maintenance window from"));
  // An operator's drain still says so.
  Effects op;
  REQUIRE(
      f.core.DrainNode("node-b", "kernel upgrade", absl::Milliseconds(0), FromMs(f.now), &op).ok());
  CHECK(HasEvent(op, "NodeDrainStarted", "drained by an operator: kernel upgrade"));
}

TEST_CASE(
    "maintenance: an agent's window is applied once: an operator's clear holds while the "
    "file is unchanged") {
  Fixture f;
  const v1::MaintenanceReport w1 = AgentReport(f.now + kHoldsHour, "vendor notice 42");
  v1::Register reg = Reg("node-c");
  *reg.mutable_maintenance() = w1;
  Effects fx;
  f.core.AgentRegistered(reg, FromMs(f.now), &fx);
  REQUIRE(f.core.GetNode("node-c")->maintenance().reason() == "vendor notice 42");
  CHECK(f.core.GetNode("node-c")->agent_maintenance().reason() == "vendor notice 42");
  REQUIRE(f.core.SetNodeMaintenance(ClearReq("node-c"), FromMs(++f.now), &fx).ok());

  struct Step {
    const char* name;
    // What the agent reports: at a registration, or with a heartbeat.
    std::optional<v1::MaintenanceReport> report;
    bool registers;
    // The node's window reason afterwards; "" for none.
    const char* window;
  };
  v1::MaintenanceReport w2 = AgentReport(f.now + 2 * kHoldsHour, "vendor notice 43");
  const Step steps[] = {
      {"the same window at the agent's next registration stays cleared", w1, true, ""},
      {"and again", w1, true, ""},
      {"a changed file is applied", w2, false, "vendor notice 43"},
      {"an emptied file clears it", v1::MaintenanceReport(), false, ""},
      {"the first window again is a change", w1, true, "vendor notice 42"},
  };
  for (const Step& step : steps) {
    INFO(step.name);
    Effects step_fx;
    if (step.registers) {
      v1::Register again = Reg("node-c");
      again.set_agent_instance("instance-2");
      *again.mutable_maintenance() = *step.report;
      f.core.AgentRegistered(again, FromMs(++f.now), &step_fx);
    } else {
      f.core.MaintenanceReported("node-c", *step.report, FromMs(++f.now), &step_fx);
    }
    const v1::Node node = *f.core.GetNode("node-c");
    CHECK(node.maintenance().reason() == step.window);
    CHECK(node.has_maintenance() == (std::string(step.window) != ""));
    CHECK(HasEvent(step_fx, "NodeMaintenanceScheduled") == (std::string(step.window) != ""));
  }

  // A window that ended does not come back when the agent registers with it again.
  f.now += 3 * kHoldsHour;
  Effects ended;
  f.core.Tick(FromMs(f.now), &ended);
  CHECK(HasEvent(ended, "NodeMaintenanceEnded"));
  v1::Register later = Reg("node-c");
  later.set_agent_instance("instance-3");
  *later.mutable_maintenance() = w1;
  Effects again;
  f.core.AgentRegistered(later, FromMs(++f.now), &again);
  CHECK_FALSE(f.core.GetNode("node-c")->has_maintenance());
}

}  // namespace trainctl::sched::testing
