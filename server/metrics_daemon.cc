// trainctld's metrics (metrics_daemon.h): their names, help texts and buckets, and how each
// reported event moves them.
#include "server/metrics_daemon.h"

#include <array>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "model/model_proto.h"
#include "server/authorizer.h"
#include "server/job_snapshots.h"

namespace trainctl::server {
namespace {

using metrics::ExponentialBuckets;

// 0.1 ms to about 13 s: a turn or a commit.
std::vector<double> LatencyBuckets() { return ExponentialBuckets(0.0001, 2, 18); }

// 10 ms to a day: a wait in the queue, or from a submission to running.
std::vector<double> WaitBuckets() {
  return {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400};
}

bool IsReplicaRestart(sched::Decision d) {
  return d == sched::Decision::kRestartReplica || d == sched::Decision::kRestartGang;
}
bool IsJobRetry(sched::Decision d) {
  return d == sched::Decision::kRetryJob || d == sched::Decision::kRedispatch;
}

}  // namespace

DaemonMetrics::DaemonMetrics()
    : turn_seconds_(registry_
                        .AddHistogram("trainctl_reconcile_turn_seconds",
                                      "How long each reconcile loop turn took (apply the posted "
                                      "work, tick, schedule, commit, publish).",
                                      {}, LatencyBuckets())
                        .With({})),
      last_turn_(registry_
                     .AddGauge("trainctl_reconcile_last_turn_timestamp_seconds",
                               "When the reconcile loop last finished a turn (Unix time); the "
                               "loop turns at least twice a second while it runs.",
                               {})
                     .With({})),
      commit_seconds_(registry_
                          .AddHistogram("trainctl_sqlite_commit_seconds",
                                        "How long each turn's SQLite transaction took to commit.",
                                        {}, LatencyBuckets())
                          .With({})),
      admission_pass_seconds_(
          registry_
              .AddHistogram("trainctl_admission_pass_seconds",
                            "How long each turn's admission pass took to decide which queued "
                            "jobs start and on which nodes (starting them is not counted).",
                            {}, LatencyBuckets())
              .With({})),
      writes_refused_(registry_
                          .AddGauge("trainctl_writes_refused",
                                    "1 while trainctld refuses changes after a failed commit (a "
                                    "full disk), else 0.",
                                    {})
                          .With({})),
      leader_epoch_(registry_
                        .AddGauge("trainctl_leader_epoch",
                                  "The epoch of the leader lease this trainctld holds, with a "
                                  "PostgreSQL store shared by several trainctld: one more at "
                                  "every failover. 0 without a lease (SQLite).",
                                  {})
                        .With({})),
      reports_in_flight_(registry_
                             .AddGauge("trainctl_agent_reports_in_flight",
                                       "Agent reports (replica started or exited, check runs) "
                                       "received and not yet acknowledged after their commit.",
                                       {})
                             .With({})),
      events_(registry_.AddCounter("trainctl_events_total",
                                   "Events committed (trainctl events), by type.", {"type"})),
      ended_(registry_.AddCounter("trainctl_jobs_ended_total",
                                  "Jobs that reached a terminal state, by project and state.",
                                  {"project", "state"})),
      failures_(registry_.AddCounter(
          "trainctl_failures_total",
          "Failures decided (a replica's end that was no success, a stockout, a move without "
          "room), by failure class and the decision taken.",
          {"failure_class", "decision"})),
      restarts_(registry_.AddCounter(
          "trainctl_replica_restarts_total",
          "Replica restarts in place after a failure (RESTART_REPLICA, or RESTART_GANG for the "
          "replica that caused it), by failure class.",
          {"failure_class"})),
      retries_(registry_.AddCounter(
          "trainctl_job_retries_total",
          "New attempts of jobs after a failure (RETRY_JOB or REDISPATCH), by failure class.",
          {"failure_class"})),
      admission_wait_(registry_.AddHistogram(
          "trainctl_job_admission_wait_seconds",
          "How long each attempt waited in the queue, from its job's submission or retry to "
          "its placement, by project.",
          {"project"}, WaitBuckets())),
      submit_to_running_(registry_.AddHistogram(
          "trainctl_job_submit_to_running_seconds",
          "From a job's submission to all of its replicas running for the first time, by "
          "project.",
          {"project"}, WaitBuckets())),
      preemptions_(registry_.AddCounter(
          "trainctl_preemptions_total",
          "Jobs chosen as preemption victims, by their project and why: reclaim (a lender takes "
          "back its quota) or priority (a higher-priority job of the same project).",
          {"project", "reason"})),
      preemption_seconds_(registry_.AddHistogram(
          "trainctl_preemption_seconds",
          "From a preemption's decision to the end of its victim's attempt (every replica "
          "exited, a checkpoint was reported, or the grace period ended), by the victim's "
          "project.",
          {"project"}, WaitBuckets())),
      fabric_check_seconds_(registry_.AddHistogram(
          "trainctl_fabric_check_seconds",
          "How long each fabric check before a multi-node gang's start took, by its result: "
          "PASSED, ISOLATED (a node was blamed and isolated), FAILED (no single node to blame) "
          "or ABANDONED (a node left during it).",
          {"result"}, WaitBuckets())),
      fair_share_(registry_.AddGauge(
          "trainctl_project_fair_share",
          "Each project's fair share: its dominant decayed usage over the cluster, divided by its "
          "weight; across projects the lowest goes first. Updated at most once a minute.",
          {"project"})),
      fair_share_usage_(registry_.AddGauge(
          "trainctl_project_usage_seconds",
          "Each project's decayed usage: what its replicas held times the time they held it, "
          "each second halved every --fair-share-half-life, by resource (gpu, cpu, memory_mb). "
          "Updated at most once a minute.",
          {"project", "resource"})),
      stragglers_(registry_.AddGauge(
          "trainctl_stragglers",
          "Replicas judged stragglers now (their step rate below --straggler-ratio times their "
          "gang's median for --straggler-window), by project.",
          {"project"})),
      usage_gpu_(registry_.AddCounter(
          "trainctl_usage_gpu_seconds_total",
          "GPU-seconds allocated to each project's replicas (GPUs held times the seconds held), "
          "undecayed, in whole seconds, since this trainctld started; `trainctl usage` keeps "
          "them by the hour.",
          {"project"})),
      usage_cpu_(registry_.AddCounter(
          "trainctl_usage_cpu_seconds_total",
          "CPU-seconds allocated to each project's replicas, as trainctl_usage_gpu_seconds_total.",
          {"project"})),
      usage_memory_(
          registry_.AddCounter("trainctl_usage_memory_mb_seconds_total",
                               "MiB-seconds of memory allocated to each project's replicas, as "
                               "trainctl_usage_gpu_seconds_total.",
                               {"project"})),
      logs_received_(registry_
                         .AddCounter("trainctl_log_received_bytes_total",
                                     "Bytes of the replicas' logs the agents shipped into "
                                     "trainctld's copy.",
                                     {})
                         .With({})),
      logs_evicted_(registry_
                        .AddCounter("trainctl_log_evicted_bytes_total",
                                    "Bytes of ended jobs' logs deleted from trainctld's copy to "
                                    "keep it under --log-store-max-gb.",
                                    {})
                        .With({})) {
  registry_.AddGaugeFunction("trainctl_nodes", "Nodes by state and health.", {"state", "health"},
                             [this] {
                               absl::MutexLock lock(&mu_);
                               std::vector<metrics::Sample> out;
                               for (const auto& [key, n] : nodes_) {
                                 out.push_back({{key.first, key.second}, static_cast<double>(n)});
                               }
                               return out;
                             });
  registry_.AddGaugeFunction(
      "trainctl_nodes_connected", "Nodes whose agent holds a stream to trainctld.", {}, [this] {
        absl::MutexLock lock(&mu_);
        return std::vector<metrics::Sample>{{{}, static_cast<double>(connected_)}};
      });
}

void DaemonMetrics::WatchJobs(const JobSnapshots* snapshots) {
  registry_.AddGaugeFunction(
      "trainctl_jobs",
      "Jobs not ended yet, by project and state (QUEUED: waiting in the admission queue).",
      {"project", "state"}, [snapshots] {
        // Counted under the snapshots' lock, which holds up the loop's next publication: a
        // lookup by the project's name as it is (no copy once the project is known) and an
        // increment per job; the label texts are made after.
        std::map<std::string, std::array<int64_t, v1::JobState_ARRAYSIZE>, std::less<>> counts;
        snapshots->ForEach([&counts](const v1::Job& job) {
          // A job array never runs: its elements are counted, not it.
          if (IsTerminal(job.state()) || job.has_array()) return;
          auto it = counts.find(job.project());
          if (it == counts.end()) it = counts.emplace(job.project(), decltype(it->second){}).first;
          ++it->second[job.state()];
        });
        std::vector<metrics::Sample> out;
        for (const auto& [project, by_state] : counts) {
          for (int state = 0; state < v1::JobState_ARRAYSIZE; ++state) {
            if (by_state[state] == 0) continue;
            out.push_back({{project, EnumShortName(static_cast<v1::JobState>(state))},
                           static_cast<double>(by_state[state])});
          }
        }
        return out;
      });
}

void DaemonMetrics::OnTurn(double seconds, int64_t wall_ms) {
  turn_seconds_.Observe(seconds);
  last_turn_.Set(static_cast<double>(wall_ms) / 1000.0);
}

void DaemonMetrics::OnCommit(double seconds) { commit_seconds_.Observe(seconds); }

void DaemonMetrics::OnAdmissionPass(double seconds) { admission_pass_seconds_.Observe(seconds); }

void DaemonMetrics::OnCommitted(const sched::Tally& tally,
                                const std::vector<sched::Event>& events) {
  for (const sched::Event& e : events) {
    auto it = event_counters_.find(e.type);
    if (it == event_counters_.end()) {
      it = event_counters_.emplace(e.type, &events_.With({e.type})).first;
    }
    it->second->Increment();
  }
  for (const sched::Tally::End& end : tally.ends) {
    ended_.With({end.project, EnumShortName(end.state)}).Increment();
  }
  for (const sched::Tally::Failure& f : tally.failures) {
    const std::string failure_class = sched::FailureClassName(f.failure_class);
    failures_.With({failure_class, sched::DecisionName(f.action)}).Increment();
    if (IsReplicaRestart(f.action)) restarts_.With({failure_class}).Increment();
    if (IsJobRetry(f.action)) retries_.With({failure_class}).Increment();
  }
  for (const sched::Tally::Admission& a : tally.admissions) {
    admission_wait_.With({a.project}).Observe(absl::ToDoubleSeconds(a.wait));
  }
  for (const sched::Tally::FirstRun& r : tally.first_runs) {
    submit_to_running_.With({r.project}).Observe(absl::ToDoubleSeconds(r.since_create));
  }
  for (const sched::Tally::Preempted& p : tally.preempted) {
    preemptions_.With({p.project, p.reason}).Increment();
  }
  for (const sched::Tally::PreemptionEnded& p : tally.preemption_ends) {
    preemption_seconds_.With({p.project}).Observe(absl::ToDoubleSeconds(p.took));
  }
  for (const sched::Tally::FabricCheckEnded& c : tally.fabric_checks) {
    fabric_check_seconds_.With({c.result}).Observe(absl::ToDoubleSeconds(c.took));
  }
  for (const sched::Tally::FairShareSeen& f : tally.fair_shares) {
    fair_share_.With({f.usage.project}).Set(f.share);
    fair_share_usage_.With({f.usage.project, "gpu"}).Set(f.usage.gpu_seconds);
    fair_share_usage_.With({f.usage.project, "cpu"}).Set(f.usage.cpu_seconds);
    fair_share_usage_.With({f.usage.project, "memory_mb"}).Set(f.usage.memory_mb_seconds);
  }
  for (const auto& [project, added] : tally.usage_added) {
    sched::UsageAdded& carry = usage_carry_[project];
    carry.gpu_seconds += added.gpu_seconds;
    carry.cpu_seconds += added.cpu_seconds;
    carry.memory_mb_seconds += added.memory_mb_seconds;
    // Whole seconds to the counters; the fraction waits for the next turn.
    auto take = [](double* seconds) {
      const double whole = std::floor(*seconds);
      *seconds -= whole;
      return static_cast<uint64_t>(whole);
    };
    if (const uint64_t n = take(&carry.gpu_seconds); n > 0) usage_gpu_.With({project}).Increment(n);
    if (const uint64_t n = take(&carry.cpu_seconds); n > 0) usage_cpu_.With({project}).Increment(n);
    if (const uint64_t n = take(&carry.memory_mb_seconds); n > 0) {
      usage_memory_.With({project}).Increment(n);
    }
  }
}

void DaemonMetrics::OnNodes(const std::map<std::string, sched::Node>& nodes) {
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  int64_t connected = 0;
  for (const auto& [name, node] : nodes) {
    ++counts[{EnumShortName(node.status.state), EnumShortName(node.status.health)}];
    if (node.connected) ++connected;
  }
  absl::MutexLock lock(&mu_);
  nodes_ = std::move(counts);
  connected_ = connected;
}

void DaemonMetrics::SetWritesRefused(bool refused) { writes_refused_.Set(refused ? 1 : 0); }

void DaemonMetrics::SetLeaderEpoch(int64_t epoch) { leader_epoch_.Set(static_cast<double>(epoch)); }

void DaemonMetrics::OnLogsReceived(int64_t bytes) {
  logs_received_.Increment(static_cast<uint64_t>(bytes));
}

void DaemonMetrics::OnLogsEvicted(int64_t bytes) {
  logs_evicted_.Increment(static_cast<uint64_t>(bytes));
}

void DaemonMetrics::OnStragglers(const std::map<std::string, int>& by_project) {
  absl::MutexLock lock(&mu_);
  for (const std::string& project : straggler_projects_) {
    if (by_project.count(project) == 0) stragglers_.With({project}).Set(0);
  }
  for (const auto& [project, n] : by_project) {
    straggler_projects_.insert(project);
    stragglers_.With({project}).Set(n);
  }
}

std::shared_ptr<void> DaemonMetrics::ReportInFlight() {
  reports_in_flight_.Add(1);
  metrics::Gauge* gauge = &reports_in_flight_;
  return std::shared_ptr<void>(nullptr, [gauge](void*) { gauge->Add(-1); });
}

MetricsHandler MetricsEndpoint(const Authorizer* auth, const DaemonMetrics* metrics) {
  return [auth,
          metrics](const std::optional<std::string>& authorization) -> absl::StatusOr<std::string> {
    if (auth != nullptr && auth->enabled()) {
      std::optional<absl::string_view> header;
      if (authorization) header = *authorization;
      // WhoAmI's permission: any user's valid token.
      if (absl::StatusOr<Caller> caller = auth->Authorize(header, Route::kWhoAmI); !caller.ok()) {
        return absl::Status(caller.status().code(),
                            absl::StrCat("GET /metrics: ", caller.status().message()));
      }
    }
    return metrics->Expose();
  };
}

}  // namespace trainctl::server
