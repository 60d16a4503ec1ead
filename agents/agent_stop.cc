// The agent's two ways out: Shutdown, which leaves every replica running for the next agent
// (SIGTERM, restarts, upgrades), and StopReplicas, which ends them first (a host being retired).
// See agent.h.
#include "absl/time/time.h"
#include "agents/agent.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {

void Agent::Shutdown(absl::Duration ack_wait) {
  spdlog::info("shutting down; replicas keep running, and the next agent takes them over");
  runtime_->RejectNewLaunches("the agent is shutting down");
  {
    absl::MutexLock lock(&mu_);
    // Launches already received still start (or fail) before the agent goes: none is half done.
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return commands_.empty() && !command_running_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&idle), ack_wait);
    // Everything is journaled; waiting a little for the acks only saves the next agent a resend.
    auto all_acked = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return reports_.empty() && pending_exits_.empty() && delayed_exits_.empty();
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&all_acked), ack_wait)) {
      spdlog::info("{} reports not acknowledged yet; the next agent sends them again",
                   reports_.size() + pending_exits_.size() + delayed_exits_.size());
    }
    stopped_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  // Without mu_, which the shipper takes to look at the stream: what it did not ship, the next
  // agent does (the scheduler's copy says where it ends).
  if (log_shipper_ != nullptr) log_shipper_->Stop();
}

void Agent::StopReplicas(absl::Duration grace) {
  spdlog::info("stopping every replica (grace {})", absl::FormatDuration(grace));
  runtime_->RejectNewLaunches("the agent is stopping its replicas");
  runtime_->StopAll(absl::ToInt64Milliseconds(grace), "the agent is stopping its replicas");
  if (!runtime_->WaitUntilIdle(absl::Now() + grace + absl::Seconds(5))) {
    spdlog::warn("some replicas were still running after the grace period");
  }
}

}  // namespace trainctl::agent
