// Prometheus metrics end to end: trainctld's GET /metrics (on its REST port) and an agent's
// (--metrics-listen) scraped before and after a run where one job succeeds after a transient
// crash and one fails with a user error; the counters move by exactly what happened, with the
// right labels, and every scrape parses as the text format (tests/common/prometheus_text.h).
// With TLS, trainctld's metrics need a token.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "tests/common/prometheus_text.h"
#include "tests/integration/http_client.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// GET /metrics from HOST:PORT, parsed; REQUIREs a 200 in the text format's content type.
Exposition ScrapeMetrics(const std::string& host, int port) {
  httplib::Client http(host, port);
  http.set_read_timeout(30);
  httplib::Result r = http.Get("/metrics");
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  CHECK(r->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  absl::StatusOr<Exposition> parsed = ParseExposition(r->body);
  INFO(parsed.status().ToString());
  REQUIRE(parsed.ok());
  return *std::move(parsed);
}

Exposition ScrapeTrainctld(const MiniCluster& c) {
  return ScrapeMetrics(c.http_address().substr(0, c.http_address().rfind(':')), HttpPort(c));
}

// The port agent `i` serves its metrics on, from its log.
int AgentMetricsPort(MiniCluster& c, int i) {
  static const std::regex kServing(R"(serving GET /metrics on port (\d+))");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string log = c.AgentLog(i);
    if (std::regex_search(log, m, kServing)) return std::stoi(m[1].str());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("agent " << i << " never said where it serves its metrics");
  return 0;
}

double MetricValue(const Exposition& e, const std::string& name,
                   const std::map<std::string, std::string>& labels = {}) {
  return e.Value(name, labels).value_or(0);
}

// Polls `scrape` until `done` holds for it, or 20 s pass; returns the last scrape.
template <class Scraper, class Done>
Exposition AwaitMetrics(Scraper scrape, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  Exposition e = scrape();
  while (!done(e) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    e = scrape();
  }
  return e;
}

TEST_CASE("metrics count a job that succeeds after a restart and one that fails",
          "[integration][metrics]") {
  ClusterOptions opts;
  opts.agents = 1;
  opts.agent_args[0] = {"--metrics-listen", "127.0.0.1:0"};
  MiniCluster c(opts);
  const int agent_port = AgentMetricsPort(c, 0);
  auto daemon = [&c] { return ScrapeTrainctld(c); };
  auto agent = [agent_port] { return ScrapeMetrics("127.0.0.1", agent_port); };
  const Exposition before = daemon();
  const Exposition agent_before = agent();
  CHECK(MetricValue(before, "trainctl_nodes_connected") == 1);
  CHECK(MetricValue(agent_before, "trainctl_agent_connected") == 1);

  const std::string ok = c.Submit(c.Spec(R"(
displayName: crashes-once
workerPools:
- name: main
  replicaCount: 1
  command: [WORKLOAD, --fail-times, '1', --fail-code, '134', --sleep, '0.3']
  resources: {cpu: 0.1, memoryMb: 64}
scheduling:
  restartScope: REPLICA
  restartBackoff: {initial: 100ms, max: 100ms}
)"));
  const std::string bad = c.Submit(c.Spec(R"(
displayName: user-error
workerPools:
- name: main
  replicaCount: 1
  command: [WORKLOAD, --sleep, '0.3', --exit, '3']
  resources: {cpu: 0.1, memoryMb: 64}
)"));
  const v1::Job succeeded = c.WaitForEnd(ok);
  const v1::Job failed = c.WaitForEnd(bad);
  REQUIRE(succeeded.state() == v1::JOB_STATE_SUCCEEDED);
  REQUIRE(failed.state() == v1::JOB_STATE_FAILED);
  REQUIRE(succeeded.replicas(0).restart_count() == 1);
  const std::string project = succeeded.project();

  // Every report acknowledged: nothing in flight on either side.
  const Exposition after = AwaitMetrics(daemon, [](const Exposition& e) {
    return MetricValue(e, "trainctl_agent_reports_in_flight") == 0;
  });
  const Exposition agent_after = AwaitMetrics(agent, [](const Exposition& e) {
    return MetricValue(e, "trainctl_agent_reports_unacked") == 0 &&
           MetricValue(e, "trainctl_agent_runs") == 0;
  });
  auto moved = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    return MetricValue(after, name, labels) - MetricValue(before, name, labels);
  };
  CHECK(moved("trainctl_jobs_ended_total", {{"project", project}, {"state", "SUCCEEDED"}}) == 1);
  CHECK(moved("trainctl_jobs_ended_total", {{"project", project}, {"state", "FAILED"}}) == 1);
  CHECK(moved("trainctl_jobs_ended_total", {}) == 2);
  CHECK(moved("trainctl_failures_total",
              {{"failure_class", "TRANSIENT"}, {"decision", "RESTART_REPLICA"}}) == 1);
  CHECK(moved("trainctl_failures_total",
              {{"failure_class", "USER_ERROR"}, {"decision", "FAIL_JOB"}}) == 1);
  CHECK(moved("trainctl_failures_total", {}) == 2);
  CHECK(moved("trainctl_replica_restarts_total", {{"failure_class", "TRANSIENT"}}) == 1);
  CHECK(moved("trainctl_replica_restarts_total", {}) == 1);
  CHECK(moved("trainctl_job_retries_total", {}) == 0);
  CHECK(moved("trainctl_events_total", {{"type", "JobQueued"}}) == 2);
  CHECK(moved("trainctl_job_admission_wait_seconds_count", {{"project", project}}) == 2);
  CHECK(moved("trainctl_job_submit_to_running_seconds_count", {{"project", project}}) == 2);
  CHECK(moved("trainctl_reconcile_turn_seconds_count", {}) > 0);
  CHECK(moved("trainctl_sqlite_commit_seconds_count", {}) > 0);
  // A pass each turn; the two jobs were admitted by some of them, which took time.
  CHECK(moved("trainctl_admission_pass_seconds_count", {}) > 0);
  CHECK(moved("trainctl_admission_pass_seconds_sum", {}) > 0);
  CHECK(MetricValue(after, "trainctl_jobs") == 0);  // none live
  CHECK(MetricValue(after, "trainctl_nodes", {{"state", "READY"}}) == 1);
  CHECK(MetricValue(after, "trainctl_writes_refused") == 0);
  const double now_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(MetricValue(after, "trainctl_reconcile_last_turn_timestamp_seconds") > now_s - 10);
  for (const char* family :
       {"trainctl_jobs", "trainctl_nodes", "trainctl_reconcile_turn_seconds",
        "trainctl_sqlite_commit_seconds", "trainctl_admission_pass_seconds",
        "trainctl_job_admission_wait_seconds", "trainctl_agent_reports_in_flight"}) {
    INFO(family);
    CHECK(after.families.count(family) == 1);
  }

  auto agent_moved = [&](const std::string& name,
                         const std::map<std::string, std::string>& labels) {
    return MetricValue(agent_after, name, labels) - MetricValue(agent_before, name, labels);
  };
  // Three launches (the crash, its restart, the user error), all started.
  CHECK(agent_moved("trainctl_agent_launches_total", {{"result", "started"}}) == 3);
  CHECK(agent_moved("trainctl_agent_launches_total", {}) == 3);
  CHECK(agent_moved("trainctl_agent_launch_seconds_count", {}) == 3);
  CHECK(agent_moved("trainctl_agent_replica_exits_total", {{"outcome", "failed"}}) == 2);
  CHECK(agent_moved("trainctl_agent_replica_exits_total", {{"outcome", "succeeded"}}) == 1);
  // Each job's preflight ran once; each abnormal exit was held for the exit checks.
  CHECK(agent_moved("trainctl_agent_check_results_total", {{"phase", "preflight"}}) > 0);
  CHECK(agent_moved("trainctl_agent_check_results_total", {{"phase", "exit"}}) > 0);
  CHECK(agent_moved("trainctl_agent_check_results_total", {{"result", "failed"}}) == 0);
  CHECK(MetricValue(agent_after, "trainctl_agent_connected") == 1);
}

TEST_CASE("with TLS, trainctld's metrics need a user's token", "[integration][metrics][tls]") {
  ClusterOptions opts;
  opts.agents = 0;
  opts.tls = true;
  MiniCluster c(opts);
  const std::unique_ptr<httplib::SSLClient> https = Https(c);
  httplib::Result anonymous = https->Get("/metrics");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  httplib::Result bad = https->Get("/metrics", {{"Authorization", "Bearer tct_nope"}});
  REQUIRE(bad);
  CHECK(bad->status == 401);
  // A viewer's token is enough.
  CliResult viewer =
      c.Cli({"admin", "token", "create", "--owner", "prometheus", "--role", "viewer"});
  INFO(viewer.err);
  REQUIRE(viewer.exit_code == 0);
  const std::string token(absl::StripAsciiWhitespace(viewer.out));
  httplib::Result ok = https->Get("/metrics", {{"Authorization", "Bearer " + token}});
  REQUIRE(ok);
  CHECK(ok->status == 200);
  absl::StatusOr<Exposition> parsed = ParseExposition(ok->body);
  INFO(parsed.status().ToString());
  REQUIRE(parsed.ok());
  CHECK(parsed->families.count("trainctl_reconcile_turn_seconds") == 1);
}

}  // namespace
}  // namespace trainctl::testing
