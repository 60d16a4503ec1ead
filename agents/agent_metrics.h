// AgentMetrics: trainctl-agent's Prometheus metrics (docs/operators/metrics.md lists every one),
// served as `GET /metrics` on --metrics-listen (common/metrics_http.h).
//
// The Agent counts into it where things happen (Agent::Options::metrics): each launch command
// carried out and how long it took, each replica started or ended, each check run by item. The
// gauges (runs supervised, reports not acknowledged, connected) are read from the Agent at scrape
// time through the functions given to Watch(); the log shipper (log_shipper.h) counts what it
// ships and sets its backlog.
//
//   AgentMetrics metrics;
//   options.metrics = &metrics;
//   Agent agent(options);
//   metrics.Watch({[&] { return agent.ActiveRuns(); }, ...});
//   std::string text = metrics.Expose();
//
// Thread-safety: every method may be called from any thread; counting is a few atomic additions
// and a map lookup under a family's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/time/time.h"
#include "common/metrics.h"
#include "trainctl/v1/agent.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::agent {

class AgentMetrics {
 public:
  // What the scrape-time gauges read.
  struct Sources {
    // Replicas the agent supervises now (launched or adopted, not yet ended).
    std::function<int64_t()> runs;
    // Reports not acknowledged by trainctld yet.
    std::function<int64_t()> unacked_reports;
    // Whether the agent is registered with trainctld now.
    std::function<bool()> connected;
  };

  AgentMetrics();
  AgentMetrics(const AgentMetrics&) = delete;
  AgentMetrics& operator=(const AgentMetrics&) = delete;

  // Call once, before serving; the functions must stay callable while this is exposed.
  void Watch(Sources sources);

  // A launch command was carried out (preflight, directories, the shim started, or the launch
  // failed) in `took`.
  void OnLaunchCarriedOut(absl::Duration took);
  // A replica launched by this agent process runs.
  void OnStarted();
  // A run ended: a failed launch, or a replica's end.
  void OnExited(const v1::ReplicaExited& exited);
  // A check run finished (startup script, preflight, periodic or exit).
  void OnCheckRun(const v1::CheckRun& run);
  // Log shipping (log_shipper.h): `bytes` of the runs' logs went into trainctld's copy; the
  // bytes written to the logs and not in the copy yet; a ShipLogs stream failed.
  void OnLogShipped(int64_t bytes);
  void SetLogShipBacklog(int64_t bytes);
  void OnLogShipError();

  // Every metric, in the text exposition format.
  std::string Expose() const { return registry_.Expose(); }

 private:
  metrics::Registry registry_;
  metrics::CounterFamily& launches_;
  metrics::Histogram& launch_seconds_;
  metrics::CounterFamily& exits_;
  metrics::CounterFamily& checks_;
  metrics::Counter& log_shipped_bytes_;
  metrics::Gauge& log_ship_backlog_bytes_;
  metrics::Counter& log_ship_errors_;
};

}  // namespace trainctl::agent
