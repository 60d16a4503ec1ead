// Benchmark: what trainctld's metrics cost the reconcile loop. With 10,000 live jobs in 20
// projects published to JobSnapshots: how long counting them (trainctl_jobs) holds the
// snapshots' lock, which the loop's next publication waits for; a whole scrape; and counting a
// turn's 1,000 events (DaemonMetrics::OnCommitted, on the loop thread). Median of 21 rounds.
//
//   build/bin/bench_metrics_scrape
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "server/job_snapshots.h"
#include "server/metrics_daemon.h"
#include "server/watch_hub.h"

namespace {

namespace server = trainctl::server;
namespace sched = trainctl::sched;
namespace v1 = trainctl::v1;

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  constexpr int kJobs = 10'000;
  server::WatchHub hub;
  server::JobSnapshots snapshots(&hub);
  std::vector<server::JobSnapshots::JobPtr> jobs;
  for (int i = 0; i < kJobs; ++i) {
    auto job = std::make_shared<v1::Job>();
    job->set_id("job-" + std::to_string(i));
    job->set_project("project-" + std::to_string(i % 20));
    job->set_state(i % 3 == 0 ? v1::JOB_STATE_QUEUED : v1::JOB_STATE_RUNNING);
    job->mutable_create_time()->set_seconds(i);
    jobs.push_back(std::move(job));
  }
  snapshots.Publish(jobs, nullptr);
  server::DaemonMetrics metrics;
  metrics.WatchJobs(&snapshots);
  std::vector<sched::Event> events(1000);
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].type = i % 2 == 0 ? "ReplicaStarted" : "ReplicaExited";
  }
  const sched::Tally tally;
  std::vector<double> locked, scrape, counted;
  size_t bytes = 0;
  for (int round = 0; round < 21; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    // What trainctl_jobs does under the lock, less the label texts it makes after.
    int64_t live = 0;
    snapshots.ForEach([&live](const v1::Job& job) { live += job.state() != 0; });
    auto t1 = std::chrono::steady_clock::now();
    bytes = metrics.Expose().size();
    auto t2 = std::chrono::steady_clock::now();
    metrics.OnCommitted(tally, events);
    auto t3 = std::chrono::steady_clock::now();
    locked.push_back(Ms(t1 - t0));
    scrape.push_back(Ms(t2 - t1));
    counted.push_back(Ms(t3 - t2));
  }
  std::printf(
      "%d live jobs: a pass over the snapshots %.3f ms; a whole scrape %.3f ms (%zu bytes); "
      "1,000 events counted %.3f ms\n",
      kJobs, Median(locked), Median(scrape), bytes, Median(counted));
  return 0;
}
