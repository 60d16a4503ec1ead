// NodeLiveness (node_liveness.h): heartbeats, the lost timeout, and the fence wait before a LOST
// node's replicas move (node_health.h, "Fencing"); a LOST node that is heard from again.
#include "scheduler/node_liveness.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"
#include "scheduler/node_health.h"

namespace trainctl::sched {
namespace {

// The fence's times to the millisecond ("3.2s", "800ms"): FormatDuration keeps whole seconds.
std::string FenceTime(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(1)));
}

}  // namespace

Node* NodeLiveness::FindMutable(const std::string& name) {
  auto it = nodes_->find(name);
  return it == nodes_->end() ? nullptr : &it->second;
}

void NodeLiveness::Restore(Node* node) {
  node->connected = false;
  node->lost = node->status.state == v1::NODE_STATE_LOST;
  node->move_at.reset();
  if (node->lost) node->move_at = kMoveAfterFirstCheck;
}

void NodeLiveness::Connected(Node* node, absl::Time now) {
  node->connected = true;
  node->registered = now;
  node->last_heartbeat = now;
}

bool NodeLiveness::Rejoined(Node* node, absl::Time now, Effects* fx) {
  // The runs it reports are reconciled by the core; stale ones it does not report are gone.
  node->stale_runs.clear();
  if (!node->lost) return false;
  Returned(node, "its agent registered again", now, fx);
  return true;
}

void NodeLiveness::Revoked(Node* node) {
  node->connected = false;
  node->lost = true;
  node->move_at.reset();  // the core moves its replicas at once
}

void NodeLiveness::AddStaleRun(const std::string& node, const std::string& run_id) {
  if (Node* n = FindMutable(node)) n->stale_runs.insert(run_id);
}

void NodeLiveness::Disconnect(const std::string& name, absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr || !node->connected) return;
  node->connected = false;
  ops_->Changed();
  fx->nodes.insert(name);
  AddEvent(fx, now, nullptr, "", name, "NodeDisconnected",
           absl::StrCat("the agent's stream closed; its replicas keep running unless its agent "
                        "has no word from the scheduler for ",
                        FenceTime(FenceAfter(lost_timeout_)), " (then it stops them)"));
}

void NodeLiveness::Heartbeat(const std::string& name, absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return;
  node->last_heartbeat = now;
  if (node->lost && node->connected) Returned(node, "its agent is heard from again", now, fx);
}

void NodeLiveness::Returned(Node* node, const std::string& how, absl::Time now, Effects* fx) {
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
    fx->commands.push_back({node->name, StopMessage(run_id, absl::Milliseconds(kDefaultStopGraceMs),
                                                    "moved to another node while this node "
                                                    "was lost")});
  }
  node->stale_runs.clear();
  ops_->Refresh(node, how, now, fx);
}

std::vector<NodeMove> NodeLiveness::DetectLost(absl::Time now, Effects* fx) {
  if (restored_ && first_check_ == absl::InfinitePast()) first_check_ = now;
  const absl::Time first = FirstCheck();
  const absl::Duration margin = FenceMargin(lost_timeout_);
  std::vector<NodeMove> lost;
  for (auto& [name, node] : *nodes_) {
    if (node.move_at == kMoveAfterFirstCheck) node.move_at = first + margin;
    const absl::Time heard = std::max(node.last_heartbeat, first);
    if (node.lost || now - heard < lost_timeout_) continue;
    node.lost = true;
    node.draining = false;
    // Counted from when it was heard, not from now: a late check moves no later than needed.
    node.move_at = heard + lost_timeout_ + margin;
    const std::string why =
        absl::StrCat("no heartbeat for ", FormatDuration(ToMs(now - heard)), " (lost timeout ",
                     FormatDuration(ToMs(lost_timeout_)), ")");
    node.status.health_description =
        absl::StrCat("The host stopped responding at ", FormatRfc3339(ToMs(heard)), ": ", why);
    AddEvent(
        fx, now, nullptr, "", name, "NodeLost",
        absl::StrCat(why, "; its replicas move to other nodes in ",
                     FenceTime(std::max(*node.move_at - now, absl::ZeroDuration())),
                     ", once its agent has fenced them (it stops them after ",
                     FenceTime(FenceAfter(lost_timeout_)), " without word from the scheduler)"));
    ops_->Refresh(&node, why, now, fx);
    lost.push_back({name, absl::StrCat("node ", name, " was lost: ", why)});
  }
  return lost;
}

std::vector<NodeMove> NodeLiveness::DueMoves(absl::Time now, Effects* fx) {
  const absl::Time first = FirstCheck();
  std::vector<NodeMove> due;
  for (auto& [name, node] : *nodes_) {
    // A move whose time is not known yet (kMoveAfterFirstCheck) is never due.
    if (!node.lost || !node.move_at.has_value() || now < *node.move_at) continue;
    node.move_at.reset();
    const std::string why = absl::StrCat(
        "node ", name, " was lost: no heartbeat for ",
        FormatDuration(ToMs(now - std::max(node.last_heartbeat, first))), " (lost timeout ",
        FormatDuration(ToMs(lost_timeout_)), "); waited ", FenceTime(FenceMargin(lost_timeout_)),
        " more for its agent to fence its replicas (it stops them after ",
        FenceTime(FenceAfter(lost_timeout_)), " without word from the scheduler)");
    AddEvent(fx, now, nullptr, "", name, "NodeFenced",
             absl::StrCat(why, "; moving them to other nodes"));
    due.push_back({name, why});
  }
  return due;
}

}  // namespace trainctl::sched
