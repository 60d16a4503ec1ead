// The words of placement and blocker kinds (placement_kind.h).
#include "scheduler/placement_kind.h"

#include "absl/strings/str_cat.h"

namespace trainctl::sched {

BlockerKind BlockerOf(PlacementKind kind) {
  switch (kind) {
    case PlacementKind::kNoNodes:
      return BlockerKind::kNoNodes;
    case PlacementKind::kNodeSelector:
      return BlockerKind::kNodeSelector;
    case PlacementKind::kTopology:
      return BlockerKind::kTopology;
    case PlacementKind::kMaintenance:
      return BlockerKind::kMaintenance;
    case PlacementKind::kPlaced:
    case PlacementKind::kCapacity:
      break;
  }
  return BlockerKind::kCapacity;
}

const char* BlockerWord(BlockerKind kind) {
  switch (kind) {
    case BlockerKind::kBackoff:
      return "BACKOFF";
    case BlockerKind::kStopping:
      return "STOPPING";
    case BlockerKind::kQuota:
      return "QUOTA";
    case BlockerKind::kNoNodes:
      return "NO_NODES";
    case BlockerKind::kCapacity:
      return "CAPACITY";
    case BlockerKind::kNodeSelector:
      return "NODE_SELECTOR";
    case BlockerKind::kTopology:
      return "TOPOLOGY";
    case BlockerKind::kMaintenance:
      return "MAINTENANCE";
    case BlockerKind::kPriority:
      return "PRIORITY";
    case BlockerKind::kPreempting:
      return "PREEMPTING";
    case BlockerKind::kReservation:
      return "RESERVATION";
    case BlockerKind::kHeld:
      return "HELD";
    case BlockerKind::kDependency:
      return "DEPENDENCY";
    case BlockerKind::kArrayLimit:
      return "ARRAY_LIMIT";
  }
  return "UNKNOWN";
}

std::string ReasonText(BlockerKind kind, const std::string& message) {
  return absl::StrCat(BlockerWord(kind), ": ", message);
}

v1::Blocker MakeBlocker(BlockerKind kind, std::string message) {
  v1::Blocker b;
  b.set_kind(BlockerWord(kind));
  b.set_message(std::move(message));
  return b;
}

}  // namespace trainctl::sched
