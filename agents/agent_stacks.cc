// The agent's stack captures (agent.h): before a stop that asks for them
// (StopReplica.capture_stacks: a hung replica, the end of an attempt) and on request
// (DumpStacks, `trainctl stacks --now`). Each runs on stack_captures_, never on the worker
// thread: a node's replicas are dumped at once, and launches and other stops do not wait behind
// them. The stacks captured before a stop are reported (journaled) before the stop is sent, so
// the scheduler has them before the run's exit.
#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "common/log_context.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {

trainctl::v1::ReplicaStacks Agent::CaptureRun(const std::string& run_id,
                                              const std::string& reason) {
  const absl::Time start = absl::Now();
  trainctl::v1::ReplicaStacks stacks;
  const pid_t group = runtime_->ProcessGroupOf(run_id);
  if (group <= 0) {
    stacks.set_error("the run is not running on this node (it ended, or is still starting)");
  } else {
    stacks = CaptureStacks(ProcessGroupMembers(group), options_.stacks);
  }
  stacks.set_run_id(run_id);
  stacks.set_node(options_.node);
  stacks.set_reason(reason);
  *stacks.mutable_capture_time() = MsToTimestamp(absl::ToUnixMillis(start));
  spdlog::info("run {}: stacks captured ({}) in {}: {}", run_id, reason,
               absl::FormatDuration(absl::Now() - start),
               !stacks.error().empty()    ? stacks.error()
               : stacks.summary().empty() ? std::string("no frame named")
                                          : stacks.summary());
  return stacks;
}

void Agent::CaptureThenStop(const trainctl::v1::StopReplica& stop) {
  auto stop_now = [this, stop] {
    LogScope scope = LogScope::ForRun(stop.run_id());
    if (absl::Status s = runtime_->Stop(stop.run_id(), stop.grace_period_ms(), stop.reason());
        !s.ok()) {
      spdlog::warn("run {}: cannot stop: {}", stop.run_id(), std::string(s.message()));
    }
  };
  // Nothing to capture (captures off; a run still starting, or ended): stop it at once.
  if (options_.stacks.timeout <= absl::ZeroDuration() ||
      runtime_->ProcessGroupOf(stop.run_id()) <= 0) {
    return stop_now();
  }
  const bool posted = stack_captures_->Post([this, stop, stop_now] {
    {
      LogScope scope = LogScope::ForRun(stop.run_id());
      trainctl::v1::AgentMessage report;
      *report.mutable_stacks()->mutable_stacks() = CaptureRun(stop.run_id(), stop.capture_stacks());
      AddReport(std::move(report));
    }
    stop_now();
  });
  if (!posted) {
    spdlog::warn("run {}: too many stack captures wait; stopping it without its stacks",
                 stop.run_id());
    stop_now();
  }
}

void Agent::DumpStacksNow(const trainctl::v1::DumpStacks& request) {
  auto answer = [this, request](trainctl::v1::ReplicaStacks stacks) {
    trainctl::v1::AgentMessage reply;
    reply.mutable_stacks()->set_request_id(request.request_id());
    *reply.mutable_stacks()->mutable_stacks() = std::move(stacks);
    absl::MutexLock lock(&mu_);
    outbox_.push_back(std::move(reply));
  };
  if (options_.stacks.timeout <= absl::ZeroDuration()) {
    trainctl::v1::ReplicaStacks none;
    none.set_run_id(request.run_id());
    none.set_error("this node's agent captures no stacks (--stack-timeout 0)");
    return answer(std::move(none));
  }
  const bool posted = stack_captures_->Post([this, request, answer] {
    LogScope scope = LogScope::ForRun(request.run_id());
    answer(CaptureRun(request.run_id(), "requested"));
  });
  if (!posted) {
    trainctl::v1::ReplicaStacks busy;
    busy.set_run_id(request.run_id());
    busy.set_error("too many stack captures wait on this node; try again");
    answer(std::move(busy));
  }
}

}  // namespace trainctl::agent
