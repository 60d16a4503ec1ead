// NodeMaintenance: each node's maintenance window (rules in maintenance.h) — recording and
// clearing it, draining the node at its start and, unless an operator holds the node too,
// uncordoning it after its end.
//
// What it owns: the windows in each node's status in the registry's map (NodeStatus.maintenance,
// agent_maintenance) and whether a window holds its node's cordon (holds_cordon).
// What it decides: when a window drains its node (its start) and lets it go (its end, or its
// removal), which of an agent's reported windows apply (not one an operator set, nor the same
// one again), and when the next window starts or ends.
// What it never does: derive or set a node's state (it asks NodeOps::Refresh and
// NodeOps::StartDrain), lift an operator's cordon, or know of jobs: moving replicas off a node
// whose window began is the core's answer to what Start returns.
//
//   NodeMaintenance maintenance(&nodes, &ops);
//   (void)maintenance.Set("node-a", window, now, &fx);
//   for (const NodeMove& m : maintenance.Start(now, &fx)) { ... move m.node's replicas ... }
//
// Thread-safety: none; owned by the NodeRegistry.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/node_ops.h"

namespace trainctl::sched {

class NodeMaintenance {
 public:
  // `nodes` (the registry's nodes, by name) and `ops` must outlive it.
  NodeMaintenance(std::map<std::string, Node>* nodes, NodeOps* ops) : nodes_(nodes), ops_(ops) {}

  NodeMaintenance(const NodeMaintenance&) = delete;
  NodeMaintenance& operator=(const NodeMaintenance&) = delete;

  // Records the node's window, replacing any, or clears it (nullopt), uncordoning a node whose
  // cordon is the window's alone (MaintenanceWindow.holds_cordon). NOT_FOUND for an unknown node.
  // `window` is valid (ValidateWindow).
  absl::Status Set(const std::string& name, const std::optional<v1::MaintenanceWindow>& window,
                   absl::Time now, Effects* fx);
  // An agent's --maintenance-file: sets or clears the node's window unless an operator set it.
  // A window is applied only when it differs from the one the agent reported last
  // (NodeStatus.agent_maintenance, persisted), so a window an operator cleared does not come
  // back at the agent's next registration. Unknown nodes and invalid windows are ignored.
  void Reported(const std::string& name, const v1::MaintenanceReport& report, absl::Time now,
                Effects* fx);
  // The nodes whose window began by `now` and that were not drained for it yet: each is drained
  // (cordon + DRAINING) now, by its window. Returns each with the reason its replicas move with.
  std::vector<NodeMove> Start(absl::Time now, Effects* fx);
  // Windows that ended by `now` are removed; the nodes whose cordon was the window's alone are
  // uncordoned (and take work once their checks pass); an operator's cordon stays.
  void End(absl::Time now, Effects* fx);
  // The next start or end of a window after `now`; InfiniteFuture when none.
  absl::Time NextChange(absl::Time now) const;

  // An operator cordoned, drained, uncordoned or revoked the node: the hold is the operator's,
  // and its window's end no longer lifts it. Returns whether the window held the node's cordon
  // until now.
  static bool OperatorTookHold(Node* node);

 private:
  Node* FindMutable(const std::string& name);
  // Lifts the cordon and drain the node's window set (not the flapping hold), with `why` in the
  // NodeUncordoned event; asks a node whose checks still fail to run them at once.
  void LiftHold(Node* node, const std::string& why, absl::Time now, Effects* fx);

  std::map<std::string, Node>* const nodes_;
  NodeOps* const ops_;
};

}  // namespace trainctl::sched
