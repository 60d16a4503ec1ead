// How `trainctl describe` shows a job, kubectl-style: the summary `get` shows, then its replicas
// with the note on each one's last transition, its attempts with their nodes and times, and the
// job's latest events.
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

// The job summary (RenderJobSummary), then "Replicas:" (NAME RANK NODE STATE RESTARTS EXIT
// MESSAGE) and "Attempts:" (NUMBER STATE NODES STARTED ENDED REASON) tables, each section after a
// blank line and its table indented by two spaces. Sections without rows are left out.
std::string RenderJobDescription(const v1::Job& job, int64_t now_ms);

// "Events:" and an AGE TYPE REPLICA NODE REASON table of `events` in the order given (the
// server's: oldest first), indented like RenderJobDescription's tables; "Events:  <none>" when
// there are none. REPLICA and NODE are left out when no event has them.
std::string RenderEventsSection(const google::protobuf::RepeatedPtrField<v1::Event>& events,
                                int64_t now_ms);

}  // namespace trainctl::cli
