// NodeMaintenance (node_maintenance.h): recording and clearing a node's maintenance window,
// draining the node at its start and, unless an operator holds it too, uncordoning it after its
// end.
#include "scheduler/node_maintenance.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "scheduler/maintenance.h"
#include "scheduler/node_health.h"

namespace trainctl::sched {

Node* NodeMaintenance::FindMutable(const std::string& name) {
  auto it = nodes_->find(name);
  return it == nodes_->end() ? nullptr : &it->second;
}

absl::Status NodeMaintenance::Set(const std::string& name,
                                  const std::optional<v1::MaintenanceWindow>& window,
                                  absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return absl::NotFoundError(absl::StrCat("node ", name, " not found"));
  const bool was_drained =
      node->status.maintenance.has_value() && node->status.maintenance->drained();
  const bool held =
      node->status.maintenance.has_value() && node->status.maintenance->holds_cordon();
  if (window.has_value()) {
    v1::MaintenanceWindow w = *window;
    // A window replaced while the node is down for the old one keeps the node's hold: it is
    // lifted when the new window ends.
    w.set_drained(was_drained);
    w.set_holds_cordon(held);
    node->status.maintenance = std::move(w);
    AddEvent(fx, now, nullptr, "", name, "NodeMaintenanceScheduled",
             absl::StrCat("maintenance window ", DescribeWindow(*node->status.maintenance),
                          ", from the ", node->status.maintenance->source()));
  } else {
    if (!node->status.maintenance.has_value()) return absl::OkStatus();
    AddEvent(
        fx, now, nullptr, "", name, "NodeMaintenanceCleared",
        absl::StrCat("maintenance window ", DescribeWindow(*node->status.maintenance), " removed"));
    node->status.maintenance.reset();
    if (held) LiftHold(node, "uncordoned: its maintenance window was cleared", now, fx);
  }
  fx->nodes.insert(name);
  ops_->Changed();
  return absl::OkStatus();
}

void NodeMaintenance::Reported(const std::string& name, const v1::MaintenanceReport& report,
                               absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return;
  std::optional<v1::MaintenanceWindow> reported;
  if (report.has_window()) {
    v1::MaintenanceWindow w = report.window();
    w.set_source("agent");
    w.set_drained(false);
    w.set_holds_cordon(false);
    // The agent validates its file and logs what is wrong; the core does no I/O.
    if (!ValidateWindow(w, "").ok()) return;
    // A window is applied once, when the agent first reports it: the same window again (the
    // agent registers again, its file unchanged) leaves the node's window as an operator or the
    // window's end left it.
    if (node->status.agent_maintenance.has_value() &&
        SameWindow(*node->status.agent_maintenance, w)) {
      return;
    }
    node->status.agent_maintenance = w;
    fx->nodes.insert(name);
    reported = std::move(w);
  } else if (node->status.agent_maintenance.has_value()) {
    node->status.agent_maintenance.reset();
    fx->nodes.insert(name);
  }
  const bool operators =
      node->status.maintenance.has_value() && node->status.maintenance->source() != "agent";
  if (operators) return;  // an operator's window stands until an operator changes it
  if (!reported.has_value()) {
    if (node->status.maintenance.has_value()) (void)Set(name, std::nullopt, now, fx);
    return;
  }
  if (node->status.maintenance.has_value() && SameWindow(*node->status.maintenance, *reported)) {
    return;  // unchanged
  }
  (void)Set(name, *reported, now, fx);
}

std::vector<NodeMove> NodeMaintenance::Start(absl::Time now, Effects* fx) {
  std::vector<NodeMove> out;
  for (auto& [name, node] : *nodes_) {
    if (!node.status.maintenance.has_value()) continue;
    v1::MaintenanceWindow& w = *node.status.maintenance;
    if (w.drained() || WindowStart(w) > now || WindowEnd(w) <= now) continue;
    w.set_drained(true);
    // An operator's cordon (or drain) already in place stays after the window.
    w.set_holds_cordon(!node.status.cordoned);
    const std::string span = DescribeWindowSpan(w);
    ops_->StartDrain(&node,
                     absl::StrCat("drained by its maintenance window ", span, ": ", w.reason()),
                     absl::StrCat(w.reason(), " (maintenance window ", span, ")"),
                     absl::ZeroDuration(), now, fx);
    out.push_back({name, absl::StrCat("node ", name, " is draining for its maintenance window ",
                                      span, ": ", w.reason())});
  }
  return out;
}

void NodeMaintenance::End(absl::Time now, Effects* fx) {
  std::vector<std::string> ended;
  for (const auto& [name, node] : *nodes_) {
    if (node.status.maintenance.has_value() && WindowEnd(*node.status.maintenance) <= now) {
      ended.push_back(name);
    }
  }
  for (const std::string& name : ended) {
    Node* node = FindMutable(name);
    const v1::MaintenanceWindow w = *node->status.maintenance;
    node->status.maintenance.reset();
    std::string after;
    if (w.holds_cordon()) {
      after = "; the node takes work again once its checks pass";
    } else if (w.drained() && node->status.cordoned) {
      after = "; the node stays cordoned: an operator cordoned it (trainctl node uncordon)";
    }
    AddEvent(fx, now, nullptr, "", name, "NodeMaintenanceEnded",
             absl::StrCat("maintenance window ", DescribeWindow(w), " ended", after));
    fx->nodes.insert(name);
    ops_->Changed();
    if (w.holds_cordon()) {
      LiftHold(node, "uncordoned: its maintenance window ended", now, fx);
    }
  }
}

bool NodeMaintenance::OperatorTookHold(Node* node) {
  if (!node->status.maintenance.has_value() || !node->status.maintenance->holds_cordon())
    return false;
  node->status.maintenance->set_holds_cordon(false);
  return true;
}

void NodeMaintenance::LiftHold(Node* node, const std::string& why_lifted, absl::Time now,
                               Effects* fx) {
  node->status.cordoned = false;
  node->status.drain_deadline = absl::ZeroDuration();
  node->draining = false;
  std::string why = why_lifted;
  if (FailingChecks(node->status)) {
    absl::StrAppend(&why, "; stays out until its checks pass");
    if (node->connected) {
      v1::SchedulerMessage msg;
      msg.mutable_run_checks();
      fx->commands.push_back({node->name, std::move(msg)});
    }
  }
  AddEvent(fx, now, nullptr, "", node->name, "NodeUncordoned", why);
  ops_->Refresh(node, why, now, fx);
}

absl::Time NodeMaintenance::NextChange(absl::Time now) const {
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [name, node] : *nodes_) {
    if (!node.status.maintenance.has_value()) continue;
    const absl::Time start = WindowStart(*node.status.maintenance);
    const absl::Time end = WindowEnd(*node.status.maintenance);
    if (start > now) next = std::min(next, start);
    if (end > now) next = std::min(next, end);
  }
  return next;
}

}  // namespace trainctl::sched
