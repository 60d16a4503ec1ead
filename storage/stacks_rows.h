// Reading the stacks agents captured before stopping runs (replica_stacks, written by the batch
// writer from Effects::stacks) back for `trainctl stacks` and `describe`: on either backend's
// statement cache, run by the JobArchive off the reconcile loop.
//
//   TC_ASSIGN_OR_RETURN(StacksOfAttempt got, archive->ListStacks({"j-1", 0, "", false}));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::storage {

struct StacksQuery {
  std::string job_id;
  // 0: the latest attempt of the job that has stacks.
  int32_t attempt = 0;
  // "": every replica's.
  std::string replica;
  // Leave ProcessStacks.text out.
  bool summary_only = false;
};

struct StacksOfAttempt {
  // 0 when the job has no stacks (of that attempt, or at all).
  int32_t attempt = 0;
  // One per run of the attempt (the latest capture of each), by replica then restart.
  std::vector<v1::ReplicaStacks> stacks;
};

template <typename Cache>
absl::StatusOr<StacksOfAttempt> ReadStacks(Cache& cache, const StacksQuery& q);

}  // namespace trainctl::storage
