// Job, replica and node state names as the CLI shows and accepts them.
//
// Tables show states without their enum prefix ("RUNNING", not "JOB_STATE_RUNNING"); flags accept
// "running", "RUNNING" or "JOB_STATE_RUNNING".
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/job_states.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// "RUNNING" for JOB_STATE_RUNNING; the number for a value this build does not know.
std::string JobStateName(v1::JobState state);

// "RUNNING" for REPLICA_STATE_RUNNING; the number for a value this build does not know.
std::string ReplicaStateName(v1::ReplicaState state);

// "DRAINING" for NODE_STATE_DRAINING; "-" for UNSPECIFIED (a server that does not report node
// states); the number for a value this build does not know.
std::string NodeStateName(v1::NodeState state);

// "HEALTHY" for NODE_HEALTH_HEALTHY; "-" for UNSPECIFIED; the number for a value this build does
// not know.
std::string NodeHealthName(v1::NodeHealth health);

// Parses one state name in any case, with or without the "JOB_STATE_" prefix. UNSPECIFIED is
// rejected. INVALID_ARGUMENT lists the valid names.
absl::StatusOr<v1::JobState> ParseJobState(absl::string_view text);

// Parses every value of a repeatable flag, each of which may be a comma-separated list
// ("running,queued"). Duplicates are dropped; order is kept.
absl::StatusOr<std::vector<v1::JobState>> ParseJobStates(const std::vector<std::string>& values);

using trainctl::IsTerminal;

}  // namespace trainctl::cli
