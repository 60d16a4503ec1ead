// How the CLI shows projects, quotas and the queue: the `queue` table, the project block that
// `quota get` and `quota set` print, and the `projects` table, with their JSON/YAML forms.
//
//   std::cout << RenderProject(project);
//   // Project:       team-a
//   // Cohort:        research
//   // Strategy:      strict FIFO
//   // GPUs:          4 / 8 gpus
//   // ...
//
// `now_ms` (ms since the epoch) is passed in so that ages are testable.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/output.h"
#include "google/protobuf/repeated_field.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// What keeps a queued job waiting, in one cell: the first blocker's message, with " (+N more)"
// when there are N others; "-" when it has none.
std::string BlockerSummary(const v1::Job& job);

// How long the job has waited: the age since it last entered the queue (queue_time), else since
// it was created; "-" when neither is set.
std::string WaitingText(const v1::Job& job, int64_t now_ms);

// `queue -o table`: POSITION ID NAME PROJECT PRIORITY WAITING REASON, in the order given (the
// server's admission order). POSITION is the job's place in its project's queue.
std::string RenderQueue(const google::protobuf::RepeatedPtrField<v1::Job>& jobs, int64_t now_ms);

// The response in `format`, as `queue` prints it; JSON and YAML are {"jobs": [...]}.
absl::StatusOr<std::string> FormatQueue(const v1::ListQueueResponse& response, OutputFormat format,
                                        int64_t now_ms);

// "4 / 8 gpus" for a limit, "4 / unlimited" without one. `unit` may be empty.
std::string UsedOfLimitText(const std::string& used, bool has_limit, const std::string& limit,
                            const std::string& unit);

// "strict FIFO", or "best-effort FIFO (starvation limit 10m0s)".
std::string StrategyText(const v1::Quota& quota);

// Quota.reclaim in words: "never" (also unset), "lower-priority" or "any".
std::string ReclaimText(const v1::Quota& quota);

// Quota.preemptWithinProject in words: "never within the project" (also unset) or
// "lower-priority within the project".
std::string PreemptWithinProjectText(const v1::Quota& quota);

// "2 gpus, 1.5 cpu, 1024 MiB": the non-zero amounts of `r`; `none` when all are zero.
std::string ResourcesText(const v1::Resources& r, const std::string& none);

// `quota get -o table`: "Key: value" lines for the project, cohort, strategy, each limit as used
// of limit, running and queued jobs, what it borrows and may borrow, its preemption policies. A
// project without a quota of its own says "(default quota)" after its name.
std::string RenderProject(const v1::Project& project);

// The project in `format`, as `quota get` and `quota set` print it.
absl::StatusOr<std::string> FormatProject(const v1::Project& project, OutputFormat format);

// One row of the projects table: NAME COHORT GPUS CPU MEMORY RUNNING QUEUED, where GPUS, CPU,
// MEMORY (MiB) and RUNNING are "used/limit", "used/-" without a limit.
std::vector<std::string> ProjectRow(const v1::Project& project);

// `projects -o table`: the header, then ProjectRow for each project.
std::string RenderProjectList(const google::protobuf::RepeatedPtrField<v1::Project>& projects);

// The response in `format`, as `projects` prints it; JSON and YAML are {"projects": [...]}.
absl::StatusOr<std::string> FormatProjects(const v1::ListProjectsResponse& response,
                                           OutputFormat format);

}  // namespace trainctl::cli
