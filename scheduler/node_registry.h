// NodeRegistry: every node the scheduler knows, its connection, health state, operator holds,
// maintenance window, and what placed replicas hold on it.
//
// What it owns: the node map. It keeps in itself each node's health and holds: registration,
// check runs (isolation, flapping, recovery), cordon, drain, uncordon, revoke and delete, and
// the one place a node's state is derived (Refresh, node_health.h). The rest is in its parts,
// each over the same map, each with its own header contract:
//   NodeLiveness     (node_liveness.h)     connection, heartbeats, the lost timeout, the fence
//                                          margin and due moves, stale runs, restore's first check
//   NodeMaintenance  (node_maintenance.h)  maintenance windows: set, reported, start, end, hold
//   NodeBook         (node_book.h)         what replicas hold: usage, ports, GPUs, the free index
// The parts ask back through NodeOps (node_ops.h), which the registry implements: re-derive a
// node's state, record a change, drain a node. The public methods below route to them, so the
// core talks to the registry alone.
// What it decides: node state from reports and time (R11-R18). Each change appends its event and
// the node's row to `fx`.
// What it never does: know of jobs. What replicas hold is told to its book by the job
// lifecycle's ReplicaBinding, and moving replicas off a node is the core's answer to what these
// methods report.
//
//   NodeRegistry nodes(policy);
//   nodes.Register(reg, now, &fx);                  // NodeRegistered, READY
//   if (nodes.ApplyCheckRun("node-a", run, now, &fx).isolated) { ... move its replicas ... }
//   std::vector<NodeFree> free = nodes.book().FreeNodes();  // for placement
//
// Thread-safety: none; owned by the core.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/node_book.h"
#include "scheduler/node_health.h"
#include "scheduler/node_liveness.h"
#include "scheduler/node_maintenance.h"
#include "scheduler/node_ops.h"
#include "scheduler/placement.h"
#include "scheduler/port_pool.h"

namespace trainctl::sched {

class NodeRegistry : private NodeOps {
 public:
  using NodeUsage = NodeBook::NodeUsage;
  // A node whose replicas move, and why (node_ops.h).
  using Lost = NodeMove;

  explicit NodeRegistry(NodePolicy policy)
      : policy_(policy),
        book_(&nodes_, policy.ports),
        liveness_(&nodes_, policy.lost_timeout, this),
        maintenance_(&nodes_, this) {}

  NodeRegistry(const NodeRegistry&) = delete;
  NodeRegistry& operator=(const NodeRegistry&) = delete;

  // Loads persisted nodes: each starts disconnected; LOST and DRAINING are kept. After a restore
  // the first lost-timeout check counts every node as heard from at that check's time, so a
  // scheduler restart gives every agent a full lost timeout to reconnect. A node restored LOST
  // may have replicas that never moved (the scheduler stopped between LOST and the move): they
  // move one fence margin after that first check (NodeLiveness).
  void Restore(std::vector<Node> nodes);

  // --- Reports from agents -------------------------------------------------------------------

  // An agent (re)connected: records the node, brings it back from LOST (stopping the runs that
  // moved off it meanwhile), and applies its startup check run.
  void Register(const v1::Register& reg, absl::Time now, Effects* fx);
  void Disconnect(const std::string& name, absl::Time now, Effects* fx) {
    liveness_.Disconnect(name, now, fx);
  }
  // A LOST node whose agent kept its stream and is heard from again is back.
  void Heartbeat(const std::string& name, absl::Time now, Effects* fx) {
    liveness_.Heartbeat(name, now, fx);
  }

  struct CheckOutcome {
    // The node is ISOLATED after this run (by checks or flapping).
    bool isolated = false;
  };
  // Records a check run: isolation, flapping and recovery, with their events. Unknown nodes are
  // ignored.
  CheckOutcome ApplyCheckRun(const std::string& name, const v1::CheckRun& run, absl::Time now,
                             Effects* fx);
  // The node's agent is shutting down: no new work until it registers again. False when it was
  // already known to be.
  bool MarkShuttingDown(const std::string& name, absl::Time now, Effects* fx);
  // The node's agent reported on run `run_id`, which is `owner`'s: counted (Node.ignored_reports),
  // with a NodeReportIgnored event the first time. Unknown nodes are ignored.
  void IgnoredReport(const std::string& name, const std::string& run_id, const std::string& owner,
                     absl::Time now, Effects* fx);

  // --- Operators -----------------------------------------------------------------------------

  // NOT_FOUND for an unknown node, INVALID_ARGUMENT for a reason over 1024 characters.
  absl::Status Cordon(const std::string& name, const std::string& reason, absl::Time now,
                      Effects* fx);
  // Lifts the cordon, a drain and the flapping hold; asks a node whose checks still fail to run
  // them again at once.
  absl::Status Uncordon(const std::string& name, absl::Time now, Effects* fx);
  // Cordons the node and marks it draining. Returns the reason its replicas move with.
  // INVALID_ARGUMENT without a reason or with a deadline outside 0s..24h.
  absl::StatusOr<std::string> Drain(const std::string& name, const std::string& reason,
                                    absl::Duration deadline, absl::Time now, Effects* fx);

  // Revokes the certificate the node's agent registered with: the node is disconnected,
  // cordoned and LOST. Returns the reason its replicas move with. FAILED_PRECONDITION when it
  // never registered with a certificate.
  absl::StatusOr<std::string> Revoke(const std::string& name, const std::string& reason,
                                     absl::Time now, Effects* fx);
  // Forgets a node whose agent is not connected (FAILED_PRECONDITION otherwise; the caller checks
  // that no replica is on it): a NodeDeleted event, and fx->deleted_nodes keeps the certificates
  // revoked for it. Returns the node as it was.
  absl::StatusOr<v1::Node> Delete(const std::string& name, const std::string& reason,
                                  absl::Time now, Effects* fx);
  // An agent stream claiming this node was refused (a certificate for another node, a revoked
  // certificate): the event row. The node need not exist.
  void Refused(const std::string& name, const std::string& why, absl::Time now, Effects* fx);

  // --- Maintenance windows (NodeMaintenance, node_maintenance.h; rules in maintenance.h) -----

  // Records the node's window (NodeStatus.maintenance), replacing any, or clears it (nullopt),
  // uncordoning a node whose cordon is the window's alone (MaintenanceWindow.holds_cordon).
  // NOT_FOUND for an unknown node. `window` is valid (ValidateWindow).
  absl::Status SetMaintenance(const std::string& name,
                              const std::optional<v1::MaintenanceWindow>& window, absl::Time now,
                              Effects* fx) {
    return maintenance_.Set(name, window, now, fx);
  }
  // An agent's --maintenance-file: sets or clears the node's window unless an operator set it.
  // A window is applied only when it differs from the one the agent reported last
  // (NodeStatus.agent_maintenance, persisted), so a window an operator cleared does not come
  // back at the agent's next registration. Unknown nodes and invalid windows are ignored.
  void MaintenanceReported(const std::string& name, const v1::MaintenanceReport& report,
                           absl::Time now, Effects* fx) {
    maintenance_.Reported(name, report, now, fx);
  }
  // The nodes whose window began by `now` and that were not drained for it yet: each is drained
  // (cordon + DRAINING) now, by its window. Returns each with the reason its replicas move with.
  std::vector<Lost> StartMaintenance(absl::Time now, Effects* fx) {
    return maintenance_.Start(now, fx);
  }
  // Windows that ended by `now` are removed; the nodes whose cordon was the window's alone are
  // uncordoned (and take work once their checks pass); an operator's cordon stays.
  void EndMaintenance(absl::Time now, Effects* fx) { maintenance_.End(now, fx); }
  // The next start or end of a window after `now`; InfiniteFuture when none.
  absl::Time NextMaintenanceChange(absl::Time now) const { return maintenance_.NextChange(now); }

  // --- Time (liveness: NodeLiveness, node_liveness.h) ---------------------------------------

  // Marks the nodes not heard from within the lost timeout LOST, with their events. Their
  // replicas stay where they are for FenceMargin more (node_health.h): DueMoves says when.
  std::vector<Lost> DetectLost(absl::Time now, Effects* fx) {
    return liveness_.DetectLost(now, fx);
  }
  // The LOST nodes whose agents have fenced their replicas by `now` (lost timeout + margin
  // since they were last heard from), each once: their replicas move now. A node heard from
  // again before then keeps its replicas.
  std::vector<Lost> DueMoves(absl::Time now, Effects* fx) { return liveness_.DueMoves(now, fx); }
  // Draining nodes that hold no replica any more become CORDONED.
  void FinishDrains(absl::Time now, Effects* fx);

  // --- Parts ---------------------------------------------------------------------------------

  // What each node has free: what replicas hold there, its ports and GPUs (node_book.h). Held
  // and released only by the job lifecycle's ReplicaBinding.
  NodeBook& book() { return book_; }
  const NodeBook& book() const { return book_; }

  // A run of a lost node that moved elsewhere: stopped on the node when it comes back.
  void AddStaleRun(const std::string& node, const std::string& run_id) {
    liveness_.AddStaleRun(node, run_id);
  }

  // --- Reads ---------------------------------------------------------------------------------

  const Node* Find(const std::string& name) const;
  const std::map<std::string, Node>& nodes() const { return nodes_; }
  // What the book says (node_book.h), read through the registry by placement's callers.
  NodeUsage UsageOf(const std::string& name) const { return book_.UsageOf(name); }
  std::vector<NodeFree> FreeNodes() const { return book_.FreeNodes(); }
  FreeIndex& PassIndex() { return book_.PassIndex(); }
  const FreeIndex& FreeBook() const { return book_.FreeBook(); }
  bool HasRoom(const std::string& name, const ReplicaDemand& demand) const {
    return book_.HasRoom(name, demand);
  }
  std::vector<NodeFree> IdleNodes() const { return book_.IdleNodes(); }
  // Whether replicas on `name` may restart in place; else why not, in words.
  bool KeepsReplicas(const std::string& name, std::string* why_not) const;
  // The API view of a node: status, resources, free resources and replica count.
  absl::StatusOr<v1::Node> View(const std::string& name) const;
  std::vector<v1::Node> Views() const;

  // Changes whenever what FreeNodes returns may have changed.
  uint64_t version() const { return book_.version(); }
  // Changes whenever what IdleNodes returns may have changed: a node's state, connection or
  // size, not what its replicas hold.
  uint64_t shape_version() const { return shape_version_; }

  // True when a node's state or connection changed since the last call: placement may find
  // room it did not before.
  bool TakeChanged() {
    const bool changed = changed_;
    changed_ = false;
    return changed;
  }

 private:
  Node* FindMutable(const std::string& name);
  // NodeOps (node_ops.h), for the parts and the registry itself.
  // Records a change of what FreeNodes returns.
  void Changed() override {
    changed_ = true;
    ++shape_version_;
    book_.NodesChanged();
  }
  // Re-derives the node's state and health; records the change (and `reason`) when they moved.
  void Refresh(Node* node, const std::string& reason, absl::Time now, Effects* fx) override;
  // Cordons the node and marks it draining: `why` in its event and state reason ("drained by an
  // operator: ..."), `what` in its health description.
  void StartDrain(Node* node, const std::string& why, const std::string& what,
                  absl::Duration deadline, absl::Time now, Effects* fx) override;

  v1::Node ViewOf(const Node& node) const;

  // Constant after construction.
  const NodePolicy policy_;

  std::map<std::string, Node> nodes_;
  // The parts, each over nodes_.
  // What each node has free; reads nodes_.
  NodeBook book_;
  NodeLiveness liveness_;
  NodeMaintenance maintenance_;
  bool changed_ = true;
  uint64_t shape_version_ = 0;
};

}  // namespace trainctl::sched
