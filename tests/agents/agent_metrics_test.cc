// AgentMetrics: launches and exits classed by how they ended, check results by item, and the
// gauges read from the agent at scrape time.
#include "agents/agent_metrics.h"

#include <catch2/catch.hpp>

#include "tests/common/prometheus_text.h"

namespace trainctl::agent {
namespace {

::trainctl::testing::Exposition ParsedAgentMetrics(const AgentMetrics& m) {
  absl::StatusOr<::trainctl::testing::Exposition> parsed =
      ::trainctl::testing::ParseExposition(m.Expose());
  INFO(parsed.status().ToString());
  REQUIRE(parsed.ok());
  return *std::move(parsed);
}

TEST_CASE("launches and exits are counted by how they ended", "[agent_metrics]") {
  AgentMetrics m;
  m.OnStarted();
  m.OnLaunchCarriedOut(absl::Milliseconds(20));
  struct Row {
    const char* what;
    v1::ReplicaExited exited;
    const char* family;
    const char* label;
    const char* value;
  };
  std::vector<Row> rows(9);
  rows[0] = {
      "a command that cannot start", {}, "trainctl_agent_launches_total", "result", "failed_user"};
  rows[0].exited.set_launch_failed(true);
  rows[0].exited.set_launch_error_is_user(true);
  rows[1] = {"a host error", {}, "trainctl_agent_launches_total", "result", "failed_host"};
  rows[1].exited.set_launch_failed(true);
  rows[2] = {
      "a failed preflight", {}, "trainctl_agent_launches_total", "result", "failed_preflight"};
  rows[2].exited.set_launch_failed(true);
  rows[2].exited.set_preflight_failed(true);
  rows[3] = {"a fenced launch", {}, "trainctl_agent_launches_total", "result", "refused_fenced"};
  rows[3].exited.set_launch_failed(true);
  rows[3].exited.set_fenced(true);
  rows[4] = {"exit 0", {}, "trainctl_agent_replica_exits_total", "outcome", "succeeded"};
  rows[4].exited.set_exit_code(0);
  rows[5] = {"exit 3", {}, "trainctl_agent_replica_exits_total", "outcome", "failed"};
  rows[5].exited.set_exit_code(3);
  rows[6] = {"SIGSEGV", {}, "trainctl_agent_replica_exits_total", "outcome", "signaled"};
  rows[6].exited.set_signal(11);
  rows[7] = {"an OOM kill", {}, "trainctl_agent_replica_exits_total", "outcome", "oom_killed"};
  rows[7].exited.set_signal(9);
  rows[7].exited.set_oom_killed(true);
  rows[8] = {"a stop asked for", {}, "trainctl_agent_replica_exits_total", "outcome", "stopped"};
  rows[8].exited.set_signal(15);
  rows[8].exited.set_stopped_by_request(true);
  for (const Row& row : rows) m.OnExited(row.exited);
  const ::trainctl::testing::Exposition e = ParsedAgentMetrics(m);
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(e.Value(row.family, {{row.label, row.value}}) == 1);
  }
  CHECK(e.Value("trainctl_agent_launches_total", {{"result", "started"}}) == 1);
  CHECK(e.Value("trainctl_agent_launch_seconds_count") == 1);
  CHECK(e.Value("trainctl_agent_launch_seconds_sum") == 0.02);
}

TEST_CASE("check results are counted by phase, item and result, gauges read the agent",
          "[agent_metrics]") {
  AgentMetrics m;
  int64_t runs = 3;
  m.Watch({[&runs] { return runs; }, [] { return int64_t{5}; }, [] { return true; }});
  v1::CheckRun run;
  run.set_phase("periodic");
  v1::CheckResult* ok = run.add_items();
  ok->set_item("disk-size root");
  ok->set_passed(true);
  v1::CheckResult* bad = run.add_items();
  bad->set_item("gpu-check");
  m.OnCheckRun(run);
  m.OnCheckRun(run);
  ::trainctl::testing::Exposition e = ParsedAgentMetrics(m);
  CHECK(e.Value("trainctl_agent_check_results_total",
                {{"phase", "periodic"}, {"item", "disk-size root"}, {"result", "passed"}}) == 2);
  CHECK(e.Value("trainctl_agent_check_results_total",
                {{"item", "gpu-check"}, {"result", "failed"}}) == 2);
  CHECK(e.Value("trainctl_agent_runs") == 3);
  CHECK(e.Value("trainctl_agent_reports_unacked") == 5);
  CHECK(e.Value("trainctl_agent_connected") == 1);
  runs = 0;
  CHECK(ParsedAgentMetrics(m).Value("trainctl_agent_runs") == 0);
}

}  // namespace
}  // namespace trainctl::agent
