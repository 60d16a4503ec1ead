#include "scheduler/model.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace trainctl::sched {

std::string MakeRunId(const std::string& job_id, int32_t attempt, const std::string& replica,
                      int32_t restart) {
  return absl::StrCat(job_id, "/", attempt, "/", replica, "/", restart);
}

bool ParseRunId(const std::string& run_id, std::string* job_id, int32_t* attempt,
                std::string* replica, int32_t* restart) {
  std::vector<std::string> parts = absl::StrSplit(run_id, '/');
  if (parts.size() != 4) return false;
  if (!absl::SimpleAtoi(parts[1], attempt) || !absl::SimpleAtoi(parts[3], restart)) return false;
  *job_id = parts[0];
  *replica = parts[2];
  return true;
}

bool IsTerminal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

bool IsTerminal(v1::ReplicaState state) {
  return state == v1::REPLICA_STATE_SUCCEEDED || state == v1::REPLICA_STATE_FAILED ||
         state == v1::REPLICA_STATE_STOPPED;
}

std::string ShortName(v1::JobState state) {
  return std::string(absl::StripPrefix(v1::JobState_Name(state), "JOB_STATE_"));
}

std::string ShortName(v1::ReplicaState state) {
  return std::string(absl::StripPrefix(v1::ReplicaState_Name(state), "REPLICA_STATE_"));
}

}  // namespace trainctl::sched
