// The kinds of a placement's outcome and of a queued job's blockers, as enums. Their words
// ("CAPACITY", "MAINTENANCE", ...) are built in one place, BlockerWord, where the API's text is
// made (v1::Blocker's kind, the queue reason's "KIND: missing").
#pragma once

#include <string>

#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// How placing a gang or a replica came out.
enum class PlacementKind {
  kPlaced,
  // No node is connected and READY: the book is empty.
  kNoNodes,
  // No node (or no set of nodes, for a gang) has the resources, GPUs and ports.
  kCapacity,
  // A pool's node selection allows no schedulable node.
  kNodeSelector,
  // No domain of scheduling.placement.packWithin holds the gang.
  kTopology,
  // Only nodes whose maintenance window starts before the job's expected end have room.
  kMaintenance,
};

// Why a queued job is not running, in the order BlockersOf lists them.
enum class BlockerKind {
  kBackoff,
  kStopping,
  kQuota,
  kNoNodes,
  kCapacity,
  kNodeSelector,
  kTopology,
  kMaintenance,
  kPriority,
  // It preempts other jobs (victims.h): their replicas checkpoint and stop to make room for it.
  kPreempting,
  // The room it fits in is kept for the job that holds the reservation (reservation.h).
  kReservation,
  // Held by HoldJob until released.
  kHeld,
  // Waiting for jobs it depends on (dependencies.h).
  kDependency,
  // An element of a job array waiting while `parallelism` of its elements run (job_arrays.h).
  kArrayLimit,
};

// The blocker a failed placement is. REQUIRES: kind != kPlaced.
BlockerKind BlockerOf(PlacementKind kind);

// The API's word for the kind: "QUOTA", "CAPACITY", ...
const char* BlockerWord(BlockerKind kind);

// "KIND: message", as queue reasons and blocker messages read.
std::string ReasonText(BlockerKind kind, const std::string& message);

// A v1::Blocker of `kind` whose message is `message` (already "KIND: ..." worded).
v1::Blocker MakeBlocker(BlockerKind kind, std::string message);

// What a job waiting on an empty cluster lacks: "no node is connected and READY".
inline constexpr char kNoNodesMissing[] = "no node is connected and READY";

}  // namespace trainctl::sched
