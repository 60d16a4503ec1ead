// The flags of trainctl's queue operations: `submit --depends-on afterok:ID,...` and
// `--dependency-policy fail|keep-waiting` (a job's dependencies, JobSpec.dependsOn and
// dependencyPolicy), and `update`'s --priority, --queue-timeout, --label and --remove-label (an
// UpdateJobRequest).
//
//   TC_RETURN_IF_ERROR(AddDependsOn(args.GetAll("depends-on"), &spec));
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// One dependency in Slurm's words: "afterok:ID" (SUCCEEDED), "afternotok:ID" (FAILED),
// "afterany:ID" (ENDED). INVALID_ARGUMENT naming the three words, or the missing id.
absl::StatusOr<v1::Dependency> ParseDependency(absl::string_view text);

// Appends every dependency of `values` (each a comma-separated list of ParseDependency's forms)
// to spec->depends_on, after those the spec file lists.
absl::Status AddDependsOn(const std::vector<std::string>& values, v1::JobSpec* spec);

// "fail" or "keep-waiting" (any case, '_' for '-').
absl::StatusOr<v1::DependencyPolicy> ParseDependencyPolicy(absl::string_view text);

// What `update` asks: each flag left out is left unchanged.
struct UpdateFlags {
  std::string id;
  // --priority N (-1000..1000); "" when not given.
  std::string priority;
  // --queue-timeout D ("30m", "2h"); "" when not given.
  std::string queue_timeout;
  // --label KEY=VALUE, repeated.
  std::vector<std::string> labels;
  // --remove-label KEY, repeated.
  std::vector<std::string> remove_labels;
};

// The UpdateJobRequest of `flags`. INVALID_ARGUMENT, naming the flag, for a bad value, and when
// no flag asks for any change.
absl::StatusOr<v1::UpdateJobRequest> BuildUpdateRequest(const UpdateFlags& flags);

}  // namespace trainctl::cli
