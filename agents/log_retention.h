// Removing the logs of deleted jobs from the node: <work dir>/logs/<job id>/ holds every run's
// log of a job (run_files.h), and goes when the scheduler deleted the job (ForgetJobs, sent to
// every connected agent) or, for deletions an agent missed while away from the scheduler, once
// every file in it is older than the scheduler's job retention (RegisterAck.job_retention_ms,
// looked at on each registration). Logs of a job with a run the agent still watches stay.
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace trainctl::agent {

// Removes <work_dir>/logs/<job_id> unless `job_id` is in `live_jobs`. OK when there is none;
// INVALID_ARGUMENT for a job id that is no safe path component, INTERNAL when removal fails.
absl::Status RemoveJobLogs(const std::string& work_dir, const std::string& job_id,
                           const std::set<std::string>& live_jobs = {});

// The job ids under <work_dir>/logs whose newest file (or directory) was last modified before
// `cutoff_ms` (Unix ms), in name order.
std::vector<std::string> JobLogsOlderThan(const std::string& work_dir, int64_t cutoff_ms);

}  // namespace trainctl::agent
