// The words of the core's decisions: how a failure is classed, what is done about it, and why a
// replica leaves its node. Typed here, stored and shown by name (model_proto.h: FailureClassName,
// DecisionName).
//
// Thread-safety: plain enums.
#pragma once

namespace trainctl::sched {

// How a failure is classed (the retry engine's table). Stored by name: "TRANSIENT", ...
enum class FailureClass {
  kNone,         // no failure (success, or not ended)
  kTransient,    // transient exit code or signal
  kUserError,    // any other non-zero exit, or a command that cannot start
  kOutOfMemory,  // memory limit hit
  kInternal,     // trainctl's or the host's fault: launch failure, lost run, lost agent
  kHung,         // no progress within hangTimeout
  kCapacity,     // no healthy capacity within placementTimeout
  kDeadline,     // scheduling.timeout or queueTimeout passed
  kHostFault,    // a host check failed (R16 scenarios 1-3)
  kMaintenance,  // a drain found no room for a moved replica
  kPreempted,    // its replicas were taken back for another job or a lender's quota (victims.h)
};

// What is done about a replica's end or a job's failure. The stored ones (Attempt.decision) are
// RETRY_JOB, REDISPATCH and FAIL_JOB.
enum class Decision {
  kNone,            // no decision (an attempt that did not end by a failure)
  kContinue,        // a non-primary replica exited 0: the job goes on
  kSucceedJob,      // the primary exited 0
  kRestartReplica,  // in place, same node, name and rank
  kMoveReplica,     // to another node, same name and rank, not charged
  kRestartGang,     // every replica of a GANG job, in place, charged to the one that failed
  kRetryJob,        // a new attempt
  kRedispatch,      // a new attempt on other hosts after a host fault, first in the queue (R17)
  kFailJob,
  kPreempt,  // preempted: back to the queue in its own place, charged to no budget
};

// Why a replica leaves its node.
enum class MoveCause {
  kNone,
  kDrain,            // an operator drains the node (maintenance: charges nothing, ever)
  kLost,             // the node stopped sending heartbeats
  kUnhealthy,        // the node failed a periodic check
  kShutdown,         // the node's agent shut down
  kNodeUnavailable,  // an in-place restart found its node no longer keeps replicas
};

}  // namespace trainctl::sched
