// NodeRegistry: liveness. Heartbeats, the lost timeout, and the fence wait before a LOST node's
// replicas move (node_health.h, "Fencing"); a LOST node that is heard from again.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"
#include "model/model_proto.h"
#include "scheduler/node_registry.h"

namespace trainctl::sched {
namespace {

// The fence's times to the millisecond ("3.2s", "800ms"): FormatDuration keeps whole seconds.
std::string FenceTime(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(1)));
}

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
                        FenceTime(FenceAfter(policy_.lost_timeout)), " (then it stops them)"));
}

void NodeRegistry::Heartbeat(const std::string& name, absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return;
  node->last_heartbeat = now;
  if (node->lost && node->connected) Returned(node, "its agent is heard from again", now, fx);
}

void NodeRegistry::Returned(Node* node, const std::string& how, absl::Time now, Effects* fx) {
  node->lost = false;
  node->status.health_description = 
      absl::StrCat("The host rejoined at ", FormatRfc3339(ToMs(now)), " after it was lost");
  if (node->move_at.has_value()) {
    // Back before its replicas moved: they stay. Those its agent fenced meanwhile are reported
    // as it reconnects, like any exit.
    node->move_at.reset();
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
  const absl::Time first = FirstCheck();
  const absl::Duration margin = FenceMargin(policy_.lost_timeout);
  std::vector<Lost> lost;
  for (auto& [name, node] : nodes_) {
    if (node.move_at == kMoveAfterFirstCheck) node.move_at = first + margin;
    const absl::Time heard = std::max(node.last_heartbeat, first);
    if (node.lost || now - heard < policy_.lost_timeout) continue;
    node.lost = true;
    node.draining = false;
    // Counted from when it was heard, not from now: a late check moves no later than needed.
    node.move_at = heard + policy_.lost_timeout + margin;
    const std::string why =
        absl::StrCat("no heartbeat for ", FormatDuration(ToMs(now - heard)), " (lost timeout ",
                     FormatDuration(ToMs(policy_.lost_timeout)), ")");
    node.status.health_description = 
        absl::StrCat("The host stopped responding at ", FormatRfc3339(ToMs(heard)), ": ", why);
    AddEvent(fx, now, nullptr, "", name, "NodeLost",
             absl::StrCat(why, "; its replicas move to other nodes in ",
                          FenceTime(std::max(*node.move_at - now, absl::ZeroDuration())),
                          ", once its agent has fenced them (it stops them after ",
                          FenceTime(FenceAfter(policy_.lost_timeout)),
                          " without word from the scheduler)"));
    Refresh(&node, why, now, fx);
    lost.push_back({name, absl::StrCat("node ", name, " was lost: ", why)});
  }
  return lost;
}

std::vector<NodeRegistry::Lost> NodeRegistry::DueMoves(absl::Time now, Effects* fx) {
  const absl::Time first = FirstCheck();
  std::vector<Lost> due;
  for (auto& [name, node] : nodes_) {
    // A move whose time is not known yet (kMoveAfterFirstCheck) is never due.
    if (!node.lost || !node.move_at.has_value() || now < *node.move_at) continue;
    node.move_at.reset();
    const std::string why =
        absl::StrCat("node ", name, " was lost: no heartbeat for ",
                     FormatDuration(ToMs(now - std::max(node.last_heartbeat, first))),
                     " (lost timeout ", FormatDuration(ToMs(policy_.lost_timeout)), "); waited ",
                     FenceTime(FenceMargin(policy_.lost_timeout)),
                     " more for its agent to fence its replicas (it stops them after ",
                     FenceTime(FenceAfter(policy_.lost_timeout)),
                     " without word from the scheduler)");
    AddEvent(fx, now, nullptr, "", name, "NodeFenced",
             absl::StrCat(why, "; moving them to other nodes"));
    due.push_back({name, why});
  }
  return due;
}

}  // namespace trainctl::sched
