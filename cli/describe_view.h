// How `trainctl describe` shows a job, kubectl-style: the summary `get` shows and its retry
// budgets, the failing replica's last output, its replicas with the note on each one's last
// transition, its attempts with why each failed and what was decided, and the job's latest
// events.
//
//   std::cout << RenderJobDescription(job, now_ms) << "\n" << RenderEventsSection(events, now_ms);
//
// `now_ms` (ms since the epoch) is passed in so that ages are testable.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "google/protobuf/repeated_field.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// The job summary (JobSummaryFields) with a "Retry budgets" line (RetryBudgetsText) and a "Host
// faults" line (FaultToleranceText); then what a queued job waits for (RenderWaitingFor), the
// error's "Last output:" (OutputTailText), a "Replicas:" table (NAME RANK NODE PORT STATE
// RESTARTS MOVES EXIT MESSAGE, see ReplicaPortText, ReplicaRestartsText and ReplicaNoteText; PORT
// is left out when no replica has a port, MOVES when no replica moved) and an "Attempts:" table
// (NUMBER STATE STARTED ENDED CLASS RULE REPLICA NODE DECISION BUDGETS-LEFT REASON; CLASS to
// BUDGETS-LEFT are left out when no attempt has them). Each section follows a blank line, its body
// indented by two spaces; sections without content are left out.
std::string RenderJobDescription(const v1::Job& job, int64_t now_ms);

// What the job has used of its retry budgets against the limits of its spec: "job retries 1/3
// used, internal retries 0/2, capacity retries 0/3, redispatches 0/3; replica restarts up to 5
// per attempt". A budget whose limit the spec leaves unset is shown only when some of it is used,
// without the limit; redispatches always show, against JobRetryNum.
std::string RetryBudgetsText(const v1::Job& job);

// "GANG: a restartable failure restarts every replica together (generation 2 now)", or REPLICA;
// "" when the spec does not say (the server always fills it in).
// "worker 3 of 4 replicas (min 2); waits 1m0s for room before shrinking"; "" without elastic
// pools.
std::string ElasticText(const v1::Job& job);
std::string RestartScopeText(const v1::Job& job);

// faultTolerance.jobRetryNum when unset in the spec.
inline constexpr int32_t kDefaultJobRetryNum = 3;

// How many re-dispatches after host faults the job allows: the spec's
// faultTolerance.jobRetryNum, else kDefaultJobRetryNum.
int32_t JobRetryNum(const v1::Job& job);

// What a host fault does to the job, by its fault-tolerance policy: "re-dispatch the job to other
// hosts, up to 3 times (faultTolerance.jobRetryNum 3, the default)"; "fail the job
// (faultTolerance.jobRetryNum 0)".
std::string FaultToleranceText(const v1::Job& job);

// The budgets left after an attempt ended: "retries 2, internal 2, capacity 3, redispatches 3"; ""
// while the attempt has none (it is still running).
std::string BudgetsLeftText(const v1::Attempt& attempt);

// The replica's port on its node, and the primary's rendezvous port (MASTER_PORT): "20001
// (rendezvous 20000)", "20002"; "" when it has none (not placed yet).
std::string ReplicaPortText(const v1::Replica& replica);

// The replica's restarts in this attempt: "3", or "3 (2 charged)" when not every restart was
// charged to maxReplicaRestarts (IGNORE rules, a reset after stable progress).
std::string ReplicaRestartsText(const v1::Replica& replica);

// The note on the replica's last transition; a replica stopping to move adds why, unless the note
// says it already ("drained; moving to another node: node-a drained: kernel upgrade"); a
// RESTARTING replica adds when it restarts: "exited with status 6 (TRANSIENT); restarts in 4s".
std::string ReplicaNoteText(const v1::Replica& replica, int64_t now_ms);

// A replica's captured output made safe to print: each line as a terminal would leave it after
// carriage returns (progress bars), other control characters as spaces, no trailing newline.
std::string OutputTailText(const std::string& tail);

// "Events:" and an AGE TYPE REPLICA NODE REASON table of `events` in the order given (the
// server's: oldest first), indented like RenderJobDescription's tables; "Events:  <none>" when
// there are none. REPLICA and NODE are left out when no event has them.
std::string RenderEventsSection(const google::protobuf::RepeatedPtrField<v1::Event>& events,
                                int64_t now_ms);

}  // namespace trainctl::cli
