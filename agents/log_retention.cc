// Removing deleted jobs' logs (agents/log_retention.h).
#include "agents/log_retention.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "agents/progress_watch.h"
#include "agents/run_files.h"

namespace trainctl::agent {

absl::Status RemoveJobLogs(const std::string& work_dir, const std::string& job_id,
                           const std::set<std::string>& live_jobs) {
  if (absl::Status s = CheckPathComponent("job id", job_id); !s.ok()) return s;
  if (live_jobs.count(job_id) > 0) return absl::OkStatus();
  const std::string dir = absl::StrCat(work_dir, "/logs/", job_id);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot remove ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

std::vector<std::string> JobLogsOlderThan(const std::string& work_dir, int64_t cutoff_ms) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(absl::StrCat(work_dir, "/logs"), ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    // logs/<job>/attempt-N/<replica>.restart-R.log: two levels down.
    const int64_t newest = NewestMtimeMs(it->path().string(), 2);
    if (newest > 0 && newest < cutoff_ms) out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace trainctl::agent
