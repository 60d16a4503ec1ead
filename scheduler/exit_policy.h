// What to do when a replica process ends: the decision seam of the retry engine.
//
// A pure function of the job, the replica and the agent's exit report. Today it knows success,
// "another replica finished", and failure; the retry engine replaces DecideOnExit with restarts and
// retries per the job's policy, without changing its callers.
#pragma once

#include <string>

#include "trainctl/v1/agent.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

enum class ExitDecision {
  // The replica is done; the job goes on (a non-primary replica exited 0).
  kNothing,
  // The primary exited 0: the job SUCCEEDED and every other replica is stopped (R6).
  kSucceedJob,
  // The job FAILED with `error`; every other replica is stopped.
  kFailJob,
};

struct ExitOutcome {
  ExitDecision decision = ExitDecision::kNothing;
  // Set for kFailJob: canonical code and the R8 message.
  v1::JobError error;
  // One line for the replica's message and the event log, e.g. "exited with status 3".
  std::string summary;
};

// REQUIRES: `replica` belongs to `job` and `exit` is the report of its current run.
ExitOutcome DecideOnExit(const v1::Job& job, const v1::Replica& replica,
                         const v1::ReplicaExited& exit);

// The outcome when a replica's process vanished without an exit report (its agent restarted).
ExitOutcome DecideOnLostReplica(const v1::Job& job, const v1::Replica& replica,
                                const std::string& node);

// "SIGSEGV" for 11; "signal 42" for numbers without a name.
std::string SignalName(int signal);

}  // namespace trainctl::sched
