// Agent: replica logs on the node: removing those of deleted jobs (agents/log_retention.h), on
// the worker thread, and checking at the start that they can be capped (--max-log-mb).
#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "agents/log_retention.h"
#include "agents/preemption_notice.h"
#include "agents/run_files.h"
#include "agents/shim/log_cap.h"
#include "common/log_context.h"
#include "common/run_id.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {

void Agent::CheckLogCapping() const {
  if (options_.max_log_bytes <= 0) return;
  const std::string dir = options_.work_dir + "/logs";
  if (!MakeDirs(dir).ok() || shim::CanPunchHoles(dir.c_str())) return;
  spdlog::warn(
      "--max-log-mb {}: the file system of {} cannot punch holes ({}); replica logs stay uncapped",
      static_cast<double>(options_.max_log_bytes) / (1 << 20), dir, std::strerror(errno));
}

void Agent::ForgetJobLogs(const trainctl::v1::SchedulerMessage& command) {
  if (command.has_forget_jobs()) {
    const auto& ids = command.forget_jobs().job_ids();
    RemoveLogsOf(std::vector<std::string>(ids.begin(), ids.end()), "the job was deleted");
  } else if (command.has_register_ack()) {
    const int64_t retention_ms = command.register_ack().job_retention_ms();
    RemoveLogsOf(JobLogsOlderThan(options_.work_dir, WallNowMs() - retention_ms),
                 absl::StrCat("older than the job retention (", FormatDuration(retention_ms), ")"));
  }
}

void Agent::RemoveLogsOf(const std::vector<std::string>& job_ids, const std::string& why) {
  if (job_ids.empty()) return;
  std::set<std::string> live;
  for (const trainctl::v1::KnownRun& run : runtime_->KnownRuns()) {
    if (std::optional<RunIdParts> parts = SplitRunId(run.run_id())) live.insert(parts->job_id);
  }
  for (const std::string& job_id : job_ids) {
    LogScope scope(job_id);
    if (live.count(job_id) > 0) {
      spdlog::info("job {}: keeping its logs ({}): a run of it is still here", job_id, why);
      continue;
    }
    if (absl::Status s = RemoveJobLogs(options_.work_dir, job_id, live); !s.ok()) {
      spdlog::warn("job {}: cannot remove its logs: {}", job_id, std::string(s.message()));
    } else {
      spdlog::info("job {}: removed its logs ({})", job_id, why);
    }
    if (absl::Status s = RemoveJobNotices(options_.work_dir, job_id); !s.ok()) {
      spdlog::warn("job {}: cannot remove its notices: {}", job_id, std::string(s.message()));
    }
    if (absl::Status s = workdirs_.Forget(job_id); !s.ok()) {
      spdlog::warn("job {}: cannot remove its working directory: {}", job_id,
                   std::string(s.message()));
    }
  }
}

}  // namespace trainctl::agent
