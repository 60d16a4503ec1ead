// Validation of a submitted JobSpec, and the defaults filled into it.
//
// Pure functions: every error is INVALID_ARGUMENT with the field path in JSON-mapping names,
// e.g. "workerPools[1].replicaCount must be 1..4096, got 0", so a person can fix the spec.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// Limits on every input (see ValidateJobSpec).
inline constexpr int kMaxPools = 16;
inline constexpr int kMaxReplicasPerPool = 4096;
inline constexpr int kMaxReplicasPerJob = 4096;
inline constexpr int kMaxDisplayNameLength = 128;
inline constexpr int kMaxArgs = 1024;
inline constexpr int kMaxArgLength = 64 * 1024;
inline constexpr int kMaxEnv = 256;
inline constexpr int kMaxLabels = 32;
// The whole spec, serialized. Every replica's launch message carries its pool's command, args
// and env plus the cluster's addresses; at this size the launch of the largest job stays well
// inside the 4 MiB a gRPC message may have by default.
inline constexpr size_t kMaxSpecBytes = size_t{1} << 20;
inline constexpr int kDefaultStopGraceMs = 10'000;
// scheduling.preemptionSignal and preemptionGracePeriod when unset.
inline constexpr char kDefaultPreemptionSignal[] = "SIGTERM";
inline constexpr int kDefaultPreemptionGraceMs = 300'000;
inline constexpr char kDefaultProject[] = "default";
// faultTolerance.jobRetryNum when unset: re-dispatch on host faults, up to the most R19 allows.
// A host fault is never the job's doing, and each re-dispatch leaves the failing host isolated,
// so retrying is what keeps a long run alive; 3 still bounds a fault that follows the job
// everywhere (a cluster-wide DNS outage), after which it fails with "error,exiting".
inline constexpr int kDefaultJobRetryNum = 3;

// Checks `spec` against every rule of the job API: its size (kMaxSpecBytes), no NUL byte in any
// string, then each field. Returns the first error found.
absl::Status ValidateJobSpec(const v1::JobSpec& spec);

// A job's checkpointDir `dir` (absolute; ValidateJobSpec checked it) made lexically normal
// ("a/./b", "a/x/../b" and repeated or trailing slashes resolved, without looking at the file
// system), when that lies strictly under one of `roots`. Else INVALID_ARGUMENT: "checkpointDir must
// be under one of the allowed roots (/ckpt; trainctld --checkpoint-allowed-roots), got \"/etc/x\"".
absl::StatusOr<std::string> CheckpointDirUnder(const std::string& dir,
                                               const std::vector<std::string>& roots);

// The longest of `roots` (made lexically normal, without a trailing slash) that the lexically
// normal `dir` lies strictly under; "" when none. Agents open this root as any path and follow no
// symbolic link beneath it (LaunchReplica.checkpoint_root).
//   CheckpointRootOf("/ckpt/teama/run", {"/ckpt/", "/ckpt/teama"}) == "/ckpt/teama"
std::string CheckpointRootOf(const std::string& dir, const std::vector<std::string>& roots);

// Fills documented defaults (project, stop grace period, restart scope, preemptible, preemption
// signal and grace period, ...). The settle window
// is left to the caller, whose default is a server flag. REQUIRES: ValidateJobSpec(spec).ok().
void ApplyDefaults(v1::JobSpec* spec);

}  // namespace trainctl::sched
