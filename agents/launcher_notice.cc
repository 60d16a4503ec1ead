// ProcessLauncher's notices (launcher.h): the preemption, drain or maintenance notice a running
// replica gets before it is stopped: the JSON file at its TRAINCTL_PREEMPTION_NOTICE path, then
// the notice's signal, once per notice (preemption_notice.h keeps the record of delivery).
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "agents/launcher.h"
#include "agents/preemption_notice.h"
#include "agents/run_files.h"
#include "common/log_context.h"
#include "common/signals.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {

absl::Status ProcessLauncher::Notice(const trainctl::v1::NoticeReplica& notice) {
  const std::string& run_id = notice.run_id();
  LogScope log_scope = LogScope::ForRun(run_id);
  if (absl::Status s = CheckNotice(notice); !s.ok()) return s;
  absl::StatusOr<RunIdParts> parts = ParseRunId(run_id);
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (!parts.ok() || it == runs_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown run ", run_id));
  }
  Run& run = it->second;
  if (run.state == RunState::kExiting || run.state == RunState::kExited || run.stopping) {
    spdlog::info("run {}: ignoring a {} notice: the run is ending", run_id, notice.kind());
    return absl::OkStatus();
  }
  if (run.state != RunState::kRunning) {
    return absl::UnavailableError(absl::StrCat("run ", run_id, " is still starting"));
  }
  const std::string run_dir = records_.RunDir(run_id);
  const std::string key = NoticeKey(notice);
  if (NoticeDelivered(run_dir, key)) {
    spdlog::info("run {}: the {} notice was delivered before", run_id, notice.kind());
    return absl::OkStatus();
  }
  std::optional<NoticeOwner> owner;
  struct stat st;
  if (geteuid() == 0 && stat(RunWorkingDir(options_.work_dir, *parts).c_str(), &st) == 0) {
    owner = NoticeOwner{st.st_uid, st.st_gid};
  }
  if (absl::Status s = WriteNoticeFile(options_.work_dir, NoticePath(options_.work_dir, *parts),
                                       NoticeJson(notice), owner);
      !s.ok()) {
    return s;
  }
  // Recorded before the signal: a crash between the two loses the signal (the file says it all),
  // never sends a second one.
  if (absl::Status s = RecordNoticeDelivered(run_dir, key); !s.ok()) return s;
  spdlog::info("run {}: {} notice, deadline {}{}: {}", run_id, notice.kind(),
               FormatRfc3339(notice.deadline_ms()),
               notice.signal() > 0 ? absl::StrCat(", ", SignalName(notice.signal())) : "",
               notice.reason());
  if (notice.signal() > 0) SignalLocked(run_id, run, notice.signal());
  return absl::OkStatus();
}

}  // namespace trainctl::agent
