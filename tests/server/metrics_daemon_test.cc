// DaemonMetrics: what a turn's tally and events move, nodes by state and health, reports in
// flight while their tokens live, and GET /metrics' authentication.
#include "server/metrics_daemon.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "server/authorizer.h"
#include "server/tokens.h"
#include "tests/common/prometheus_text.h"

namespace trainctl::server {
namespace {

using sched::Decision;
using sched::FailureClass;

testing::Exposition Parsed(const DaemonMetrics& m) {
  absl::StatusOr<testing::Exposition> parsed = testing::ParseExposition(m.Expose());
  INFO(parsed.status().ToString());
  REQUIRE(parsed.ok());
  return *std::move(parsed);
}

TEST_CASE("a turn's tally and events move the counters they name", "[metrics]") {
  DaemonMetrics m;
  sched::Tally tally;
  tally.failures = {{FailureClass::kTransient, Decision::kRestartReplica},
                    {FailureClass::kTransient, Decision::kRestartGang},
                    {FailureClass::kInternal, Decision::kRetryJob},
                    {FailureClass::kHostFault, Decision::kRedispatch},
                    {FailureClass::kUserError, Decision::kFailJob}};
  tally.ends = {{"vision", v1::JOB_STATE_FAILED}, {"vision", v1::JOB_STATE_SUCCEEDED}};
  tally.admissions = {{"vision", absl::Seconds(2)}, {"audio", absl::Milliseconds(5)}};
  tally.first_runs = {{"vision", absl::Seconds(3)}};
  tally.preempted = {{"audio", "reclaim"}, {"audio", "reclaim"}, {"vision", "priority"}};
  tally.preemption_ends = {{"audio", absl::Seconds(40)}};
  sched::Tally::FairShareSeen seen;
  seen.usage.project = "vision";
  seen.usage.gpu_seconds = 7200;
  seen.usage.memory_mb_seconds = 1024;
  seen.share = 0.25;
  tally.fair_shares = {seen};
  std::vector<sched::Event> events(2);
  events[0].type = "JobQueued";
  events[1].type = "JobQueued";
  m.OnCommitted(tally, events);
  m.OnCommit(0.004);
  m.OnAdmissionPass(0.0005);
  m.OnAdmissionPass(0.0015);
  m.OnTurn(0.01, 1'700'000'000'000);

  const testing::Exposition e = Parsed(m);
  CHECK(e.Value("trainctl_failures_total") == 5);
  CHECK(e.Value("trainctl_failures_total",
                {{"failure_class", "TRANSIENT"}, {"decision", "RESTART_GANG"}}) == 1);
  CHECK(e.Value("trainctl_replica_restarts_total", {{"failure_class", "TRANSIENT"}}) == 2);
  CHECK(e.Value("trainctl_job_retries_total", {{"failure_class", "INTERNAL"}}) == 1);
  CHECK(e.Value("trainctl_job_retries_total", {{"failure_class", "HOST_FAULT"}}) == 1);
  CHECK(e.Value("trainctl_job_retries_total") == 2);
  CHECK(e.Value("trainctl_jobs_ended_total", {{"project", "vision"}, {"state", "FAILED"}}) == 1);
  CHECK(e.Value("trainctl_events_total", {{"type", "JobQueued"}}) == 2);
  CHECK(e.Value("trainctl_job_admission_wait_seconds_bucket",
                {{"project", "vision"}, {"le", "1"}}) == 0);
  CHECK(e.Value("trainctl_job_admission_wait_seconds_bucket",
                {{"project", "vision"}, {"le", "5"}}) == 1);
  CHECK(e.Value("trainctl_job_admission_wait_seconds_sum", {{"project", "audio"}}) == 0.005);
  CHECK(e.Value("trainctl_job_submit_to_running_seconds_count") == 1);
  CHECK(e.Value("trainctl_preemptions_total", {{"project", "audio"}, {"reason", "reclaim"}}) == 2);
  CHECK(e.Value("trainctl_preemptions_total", {{"project", "vision"}, {"reason", "priority"}}) ==
        1);
  CHECK(e.Value("trainctl_preemption_seconds_sum", {{"project", "audio"}}) == 40);
  CHECK(e.Value("trainctl_project_fair_share", {{"project", "vision"}}) == 0.25);
  CHECK(e.Value("trainctl_project_usage_seconds", {{"project", "vision"}, {"resource", "gpu"}}) ==
        7200);
  CHECK(e.Value("trainctl_project_usage_seconds",
                {{"project", "vision"}, {"resource", "memory_mb"}}) == 1024);
  CHECK(e.Value("trainctl_sqlite_commit_seconds_count") == 1);
  CHECK(e.Value("trainctl_admission_pass_seconds_count") == 2);
  CHECK(e.Value("trainctl_admission_pass_seconds_sum") == Approx(0.002));
  CHECK(e.Value("trainctl_reconcile_turn_seconds_sum") == 0.01);
  CHECK(e.Value("trainctl_reconcile_last_turn_timestamp_seconds") == 1'700'000'000);
}

TEST_CASE("nodes are counted by state and health, reports while their tokens live", "[metrics]") {
  DaemonMetrics m;
  std::map<std::string, sched::Node> nodes;
  for (const char* name : {"a", "b", "c"}) {
    sched::Node& n = nodes[name];
    n.name = name;
    n.connected = true;
    n.status.state = v1::NODE_STATE_READY;
    n.status.health = v1::NODE_HEALTH_HEALTHY;
  }
  nodes["c"].connected = false;
  nodes["c"].status.state = v1::NODE_STATE_LOST;
  nodes["c"].status.health = v1::NODE_HEALTH_UNKNOWN;
  m.OnNodes(nodes);
  std::shared_ptr<void> first = m.ReportInFlight();
  std::shared_ptr<void> copy = first;
  std::shared_ptr<void> second = m.ReportInFlight();
  m.SetWritesRefused(true);
  m.SetLeaderEpoch(7);

  testing::Exposition e = Parsed(m);
  CHECK(e.Value("trainctl_leader_epoch") == 7);
  CHECK(e.Value("trainctl_nodes", {{"state", "READY"}, {"health", "HEALTHY"}}) == 2);
  CHECK(e.Value("trainctl_nodes", {{"state", "LOST"}, {"health", "UNKNOWN"}}) == 1);
  CHECK(e.Value("trainctl_nodes_connected") == 2);
  CHECK(e.Value("trainctl_agent_reports_in_flight") == 2);
  CHECK(e.Value("trainctl_writes_refused") == 1);

  // A node deleted leaves no series behind; a report is done once every copy is gone.
  nodes.erase("c");
  m.OnNodes(nodes);
  first.reset();
  second.reset();
  e = Parsed(m);
  CHECK(e.Value("trainctl_nodes", {{"state", "LOST"}}) == std::nullopt);
  CHECK(e.Value("trainctl_agent_reports_in_flight") == 1);
  copy.reset();
  CHECK(Parsed(m).Value("trainctl_agent_reports_in_flight") == 0);
}

TEST_CASE("GET /metrics needs a valid token only when authentication is on", "[metrics][auth]") {
  DaemonMetrics m;
  const Authorizer off(false, nullptr, [] { return int64_t{0}; });
  CHECK(MetricsEndpoint(&off, &m)(std::nullopt).ok());
  TokenRegistry tokens;
  const Authorizer on(true, &tokens, [] { return int64_t{0}; });
  const MetricsHandler handler = MetricsEndpoint(&on, &m);
  absl::StatusOr<std::string> none = handler(std::nullopt);
  CHECK(none.status().code() == absl::StatusCode::kUnauthenticated);
  CHECK(absl::StartsWith(none.status().message(), "GET /metrics: "));
  CHECK(handler(std::string("Bearer tct_nope")).status().code() ==
        absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace trainctl::server
