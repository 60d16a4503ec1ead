#include "storage/job_archive.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace trainctl::storage {

absl::StatusOr<RunLocation> LocateRunOf(const std::string& job_id,
                                        const std::optional<v1::Job>& job,
                                        const std::vector<sched::ReplicaRun>& runs,
                                        const std::string& replica, int32_t attempt,
                                        int32_t restart) {
  if (!job.has_value()) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  std::vector<std::string> names;
  for (const v1::Replica& r : job->replicas()) names.push_back(r.name());
  if (std::find(names.begin(), names.end(), replica) == names.end()) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no replica \"", replica,
                                            "\"; its replicas are ", absl::StrJoin(names, ", ")));
  }
  int32_t a = attempt;
  if (a == 0) {
    for (const sched::ReplicaRun& r : runs) a = std::max(a, r.attempt);
    if (a == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_id, " never started a replica: no logs"));
    }
  }
  const sched::ReplicaRun* found = nullptr;
  for (const sched::ReplicaRun& r : runs) {
    if (r.replica != replica || r.attempt != a) continue;
    if (restart >= 0 ? r.restart == restart : (found == nullptr || r.restart > found->restart)) {
      found = &r;
    }
  }
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("no run of replica ", replica, " in attempt ", a,
                                            restart >= 0 ? absl::StrCat(" restart ", restart) : "",
                                            " of job ", job_id));
  }
  // The job ended, so every run of it did.
  return RunLocation{found->node, found->run_id, true};
}

}  // namespace trainctl::storage
