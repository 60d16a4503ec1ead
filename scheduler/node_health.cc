#include "scheduler/node_health.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"

namespace trainctl::sched {

absl::Duration FenceMargin(absl::Duration lost_timeout) {
  const absl::Duration ms = absl::Milliseconds(1);
  const absl::Duration floor = absl::Milliseconds(500);
  return std::min(std::max(absl::Trunc(lost_timeout / 5, ms), floor),
                  absl::Trunc(lost_timeout / 2, ms));
}

absl::Duration FenceAfter(absl::Duration lost_timeout) {
  return lost_timeout - FenceMargin(lost_timeout);
}

const v1::CheckRun* LatestRun(const NodeStatus& status, const std::string& phase) {
  for (const v1::CheckRun& run : status.checks) {
    if (run.phase() == phase) return &run;
  }
  return nullptr;
}

bool FailingChecks(const NodeStatus& status) {
  const v1::CheckRun* startup = LatestRun(status, "startup");
  if (startup != nullptr && !startup->passed()) return true;
  const v1::CheckRun* newest = nullptr;
  for (const char* phase : {"periodic", "exit", "preflight", "fabric"}) {
    const v1::CheckRun* run = LatestRun(status, phase);
    if (run == nullptr) continue;
    if (newest == nullptr || TimestampToMs(run->time()) >= TimestampToMs(newest->time())) {
      newest = run;
    }
  }
  return newest != nullptr && !newest->passed();
}

v1::NodeState DeriveState(const Node& node) {
  if (node.lost) return v1::NODE_STATE_LOST;
  if (node.status.flapping || FailingChecks(node.status)) return v1::NODE_STATE_ISOLATED;
  if (node.draining) return v1::NODE_STATE_DRAINING;
  if (node.status.cordoned) return v1::NODE_STATE_CORDONED;
  return v1::NODE_STATE_READY;
}

v1::NodeHealth DeriveHealth(const Node& node) {
  if (node.lost) return v1::NODE_HEALTH_UNKNOWN;
  if (FailingChecks(node.status)) return v1::NODE_HEALTH_UNHEALTHY;
  return node.status.checks.empty() ? v1::NODE_HEALTH_UNKNOWN : v1::NODE_HEALTH_HEALTHY;
}

bool Schedulable(const Node& node) {
  return node.connected && !node.shutting_down && DeriveState(node) == v1::NODE_STATE_READY;
}

bool KeepsReplicas(const Node& node) {
  if (!node.connected || node.shutting_down) return false;
  const v1::NodeState s = DeriveState(node);
  return s == v1::NODE_STATE_READY || s == v1::NODE_STATE_CORDONED;
}

CheckOutcome RecordCheckRun(const NodePolicy& policy, const v1::CheckRun& run, absl::Time now,
                            Node* node) {
  NodeStatus& status = node->status;
  const bool failing_before = FailingChecks(status);
  bool replaced = false;
  for (v1::CheckRun& old : status.checks) {
    if (old.phase() == run.phase()) {
      old = run;
      replaced = true;
    }
  }
  if (!replaced) status.checks.push_back(run);
  const bool failing_now = FailingChecks(status);

  CheckOutcome out;
  out.recovered = failing_before && !failing_now;
  if (failing_now && !failing_before) {
    out.isolated = true;
    std::vector<absl::Time> kept;
    for (absl::Time t : status.isolation_times) {
      if (now - t < policy.flap_window) kept.push_back(t);
    }
    kept.push_back(now);
    status.isolation_times = std::move(kept);
    if (!status.flapping && policy.flap_threshold > 0 &&
        static_cast<int32_t>(status.isolation_times.size()) >= policy.flap_threshold) {
      status.flapping = true;
      out.became_flapping = true;
    }
  }
  return out;
}

std::string FailedItems(const v1::CheckRun& run) {
  std::vector<std::string> failed;
  for (const v1::CheckResult& item : run.items()) {
    if (item.passed()) continue;
    failed.push_back(absl::StrCat("item ", item.item(), " failed: ",
                                  item.message().empty() ? item.measured() : item.message()));
  }
  return failed.empty() ? std::string("no item failed") : absl::StrJoin(failed, "; ");
}

}  // namespace trainctl::sched
