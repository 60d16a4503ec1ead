// NodeLiveness: whether each node's agent is heard from — its connection, its heartbeats, the
// lost timeout, and the fence wait before a LOST node's replicas move (node_health.h, "Fencing").
//
// What it owns: the liveness facts of each node in the registry's map (Node.connected,
// last_heartbeat, lost, move_at, stale_runs), and after a restore the time of the first
// lost-timeout check, from which every node counts as heard from.
// What it decides: when a node is LOST (no heartbeat within the lost timeout), when its replicas
// move (one fence margin later, so its agent has fenced them), and that a LOST node heard from
// again is back (stopping the runs that moved off it meanwhile).
// What it never does: derive or set a node's state (it asks NodeOps::Refresh), touch its health
// checks, holds or maintenance window, or know of jobs: moving replicas is the core's answer to
// what DetectLost and DueMoves return.
//
//   NodeLiveness liveness(&nodes, lost_timeout, &ops);
//   liveness.Heartbeat("node-a", now, &fx);
//   for (const NodeMove& m : liveness.DueMoves(now, &fx)) { ... move m.node's replicas ... }
//
// Thread-safety: none; owned by the NodeRegistry.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/node_ops.h"

namespace trainctl::sched {

class NodeLiveness {
 public:
  // `nodes` (the registry's nodes, by name) and `ops` must outlive it.
  NodeLiveness(std::map<std::string, Node>* nodes, absl::Duration lost_timeout, NodeOps* ops)
      : nodes_(nodes), lost_timeout_(lost_timeout), ops_(ops) {}

  NodeLiveness(const NodeLiveness&) = delete;
  NodeLiveness& operator=(const NodeLiveness&) = delete;

  // A persisted node as it is loaded: disconnected; LOST when it was stored LOST, its replicas
  // (which may never have moved) due one fence margin after the first DetectLost. After a
  // restore that first check counts every node as heard from at its time, so a scheduler restart
  // gives every agent a full lost timeout to reconnect.
  void Restore(Node* node);
  // Every persisted node is loaded (there may be none): from now on the first DetectLost's time
  // counts as each node's last heartbeat at the latest.
  void Restored() { restored_ = true; }

  // The node's agent (re)registered at `now`: connected and heard from.
  void Connected(Node* node, absl::Time now);
  // After a registration's reconciliation: the runs it did not report are gone; a LOST node is
  // back (true; its state is refreshed). False when it was not LOST: the caller refreshes it.
  bool Rejoined(Node* node, absl::Time now, Effects* fx);
  void Disconnect(const std::string& name, absl::Time now, Effects* fx);
  // A LOST node whose agent kept its stream and is heard from again is back.
  void Heartbeat(const std::string& name, absl::Time now, Effects* fx);
  // The node's certificate was revoked: disconnected and LOST at once, with no fence wait (the
  // core moves its replicas now).
  void Revoked(Node* node);

  // Marks the nodes not heard from within the lost timeout LOST, with their events. Their
  // replicas stay where they are for FenceMargin more: DueMoves says when.
  std::vector<NodeMove> DetectLost(absl::Time now, Effects* fx);
  // The LOST nodes whose agents have fenced their replicas by `now` (lost timeout + margin since
  // they were last heard from), each once: their replicas move now. A node heard from again
  // before then keeps its replicas.
  std::vector<NodeMove> DueMoves(absl::Time now, Effects* fx);

  // A run of a lost node that moved elsewhere: stopped on the node when it comes back.
  void AddStaleRun(const std::string& node, const std::string& run_id);

  absl::Duration lost_timeout() const { return lost_timeout_; }

 private:
  // Node::move_at of a node restored LOST: one fence margin after the first DetectLost, which
  // sets it.
  static constexpr absl::Time kMoveAfterFirstCheck = absl::InfiniteFuture();

  Node* FindMutable(const std::string& name);
  // A LOST node is heard from again (`how`): back in service; stops the runs moved off it.
  void Returned(Node* node, const std::string& how, absl::Time now, Effects* fx);
  // When nodes count as heard from at the latest: the first DetectLost after a Restore, else the
  // epoch (no effect).
  absl::Time FirstCheck() const {
    return first_check_ == absl::InfinitePast() ? absl::UnixEpoch() : first_check_;
  }

  std::map<std::string, Node>* const nodes_;
  const absl::Duration lost_timeout_;
  NodeOps* const ops_;
  // After Restore, the first DetectLost's time: nodes count as heard from then.
  bool restored_ = false;
  absl::Time first_check_ = absl::InfinitePast();
};

}  // namespace trainctl::sched
