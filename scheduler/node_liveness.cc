// NodeRegistry: liveness. Heartbeats, the lost timeout, and the fence wait before a LOST node's
// replicas move (node_health.h, "Fencing"); a LOST node that is heard from again.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"
#include "scheduler/node_registry.h"

namespace trainctl::sched {
namespace {

// The fence's times to the millisecond ("3.2s", "800ms"): FormatDuration keeps whole seconds.
std::string FenceTime(int64_t ms) { return absl::FormatDuration(absl::Milliseconds(ms)); }

}  // namespace

void NodeRegistry::Disconnect(const std::string& name, absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr || !node->connected) return;
  node->connected = false;
  Changed();
  fx->nodes.insert(name);
  AddEvent(fx, now, nullptr, "", name, "NodeDisconnected",
           absl::StrCat("the agent's stream closed; its replicas keep running unless its agent "
                        "has no word from the scheduler for ",
                        FenceTime(FenceAfterMs(policy_.lost_timeout_ms)), " (then it stops them)"));
}

void NodeRegistry::Heartbeat(const std::string& name, absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return;
  node->last_heartbeat_ms = ToMs(now);
  if (node->lost && node->connected) Returned(node, "its agent is heard from again", now, fx);
}

void NodeRegistry::Returned(Node* node, const std::string& how, absl::Time now, Effects* fx) {
  node->lost = false;
  node->status.set_health_description(
      absl::StrCat("The host rejoined at ", FormatRfc3339(ToMs(now)), " after it was lost"));
  if (node->move_at_ms != 0) {
    // Back before its replicas moved: they stay. Those its agent fenced meanwhile are reported
    // as it reconnects, like any exit.
    node->move_at_ms = 0;
    AddEvent(fx, now, nullptr, "", node->name, "NodeReturned",
             absl::StrCat(how,
                          " after the node was lost, before its replicas moved: they stay on "
                          "it; those its agent fenced are reported as exits"));
  } else {
    AddEvent(fx, now, nullptr, "", node->name, "NodeReturned",
             absl::StrCat(how,
                          " after the node was lost; runs moved elsewhere meanwhile are "
                          "stopped on it"));
  }
  for (const std::string& run_id : node->stale_runs) {
    fx->commands.push_back({node->name, StopMessage(run_id, kDefaultStopGraceMs,
                                                    "moved to another node while this node "
                                                    "was lost")});
  }
  node->stale_runs.clear();
  Refresh(node, how, now, fx);
}

std::vector<NodeRegistry::Lost> NodeRegistry::DetectLost(absl::Time now, Effects* fx) {
  if (restored_ && first_check_ == absl::InfinitePast()) first_check_ = now;
  const int64_t now_ms = ToMs(now);
  const int64_t first_ms = first_check_ == absl::InfinitePast() ? 0 : ToMs(first_check_);
  const int64_t margin_ms = FenceMarginMs(policy_.lost_timeout_ms);
  std::vector<Lost> lost;
  for (auto& [name, node] : nodes_) {
    if (node.move_at_ms == kMoveAfterFirstCheck) node.move_at_ms = first_ms + margin_ms;
    const int64_t heard = std::max(node.last_heartbeat_ms, first_ms);
    if (node.lost || now_ms - heard < policy_.lost_timeout_ms) continue;
    node.lost = true;
    node.draining = false;
    // Counted from when it was heard, not from now: a late check moves no later than needed.
    node.move_at_ms = heard + policy_.lost_timeout_ms + margin_ms;
    const std::string why =
        absl::StrCat("no heartbeat for ", FormatDuration(now_ms - heard), " (lost timeout ",
                     FormatDuration(policy_.lost_timeout_ms), ")");
    node.status.set_health_description(
        absl::StrCat("The host stopped responding at ", FormatRfc3339(heard), ": ", why));
    AddEvent(fx, now, nullptr, "", name, "NodeLost",
             absl::StrCat(why, "; its replicas move to other nodes in ",
                          FenceTime(std::max<int64_t>(node.move_at_ms - now_ms, 0)),
                          ", once its agent has fenced them (it stops them after ",
                          FenceTime(FenceAfterMs(policy_.lost_timeout_ms)),
                          " without word from the scheduler)"));
    Refresh(&node, why, now, fx);
    lost.push_back({name, absl::StrCat("node ", name, " was lost: ", why)});
  }
  return lost;
}

std::vector<NodeRegistry::Lost> NodeRegistry::DueMoves(absl::Time now, Effects* fx) {
  const int64_t now_ms = ToMs(now);
  const int64_t fence_after_ms = FenceAfterMs(policy_.lost_timeout_ms);
  const int64_t first_ms = first_check_ == absl::InfinitePast() ? 0 : ToMs(first_check_);
  std::vector<Lost> due;
  for (auto& [name, node] : nodes_) {
    if (!node.lost || node.move_at_ms <= 0 || now_ms < node.move_at_ms) continue;
    node.move_at_ms = 0;
    const std::string why =
        absl::StrCat("node ", name, " was lost: no heartbeat for ",
                     FormatDuration(now_ms - std::max(node.last_heartbeat_ms, first_ms)),
                     " (lost timeout ", FormatDuration(policy_.lost_timeout_ms), "); waited ",
                     FenceTime(FenceMarginMs(policy_.lost_timeout_ms)),
                     " more for its agent to fence its replicas (it stops them after ",
                     FenceTime(fence_after_ms), " without word from the scheduler)");
    AddEvent(fx, now, nullptr, "", name, "NodeFenced",
             absl::StrCat(why, "; moving them to other nodes"));
    due.push_back({name, why});
  }
  return due;
}

}  // namespace trainctl::sched
