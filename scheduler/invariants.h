// What must hold of a Core between any two inputs, whatever the agents reported and in whatever
// order: the invariants that tests and the agent-message fuzzer (tests/fuzz/) check after every
// input.
//
//   absl::Status ok = CheckInvariants(core);  // INTERNAL naming the first broken invariant
//
// Checked, in this order (each cheap: one pass over the jobs and nodes):
//   - a QUEUED or terminal job holds resources only through replicas it is still stopping
//     (STOPPING: the previous attempt's, or those left when its outcome was decided); a terminal
//     job has its end time;
//   - every replica that holds resources names a node the core knows, and holds its pool's GPU
//     count of devices; a PENDING replica holds none;
//   - every job's replica names are distinct, and its attempts are numbered 1, 2, ... in order;
//   - no node holds a negative amount of any resource;
//   - the usage kept incrementally matches a recount (Core::CheckUsage: per node, per project,
//     ports, GPU devices).
//   - the admission picture readers are given (Core::QueueSnapshot) lists exactly the QUEUED
//     jobs, each under its project.
//
// Thread-safety: a pure function of `core`; the caller owns the core's thread.
#pragma once

#include "absl/status/status.h"
#include "scheduler/core.h"

namespace trainctl::sched {

// OK, or INTERNAL naming the first broken invariant and the job, replica or node it is about.
absl::Status CheckInvariants(const Core& core);

}  // namespace trainctl::sched
