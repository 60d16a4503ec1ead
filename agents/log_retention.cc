// Removing deleted jobs' logs (agents/log_retention.h).
#include "agents/log_retention.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "agents/run_files.h"

namespace trainctl::agent {
namespace {

namespace fs = std::filesystem;

// The path's modification time in Unix ms; 0 when it cannot be read.
int64_t MtimeMs(const fs::path& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

// The newest modification time under `dir`, itself included; 0 when none can be read.
int64_t NewestMtimeMs(const fs::path& dir) {
  std::error_code ec;
  int64_t newest = MtimeMs(dir);
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    newest = std::max(newest, MtimeMs(it->path()));
  }
  return newest;
}

}  // namespace

absl::Status RemoveJobLogs(const std::string& work_dir, const std::string& job_id,
                           const std::set<std::string>& live_jobs) {
  if (absl::Status s = CheckPathComponent("job id", job_id); !s.ok()) return s;
  if (live_jobs.count(job_id) > 0) return absl::OkStatus();
  const std::string dir = absl::StrCat(work_dir, "/logs/", job_id);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot remove ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

std::vector<std::string> JobLogsOlderThan(const std::string& work_dir, int64_t cutoff_ms) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(absl::StrCat(work_dir, "/logs"), ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    const int64_t newest = NewestMtimeMs(it->path());
    if (newest > 0 && newest < cutoff_ms) out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace trainctl::agent
