// How the CLI shows jobs: the `get` summary, the `list` table, their JSON/YAML forms, and the
// one-line status that `wait` and `cancel` print.
//
// `now_ms` (ms since the epoch) is passed in so that ages are testable.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/output.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// `get -o table`: the job's fields, then a REPLICAS table (NAME RANK NODE STATE RESTARTS EXIT
// PID) and an ATTEMPTS table (NUMBER STATE REASON).
std::string RenderJobDetails(const v1::Job& job, int64_t now_ms);

// `list -o table`: ID NAME PROJECT STATE AGE REPLICAS, one row per job.
std::string RenderJobList(const std::vector<v1::Job>& jobs, int64_t now_ms);

// "3/4": replicas RUNNING / all replicas of the current attempt.
std::string ReplicaSummary(const v1::Job& job);

// {"jobs": [...]} in the same JSON style as MessageToJson.
absl::StatusOr<std::string> JobsToJson(const std::vector<v1::Job>& jobs);

// The job in `format`, as `get` prints it.
absl::StatusOr<std::string> FormatJob(const v1::Job& job, OutputFormat format, int64_t now_ms);

// The jobs in `format`, as `list` prints them.
absl::StatusOr<std::string> FormatJobList(const std::vector<v1::Job>& jobs, OutputFormat format,
                                          int64_t now_ms);

// "<id> <STATE>", plus ": <error message>" when the job has an error.
std::string JobStatusLine(const v1::Job& job);

}  // namespace trainctl::cli
