// DaemonMetrics: trainctld's Prometheus metrics (docs/operators/metrics.md lists every one),
// served as `GET /metrics` on its HTTP port (MetricsEndpoint).
//
// Counted where things happen: the reconcile loop reports each turn, each commit and, after a
// commit, what the turn did (sched::Tally: failures decided, admissions, first runs, jobs ended;
// and its events); agent streams hold a ReportInFlight() token while a report waits for its
// commit. Computed at scrape time: jobs by state and project, from the published snapshots;
// nodes by state and health, from the counts the loop keeps after each turn that changed a node.
//
//   DaemonMetrics metrics;
//   metrics.WatchJobs(&snapshots);
//   loop.set_metrics(&metrics);
//   rest_options.metrics = MetricsEndpoint(&authorizer, &metrics);
//
// Thread-safety: every method may be called from any thread; the On* calls come from the loop
// thread and cost a few atomic additions (a map lookup under a family's lock for a labelled
// series).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "model/model.h"

namespace trainctl::server {

class Authorizer;
class JobSnapshots;

class DaemonMetrics {
 public:
  DaemonMetrics();
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // trainctl_jobs counts the live jobs of `snapshots` (not owned; must outlive this) at each
  // scrape. Call once, before serving.
  void WatchJobs(const JobSnapshots* snapshots);

  // A reconcile turn took `seconds`, and ended at `wall_ms` (Unix ms).
  void OnTurn(double seconds, int64_t wall_ms);
  // A turn's SQLite commit took `seconds`.
  void OnCommit(double seconds);
  // A turn's admission pass (deciding which queued jobs start, and where) took `seconds`.
  void OnAdmissionPass(double seconds);
  // After a turn's commit: what it did. Called by one thread at a time (the loop's).
  void OnCommitted(const sched::Tally& tally, const std::vector<sched::Event>& events);
  // The nodes the core holds now (after a turn that changed any, or a reload).
  void OnNodes(const std::map<std::string, sched::Node>& nodes) ABSL_LOCKS_EXCLUDED(mu_);
  // Writes are refused (a failed commit), or accepted again.
  void SetWritesRefused(bool refused);
  // The epoch of the leader lease this trainctld holds (server/leadership.h; 0: no lease).
  void SetLeaderEpoch(int64_t epoch);
  // An agent's report posted to the loop: counted in trainctl_agent_reports_in_flight until the
  // returned token (and every copy of it) is gone, after its ack is sent or its work dropped.
  std::shared_ptr<void> ReportInFlight();
  // trainctld's copy of the replicas' logs took `bytes` from the agents, or evicted them.
  void OnLogsReceived(int64_t bytes);
  void OnLogsEvicted(int64_t bytes);
  // How many replicas are judged stragglers now, by project (Core::StragglersByProject); a
  // project that had some and is not named has none.
  void OnStragglers(const std::map<std::string, int>& by_project) ABSL_LOCKS_EXCLUDED(mu_);

  // Every metric, in the text exposition format.
  std::string Expose() const { return registry_.Expose(); }

 private:
  metrics::Registry registry_;
  metrics::Histogram& turn_seconds_;
  metrics::Gauge& last_turn_;
  metrics::Histogram& commit_seconds_;
  metrics::Histogram& admission_pass_seconds_;
  metrics::Gauge& writes_refused_;
  metrics::Gauge& leader_epoch_;
  metrics::Gauge& reports_in_flight_;
  metrics::CounterFamily& events_;
  metrics::CounterFamily& ended_;
  metrics::CounterFamily& failures_;
  metrics::CounterFamily& restarts_;
  metrics::CounterFamily& retries_;
  metrics::HistogramFamily& admission_wait_;
  metrics::HistogramFamily& submit_to_running_;
  metrics::CounterFamily& preemptions_;
  metrics::HistogramFamily& preemption_seconds_;
  metrics::HistogramFamily& fabric_check_seconds_;
  metrics::GaugeFamily& fair_share_;
  metrics::GaugeFamily& fair_share_usage_;
  metrics::GaugeFamily& stragglers_;
  // The projects stragglers_ has a series for.
  std::set<std::string> straggler_projects_ ABSL_GUARDED_BY(mu_);
  metrics::CounterFamily& usage_gpu_;
  metrics::CounterFamily& usage_cpu_;
  metrics::CounterFamily& usage_memory_;
  metrics::Counter& logs_received_;
  metrics::Counter& logs_evicted_;
  // OnCommitted's thread only: the counter of each event type, so that counting an event takes
  // neither a lock nor an allocation.
  std::map<std::string, metrics::Counter*, std::less<>> event_counters_;
  // OnCommitted's thread only: each project's usage not yet counted, the fraction of a second
  // the whole-second counters above have not taken yet.
  std::map<std::string, sched::UsageAdded> usage_carry_;

  mutable absl::Mutex mu_;
  // Nodes by (state, health), and those connected, as of the last OnNodes.
  std::map<std::pair<std::string, std::string>, int64_t> nodes_ ABSL_GUARDED_BY(mu_);
  int64_t connected_ ABSL_GUARDED_BY(mu_) = 0;
};

// GET /metrics: the exposition for a caller whose "authorization" header is `authorization`
// (nullopt: none). With authentication on, any valid user token (any role; not a replica's
// token) is needed: UNAUTHENTICATED or PERMISSION_DENIED otherwise. `auth` and `metrics` (not
// owned) must outlive the returned function.
using MetricsHandler =
    std::function<absl::StatusOr<std::string>(const std::optional<std::string>& authorization)>;
MetricsHandler MetricsEndpoint(const Authorizer* auth, const DaemonMetrics* metrics);

}  // namespace trainctl::server
