// NodeRegistry's maintenance windows (node_registry.h, "Maintenance windows"): recording and
// clearing a node's window, draining the node at its start and uncordoning it after its end.
#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "scheduler/maintenance.h"
#include "scheduler/node_registry.h"

namespace trainctl::sched {

absl::Status NodeRegistry::SetMaintenance(const std::string& name,
                                          const std::optional<v1::MaintenanceWindow>& window,
                                          absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return absl::NotFoundError(absl::StrCat("node ", name, " not found"));
  const bool was_drained = node->status.has_maintenance() && node->status.maintenance().drained();
  if (window.has_value()) {
    v1::MaintenanceWindow w = *window;
    // A window replaced while the node is down for the old one keeps the node's hold: it is
    // lifted when the new window ends.
    w.set_drained(was_drained);
    *node->status.mutable_maintenance() = std::move(w);
    AddEvent(fx, now, nullptr, "", name, "NodeMaintenanceScheduled",
             absl::StrCat("maintenance window ", DescribeWindow(node->status.maintenance()),
                          ", from the ", node->status.maintenance().source()));
  } else {
    if (!node->status.has_maintenance()) return absl::OkStatus();
    AddEvent(fx, now, nullptr, "", name, "NodeMaintenanceCleared",
             absl::StrCat("maintenance window ", DescribeWindow(node->status.maintenance()),
                          " removed"));
    node->status.clear_maintenance();
    if (was_drained) {
      (void)Uncordon(name, now, fx);
    }
  }
  fx->nodes.insert(name);
  Changed();
  return absl::OkStatus();
}

void NodeRegistry::MaintenanceReported(const std::string& name, const v1::MaintenanceReport& report,
                                       absl::Time now, Effects* fx) {
  const Node* node = Find(name);
  if (node == nullptr) return;
  const bool operators =
      node->status.has_maintenance() && node->status.maintenance().source() != "agent";
  if (operators) return;  // an operator's window stands until an operator changes it
  if (!report.has_window()) {
    if (node->status.has_maintenance()) (void)SetMaintenance(name, std::nullopt, now, fx);
    return;
  }
  v1::MaintenanceWindow w = report.window();
  w.set_source("agent");
  w.set_drained(false);
  // The agent validates its file and logs what is wrong; the core does no I/O.
  if (!ValidateWindow(w, "").ok()) return;
  if (node->status.has_maintenance()) {
    v1::MaintenanceWindow current = node->status.maintenance();
    current.set_drained(false);
    if (current.SerializeAsString() == w.SerializeAsString()) return;  // unchanged
  }
  (void)SetMaintenance(name, w, now, fx);
}

std::vector<NodeRegistry::Lost> NodeRegistry::StartMaintenance(absl::Time now, Effects* fx) {
  std::vector<Lost> out;
  for (auto& [name, node] : nodes_) {
    if (!node.status.has_maintenance()) continue;
    v1::MaintenanceWindow& w = *node.status.mutable_maintenance();
    if (w.drained() || WindowStart(w) > now || WindowEnd(w) <= now) continue;
    w.set_drained(true);
    const std::string reason = absl::StrCat("maintenance window ", DescribeWindow(w));
    absl::StatusOr<std::string> why = Drain(name, reason, 0, now, fx);
    if (!why.ok()) continue;  // cannot happen: the window's reason is valid
    out.push_back({name, *why});
  }
  return out;
}

void NodeRegistry::EndMaintenance(absl::Time now, Effects* fx) {
  std::vector<std::string> ended;
  for (const auto& [name, node] : nodes_) {
    if (node.status.has_maintenance() && WindowEnd(node.status.maintenance()) <= now) {
      ended.push_back(name);
    }
  }
  for (const std::string& name : ended) {
    Node* node = FindMutable(name);
    const v1::MaintenanceWindow w = node->status.maintenance();
    node->status.clear_maintenance();
    AddEvent(fx, now, nullptr, "", name, "NodeMaintenanceEnded",
             absl::StrCat("maintenance window ", DescribeWindow(w), " ended",
                          w.drained() ? "; the node takes work again once its checks pass" : ""));
    fx->nodes.insert(name);
    Changed();
    if (w.drained()) (void)Uncordon(name, now, fx);
  }
}

absl::Time NodeRegistry::NextMaintenanceChange(absl::Time now) const {
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [name, node] : nodes_) {
    if (!node.status.has_maintenance()) continue;
    const absl::Time start = WindowStart(node.status.maintenance());
    const absl::Time end = WindowEnd(node.status.maintenance());
    if (start > now) next = std::min(next, start);
    if (end > now) next = std::min(next, end);
  }
  return next;
}

}  // namespace trainctl::sched
