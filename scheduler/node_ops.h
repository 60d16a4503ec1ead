// NodeOps: what the parts of the node registry (node_liveness.h, node_maintenance.h) may ask of
// the registry itself. A node's state stays derived in one place: a part changes the facts it
// owns and then asks the registry to re-derive the node's state (Refresh) or to cordon and drain
// it (StartDrain); it never sets a state itself. NodeRegistry implements these calls, a test
// implements them with a recording fake.
//
// Thread-safety: none; the registry and its parts are owned by the core.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "model/model.h"

namespace trainctl::sched {

// A node that changed so that its replicas move, and why in words ("node node-a was lost: no
// heartbeat for 20s (lost timeout 15s)").
struct NodeMove {
  std::string node;
  std::string why;
};

class NodeOps {
 public:
  virtual ~NodeOps() = default;

  // Re-derives the node's state and health (node_health.h); records the change (and `reason`)
  // when they moved.
  virtual void Refresh(Node* node, const std::string& reason, absl::Time now, Effects* fx) = 0;
  // Records a change of what placement may find: a node's connection or size.
  virtual void Changed() = 0;
  // Cordons the node and marks it draining: `why` in its event and state reason, `what` in its
  // health description; each replica gets `deadline` to stop (zero: its job's stopGracePeriod).
  virtual void StartDrain(Node* node, const std::string& why, const std::string& what,
                          absl::Duration deadline, absl::Time now, Effects* fx) = 0;
};

}  // namespace trainctl::sched
