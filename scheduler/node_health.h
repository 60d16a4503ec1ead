// Node availability and health (R11, R16, R18): the pure rules behind a node's state.
//
// A node's state is derived, never set: it follows from a few facts the core records (its agent
// is connected or lost, an operator's cordon or drain, the latest check runs, the flapping hold):
//
//   LOST      no heartbeat within the lost timeout
//   ISOLATED  its latest checks failed, or it is flapping
//   DRAINING  a drain is still moving replicas off it
//   CORDONED  an operator's hold (cordon, or a finished drain)
//   READY     none of the above
//
// The first that applies wins. Health follows the same facts: UNKNOWN while lost or before any
// check ran, UNHEALTHY while its latest checks fail, else HEALTHY.
//
// Which check runs count: the latest startup run (the startup script) on its own, since only a
// rerun of the script can clear it; and the newest of the periodic, exit, preflight and fabric
// runs (a gang's fabric check that blamed the node, fabric_checks.h), since each of those probes
// the host and a later passing run supersedes an earlier failure. An isolation that happens
// `flap_threshold` times within `flap_window` makes the node flapping: it stays ISOLATED,
// whatever its checks say, until an operator uncordons it.
//
// Thread-safety: none needed; the functions keep no state.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/port_pool.h"

namespace trainctl::sched {

struct NodePolicy {
  // A node not heard from for this long is LOST; its replicas move FenceMargin later.
  absl::Duration lost_timeout = absl::Seconds(15);
  // Isolations within the window that make a node flapping.
  int32_t flap_threshold = 3;
  absl::Duration flap_window = absl::Hours(1);
  // The ports of every node's pool (trainctld --port-range). REQUIRES: ValidatePortRange is OK.
  PortRange ports;
};

// Fencing: no replica runs twice, even across a network partition (docs/operators/host-health.md,
// "Network partitions and fencing: no replica runs twice").
//
// An agent that has had no answer from the scheduler to anything it sent in the last
// fence_after = lost timeout - margin stops its replicas itself: SIGTERM, then SIGKILL after
// one margin more. So its replicas are gone by the lost timeout, counted from the last heartbeat
// the scheduler answered, which it sent no later than the scheduler heard it. The scheduler marks
// the node LOST at the lost timeout as before, but moves its replicas only one margin later:
// that margin covers the SIGKILL's delivery and the reaping, the agent's timer waking late, and
// the two clocks' rate difference (both count elapsed time, not wall time of day on the agent).
//
// The margin is a fifth of the lost timeout: a longer timeout is chosen for slower hosts and
// networks, and the SIGTERM grace before the SIGKILL gets longer with it (3s for the 15s
// default, so a replica may write a last checkpoint). At least 500ms (a loaded host's timer and
// reaping delays), at most half the lost timeout, so that fence_after stays positive.
// Counted in whole milliseconds (what the agent is told, RegisterAck).
absl::Duration FenceMargin(absl::Duration lost_timeout);
// lost_timeout - FenceMargin(lost_timeout).
absl::Duration FenceAfter(absl::Duration lost_timeout);

// True when the latest checks that count (see the file comment) failed.
bool FailingChecks(const NodeStatus& status);

v1::NodeState DeriveState(const Node& node);
v1::NodeHealth DeriveHealth(const Node& node);

// New work may be placed on it: connected, READY, not shutting down.
bool Schedulable(const Node& node);

// Replicas already on it may restart in place: connected, not shutting down, and READY or
// CORDONED (an operator's hold keeps what runs).
bool KeepsReplicas(const Node& node);

// What recording a check run changed.
struct CheckOutcome {
  // The node was not isolated by checks and now is.
  bool isolated = false;
  // This isolation made it flapping.
  bool became_flapping = false;
  // Its checks failed before and pass now.
  bool recovered = false;
};

// Records `run` as the node's latest run of its phase, and the isolation time when the run
// isolates the node (trimming times outside the window). Sets status.flapping when the isolations
// within the window reach the threshold. State and health are left to the caller (DeriveState).
CheckOutcome RecordCheckRun(const NodePolicy& policy, const v1::CheckRun& run, absl::Time now,
                            Node* node);

// The latest run of `phase`, or nullptr.
const v1::CheckRun* LatestRun(const NodeStatus& status, const std::string& phase);

// "item disk-size root failed: 3.1 GB free, needs > 1e+09 GB; item dns failed: ..." for the
// failed items of a run ("no item failed" when none did).
std::string FailedItems(const v1::CheckRun& run);

}  // namespace trainctl::sched
