// The Agent's host checks (agent.h, "Host health"): the preflight of launches, the exit checks
// that abnormal exits wait for, the periodic checks and the startup script. The stream, the
// reports and the launches are in agent.cc.
#include <optional>
#include <string>
#include <utility>

#include "agents/agent.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

// The job id of a run id ("<job>/<attempt>/<replica>/<restart>").
std::string JobOfRun(const std::string& run_id) { return run_id.substr(0, run_id.find('/')); }

}  // namespace

std::optional<ReplicaRuntime::PreflightFailure> Agent::Preflight(
    const trainctl::v1::LaunchReplica& launch) {
  std::optional<trainctl::v1::CheckRun> run =
      preflight_cache_.Find(launch.job_id(), launch.attempt());
  if (run) {
    spdlog::info("run {}: preflight of job {} attempt {} already {} on this node (run for {})",
                 launch.run_id(), launch.job_id(), launch.attempt(),
                 run->passed() ? "passed" : "failed", run->run_id());
    // Its own GPUs are not the ones that run checked.
    if (run->passed()) run = checker_.ForReplica(*std::move(run), launch);
  } else {
    run = checker_.RunPreflight(launch);
    if (options_.metrics != nullptr) options_.metrics->OnCheckRun(*run);
    preflight_cache_.Insert(launch.job_id(), launch.attempt(), *run);
    // A failed run travels with each replica's exit instead.
    if (run->passed()) {
      trainctl::v1::AgentMessage report;
      *report.mutable_check_report()->mutable_run() = *run;
      AddReport(std::move(report));
    }
  }
  if (run->passed()) return std::nullopt;
  run->set_run_id(launch.run_id());
  std::string error = PreflightError(options_.node, *run);
  return ReplicaRuntime::PreflightFailure{*std::move(run), std::move(error)};
}

void Agent::ExitCheckLoop() {
  auto cancelled = [this] {
    absl::MutexLock lock(&mu_);
    return worker_exit_;
  };
  while (true) {
    size_t batch = 0;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return worker_exit_ || !pending_exits_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (worker_exit_) return;
      batch = pending_exits_.size();
    }
    // The exits queued so far share this run: it started after each of them.
    trainctl::v1::CheckRun run = checker_.RunHealthChecks("exit", cancelled);
    if (options_.metrics != nullptr) options_.metrics->OnCheckRun(run);
    absl::MutexLock lock(&mu_);
    if (worker_exit_) return;
    for (size_t i = 0; i < batch; ++i) {
      trainctl::v1::AgentMessage report;
      trainctl::v1::ReplicaExited& exited = *report.mutable_replica_exited();
      exited = std::move(pending_exits_.front());
      pending_exits_.pop_front();
      *exited.mutable_checks() = run;
      exited.mutable_checks()->set_job_id(JobOfRun(exited.run_id()));
      exited.mutable_checks()->set_run_id(exited.run_id());
      AddReportLocked(std::move(report));
    }
  }
}

void Agent::DelayedExitLoop() {
  absl::MutexLock lock(&mu_);
  while (!worker_exit_) {
    // Every exit is held for the same time, so the oldest is due first.
    if (!delayed_exits_.empty() && absl::Now() >= delayed_exits_.front().first) {
      QueueExit(std::move(delayed_exits_.front().second));
      delayed_exits_.pop_front();
      continue;
    }
    const absl::Time due =
        delayed_exits_.empty() ? absl::InfiniteFuture() : delayed_exits_.front().first;
    const size_t held = delayed_exits_.size();
    auto changed = [this, held]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return worker_exit_ || delayed_exits_.size() != held;
    };
    mu_.AwaitWithDeadline(absl::Condition(&changed), due);
  }
}

void Agent::HealthCheckLoop() {
  const absl::Duration interval = options_.checks.health_check_interval;
  const bool periodic = interval > absl::ZeroDuration();
  auto cancelled = [this] {
    absl::MutexLock lock(&mu_);
    return stopped_;
  };
  absl::Time next = periodic ? absl::Now() : absl::InfiniteFuture();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_ || checks_requested_; };
      mu_.AwaitWithDeadline(absl::Condition(&wake), next);
      if (stopped_) return;
      // A request that arrives while the set runs gets a run of its own after it.
      checks_requested_ = false;
    }
    trainctl::v1::AgentMessage report;
    *report.mutable_check_report()->mutable_run() = checker_.RunHealthChecks("periodic", cancelled);
    if (options_.metrics != nullptr) options_.metrics->OnCheckRun(report.check_report().run());
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    reports_.AddPeriodicCheck(std::move(report));
    next = periodic ? absl::Now() + interval : absl::InfiniteFuture();
  }
}

void Agent::RunStartupScript() {
  std::optional<trainctl::v1::CheckRun> run = checker_.RunStartupScript([this] {
    absl::MutexLock lock(&mu_);
    return stopped_;
  });
  if (run && options_.metrics != nullptr) options_.metrics->OnCheckRun(*run);
  absl::MutexLock lock(&mu_);
  startup_run_ = std::move(run);
}

void Agent::SetHostChecks(HostCheckConfig host) {
  host.cache.path = checker_.host().cache.path;
  NodeCheckConfig described = checker_.config();
  described.host = host;
  checker_.SetHost(std::move(host));
  absl::MutexLock lock(&mu_);
  check_config_ = DescribeCheckConfig(described);
}

}  // namespace trainctl::agent
