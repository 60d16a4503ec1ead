// Maintenance windows in the core, with a fake clock: which jobs a window keeps off a node (by
// scheduling.expectedDuration, scheduling.timeout or the 24 h default), the queue reason of a job
// that only windowed nodes could take, clearing a window, the drain at its start and the return
// after its end, and windows reported by agents.
#include "scheduler/maintenance.h"

#include <catch2/catch.hpp>

#include "common/time_util.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/maintenance_requests.h"

namespace trainctl::sched::testing {
namespace {

constexpr int64_t kMinute = 60'000;
constexpr int64_t kHour = 60 * kMinute;

// A one-replica job of 3 cpus: only one fits on a node of the fixture (4 cpus each); with both
// nodes free it goes to node-a (ties by name).
v1::JobSpec Big(int64_t expected_ms, int64_t timeout_ms) {
  v1::JobSpec spec = Spec(0, 3);
  if (expected_ms > 0)
    *spec.mutable_scheduling()->mutable_expected_duration() = MsToDuration(expected_ms);
  if (timeout_ms > 0) *spec.mutable_scheduling()->mutable_timeout() = MsToDuration(timeout_ms);
  return spec;
}

bool HasEventType(const Effects& fx, const std::string& type, const std::string& node) {
  for (const Event& e : fx.events) {
    if (e.type == type && e.node == node) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("maintenance: a job avoids a node whose window starts before its expected end") {
  struct Row {
    const char* name;
    int64_t expected_ms;
    int64_t timeout_ms;
    int64_t window_in_ms;
    const char* node;
  };
  const Row rows[] = {
      {"expectedDuration ends before the window", 30 * kMinute, 0, kHour, "node-a"},
      {"expectedDuration runs into the window", 2 * kHour, 0, kHour, "node-b"},
      {"expectedDuration wins over timeout", 30 * kMinute, 5 * kHour, kHour, "node-a"},
      {"timeout when expectedDuration is unset", 0, 2 * kHour, kHour, "node-b"},
      {"timeout ends before the window", 0, 30 * kMinute, kHour, "node-a"},
      {"neither: a window within 24 h is avoided", 0, 0, 23 * kHour, "node-b"},
      {"neither: a window after 24 h is not", 0, 0, 25 * kHour, "node-a"},
      {"a window that already began keeps the node drained", 30 * kMinute, 0, 0, "node-b"},
  };
  for (const Row& row : rows) {
    SECTION(row.name) {
      Fixture f;
      Effects fx;
      REQUIRE(f.core
                  .SetNodeMaintenance(WindowReq("node-a", f.now + row.window_in_ms, kHour, "BIOS"),
                                      FromMs(f.now), &fx)
                  .ok());
      std::string id;
      std::vector<v1::LaunchReplica> launches =
          f.SubmitAndPlace(Big(row.expected_ms, row.timeout_ms), &id);
      REQUIRE(launches.size() == 1);
      CHECK(f.NodeOf(launches[0]) == row.node);
    }
  }
}

TEST_CASE("maintenance: ExpectedDuration is expectedDuration, else timeout, else 24 h") {
  CHECK(ExpectedDuration(Big(90 * kMinute, 5 * kHour)) == absl::Minutes(90));
  CHECK(ExpectedDuration(Big(0, 5 * kHour)) == absl::Hours(5));
  CHECK(ExpectedDuration(Big(0, 0)) == absl::Hours(24));
}

TEST_CASE(
    "maintenance: when only windowed nodes fit, the job waits and its reason names the window") {
  Fixture f;
  Effects fx;
  REQUIRE(f.core
              .SetNodeMaintenance(WindowReq("node-a", f.now + kHour, kHour, "BIOS update"),
                                  FromMs(f.now), &fx)
              .ok());
  REQUIRE(f.core
              .SetNodeMaintenance(WindowReq("node-b", f.now + 2 * kHour, kHour, "PSU swap"),
                                  FromMs(f.now), &fx)
              .ok());
  std::string id;
  CHECK(f.SubmitAndPlace(Big(3 * kHour, 0), &id).empty());
  const v1::Job job = f.core.View(*f.core.FindJob(id), FromMs(f.now));
  CHECK(job.state() == v1::JOB_STATE_QUEUED);
  CHECK_THAT(job.queue_reason(), Catch::Contains("MAINTENANCE"));
  CHECK_THAT(job.queue_reason(), Catch::Contains("node-a from"));
  CHECK_THAT(job.queue_reason(), Catch::Contains("BIOS update"));
  CHECK_THAT(job.queue_reason(), Catch::Contains("PSU swap"));
  bool blocker = false;
  for (const v1::Blocker& b : job.queue_status().blockers()) {
    blocker |= b.kind() == "MAINTENANCE" && b.message().find("node-b from") != std::string::npos;
  }
  CHECK(blocker);

  // Clearing a window lets it start there.
  Effects fx2;
  absl::StatusOr<v1::Node> cleared =
      f.core.SetNodeMaintenance(ClearReq("node-b"), FromMs(++f.now), &fx2);
  REQUIRE(cleared.ok());
  CHECK_FALSE(cleared->has_maintenance());
  CHECK(HasEventType(fx2, "NodeMaintenanceCleared", "node-b"));
  f.core.Schedule(FromMs(f.now), &fx2);
  std::vector<v1::LaunchReplica> launches = Launches(fx2);
  REQUIRE(launches.size() == 1);
  CHECK(f.NodeOf(launches[0]) == "node-b");
}

TEST_CASE("maintenance: every job that only a windowed node could take waits for the window") {
  // node-a runs a job that ends before node-b's window; two more, each too long for that window,
  // fit only on node-b (3 of its 4 cpus each). Both wait for the window, in one pass: what the
  // first would take on node-b does not count against the second.
  Fixture f;
  std::string running;
  const std::vector<v1::LaunchReplica> placed = f.SubmitAndPlace(Big(30 * kMinute, 0), &running);
  REQUIRE(placed.size() == 1);
  CHECK(f.NodeOf(placed[0]) == "node-a");
  Effects fx;
  REQUIRE(
      f.core
          .SetNodeMaintenance(WindowReq("node-b", f.now + kHour, kHour, "BIOS"), FromMs(f.now), &fx)
          .ok());
  std::string first, second;
  CHECK(f.SubmitAndPlace(Big(3 * kHour, 0), &first).empty());
  CHECK(f.SubmitAndPlace(Big(3 * kHour, 0), &second).empty());
  Effects pass;
  f.core.Schedule(FromMs(++f.now), &pass);
  CHECK(Launches(pass).empty());
  for (const std::string& id : {first, second}) {
    INFO(id);
    CHECK_THAT(f.core.FindJob(id)->queue_reason, Catch::Contains("MAINTENANCE"));
    CHECK_THAT(f.core.FindJob(id)->queue_reason, Catch::Contains("node-b from"));
  }
}

TEST_CASE("maintenance: the node is drained at the window's start and takes work after its end") {
  Fixture f;
  Effects fx;
  absl::StatusOr<v1::Node> set = f.core.SetNodeMaintenance(
      WindowReq("node-a", f.now + kHour, 2 * kHour, "BIOS update"), FromMs(f.now), &fx);
  REQUIRE(set.ok());
  CHECK(set->maintenance().source() == "operator");
  CHECK(set->state() == v1::NODE_STATE_READY);
  CHECK(HasEventType(fx, "NodeMaintenanceScheduled", "node-a"));
  // Expected to end before the window: placed on node-a.
  std::string id;
  std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(Big(30 * kMinute, 0), &id);
  REQUIRE(launches.size() == 1);
  REQUIRE(f.NodeOf(launches[0]) == "node-a");
  f.StartAll(launches);

  // Still running at the window's start: the node drains and the replica is stopped.
  f.now += kHour;
  Effects fx2;
  f.core.Tick(FromMs(f.now), &fx2);
  CHECK(f.core.GetNode("node-a")->state() == v1::NODE_STATE_DRAINING);
  CHECK(f.core.GetNode("node-a")->maintenance().drained());
  CHECK(HasEventType(fx2, "NodeDrainStarted", "node-a"));
  std::vector<v1::StopReplica> stops = Stops(fx2);
  REQUIRE(stops.size() == 1);
  v1::ReplicaExited stopped;
  stopped.set_run_id(stops[0].run_id());
  stopped.set_exit_code(0);
  stopped.set_stopped_by_request(true);
  Effects fx3;
  f.core.ReplicaExited("node-a", stopped, FromMs(++f.now), &fx3);
  REQUIRE(Launches(fx3).size() == 1);
  const v1::Replica r = f.Job(id).replicas(0);
  CHECK(r.node() == "node-b");
  CHECK(r.moves() == 1);
  CHECK(r.charged_restarts() == 0);

  // After the window: uncordoned, READY, the window gone.
  f.now += 2 * kHour;
  Effects fx4;
  f.core.Tick(FromMs(f.now), &fx4);
  absl::StatusOr<v1::Node> after = f.core.GetNode("node-a");
  CHECK(after->state() == v1::NODE_STATE_READY);
  CHECK_FALSE(after->cordoned());
  CHECK_FALSE(after->has_maintenance());
  CHECK(HasEventType(fx4, "NodeMaintenanceEnded", "node-a"));
}

TEST_CASE("maintenance: clearing a window that began uncordons the node") {
  Fixture f;
  Effects fx;
  REQUIRE(f.core
              .SetNodeMaintenance(WindowReq("node-a", f.now - kMinute, kHour, "firmware"),
                                  FromMs(f.now), &fx)
              .ok());
  CHECK(f.core.GetNode("node-a")->cordoned());
  Effects fx2;
  REQUIRE(f.core.SetNodeMaintenance(ClearReq("node-a"), FromMs(++f.now), &fx2).ok());
  CHECK_FALSE(f.core.GetNode("node-a")->cordoned());
  CHECK(f.core.GetNode("node-a")->state() == v1::NODE_STATE_READY);
}

TEST_CASE("maintenance: bad windows are refused with the field, and change nothing") {
  Fixture f;
  Effects fx;
  CHECK(f.core.SetNodeMaintenance(WindowReq("node-x", f.now, kHour, "r"), FromMs(f.now), &fx)
            .status()
            .code() == absl::StatusCode::kNotFound);
  auto message = [&](const v1::SetNodeMaintenanceRequest& req) {
    absl::Status s = f.core.SetNodeMaintenance(req, FromMs(f.now), &fx).status();
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    return std::string(s.message());
  };
  v1::SetNodeMaintenanceRequest no_start = WindowReq("node-a", f.now, kHour, "r");
  no_start.clear_start_time();
  CHECK_THAT(message(no_start), Catch::Contains("startTime"));
  CHECK_THAT(message(WindowReq("node-a", f.now, 10'000, "r")), Catch::Contains("duration"));
  CHECK_THAT(message(WindowReq("node-a", f.now, kHour, "")), Catch::Contains("reason"));
  v1::SetNodeMaintenanceRequest both = ClearReq("node-a");
  both.set_reason("x");
  CHECK_THAT(message(both), Catch::Contains("clear"));
  CHECK_FALSE(f.core.GetNode("node-a")->has_maintenance());
  CHECK(fx.events.empty());
}

TEST_CASE("maintenance: an agent's file sets and clears its window, never an operator's") {
  Fixture f;
  v1::MaintenanceReport report;
  v1::MaintenanceWindow& w = *report.mutable_window();
  *w.mutable_start_time() = MsToTimestamp(f.now + kHour);
  *w.mutable_duration() = MsToDuration(kHour);
  w.set_reason("vendor notice 42");
  Effects fx;
  f.core.MaintenanceReported("node-a", report, FromMs(f.now), &fx);
  CHECK(f.core.GetNode("node-a")->maintenance().source() == "agent");
  CHECK(f.core.GetNode("node-a")->maintenance().reason() == "vendor notice 42");
  Effects fx2;
  f.core.MaintenanceReported("node-a", v1::MaintenanceReport(), FromMs(++f.now), &fx2);
  CHECK_FALSE(f.core.GetNode("node-a")->has_maintenance());

  // Register carries the file's window too.
  v1::Register reg = Reg("node-c");
  *reg.mutable_maintenance() = report;
  Effects fx3;
  f.core.AgentRegistered(reg, FromMs(++f.now), &fx3);
  CHECK(f.core.GetNode("node-c")->maintenance().reason() == "vendor notice 42");

  // An operator's window stands until an operator changes it.
  Effects fx4;
  REQUIRE(
      f.core
          .SetNodeMaintenance(WindowReq("node-b", f.now + kHour, kHour, "ops"), FromMs(f.now), &fx4)
          .ok());
  f.core.MaintenanceReported("node-b", report, FromMs(++f.now), &fx4);
  f.core.MaintenanceReported("node-b", v1::MaintenanceReport(), FromMs(++f.now), &fx4);
  CHECK(f.core.GetNode("node-b")->maintenance().reason() == "ops");
}

}  // namespace trainctl::sched::testing
