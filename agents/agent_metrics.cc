// trainctl-agent's metrics (agent_metrics.h): names, help texts, buckets, and how a launch, an
// exit or a check run is classed.
#include "agents/agent_metrics.h"

#include <utility>
#include <vector>

namespace trainctl::agent {
namespace {

// "failed_preflight", "failed_user", ...: how a launch that did not start failed.
std::string LaunchFailure(const v1::ReplicaExited& e) {
  if (e.preflight_failed()) return "failed_preflight";
  if (e.fenced()) return "refused_fenced";
  return e.launch_error_is_user() ? "failed_user" : "failed_host";
}

// How a started replica ended.
std::string ExitOutcome(const v1::ReplicaExited& e) {
  if (e.stopped_by_request()) return "stopped";
  if (e.fenced()) return "fenced";
  if (e.oom_killed()) return "oom_killed";
  if (e.has_signal()) return "signaled";
  return e.exit_code() == 0 ? "succeeded" : "failed";
}

}  // namespace

AgentMetrics::AgentMetrics()
    : launches_(registry_.AddCounter(
          "trainctl_agent_launches_total",
          "Launch commands carried out, by result: started (the replica runs), failed_user (a "
          "command that cannot start), failed_host, failed_preflight, refused_fenced.",
          {"result"})),
      launch_seconds_(registry_
                          .AddHistogram("trainctl_agent_launch_seconds",
                                        "How long the agent took to carry out a launch command: "
                                        "preflight checks, directories, starting the shim.",
                                        {}, metrics::ExponentialBuckets(0.001, 2, 16))
                          .With({})),
      exits_(registry_.AddCounter(
          "trainctl_agent_replica_exits_total",
          "Replicas that ended after they started, by outcome: succeeded, failed (non-zero exit), "
          "signaled, oom_killed, stopped (by trainctld's request), fenced.",
          {"outcome"})),
      checks_(registry_.AddCounter(
          "trainctl_agent_check_results_total",
          "Host check results, by phase (startup, preflight, periodic, exit), item and result "
          "(passed, failed).",
          {"phase", "item", "result"})),
      log_shipped_bytes_(registry_
                             .AddCounter("trainctl_agent_log_shipped_bytes_total",
                                         "Bytes of the replicas' logs trainctld took into its "
                                         "copy (AgentService.ShipLogs).",
                                         {})
                             .With({})),
      log_ship_backlog_bytes_(
          registry_
              .AddGauge("trainctl_agent_log_ship_backlog_bytes",
                        "Bytes written to the replicas' logs on this node that trainctld's copy "
                        "does not hold yet: what a slow or absent scheduler costs on disk.",
                        {})
              .With({})),
      log_ship_errors_(registry_
                           .AddCounter("trainctl_agent_log_ship_errors_total",
                                       "Log shipping streams to trainctld that failed (the agent "
                                       "dials again after a backoff and resynchronises).",
                                       {})
                           .With({})) {}

void AgentMetrics::Watch(Sources sources) {
  auto gauge = [](std::function<double()> fn) {
    return [fn = std::move(fn)] { return std::vector<metrics::Sample>{{{}, fn()}}; };
  };
  registry_.AddGaugeFunction("trainctl_agent_runs",
                             "Replicas the agent supervises now (launched or adopted, not ended).",
                             {}, gauge([f = sources.runs] { return static_cast<double>(f()); }));
  registry_.AddGaugeFunction(
      "trainctl_agent_reports_unacked",
      "Reports (replica started or exited, check runs) sent or waiting to be sent and not yet "
      "acknowledged by trainctld: they are journaled and sent again after a reconnect.",
      {}, gauge([f = sources.unacked_reports] { return static_cast<double>(f()); }));
  registry_.AddGaugeFunction("trainctl_agent_connected",
                             "1 while the agent is registered with trainctld, else 0.", {},
                             gauge([f = sources.connected] { return f() ? 1.0 : 0.0; }));
}

void AgentMetrics::OnLaunchCarriedOut(absl::Duration took) {
  launch_seconds_.Observe(absl::ToDoubleSeconds(took));
}

void AgentMetrics::OnStarted() { launches_.With({"started"}).Increment(); }

void AgentMetrics::OnExited(const v1::ReplicaExited& exited) {
  if (exited.launch_failed()) {
    launches_.With({LaunchFailure(exited)}).Increment();
  } else {
    exits_.With({ExitOutcome(exited)}).Increment();
  }
}

void AgentMetrics::OnCheckRun(const v1::CheckRun& run) {
  for (const v1::CheckResult& item : run.items()) {
    checks_.With({run.phase(), item.item(), item.passed() ? "passed" : "failed"}).Increment();
  }
}

void AgentMetrics::OnLogShipped(int64_t bytes) {
  if (bytes > 0) log_shipped_bytes_.Increment(static_cast<uint64_t>(bytes));
}

void AgentMetrics::SetLogShipBacklog(int64_t bytes) {
  log_ship_backlog_bytes_.Set(static_cast<double>(bytes));
}

void AgentMetrics::OnLogShipError() { log_ship_errors_.Increment(); }

}  // namespace trainctl::agent
