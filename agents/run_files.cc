#include "agents/run_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/log_read.h"
#include "agents/safe_path.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace {

bool IsSafeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// The status of a step on the agent's own directories: never the user's error, whatever it says.
absl::Status HostError(const absl::Status& status) {
  if (status.ok() || status.code() == absl::StatusCode::kInternal) return status;
  return absl::InternalError(status.message());
}

// Opens `relative` beneath the agent's work dir, creating what is missing with `mode`, and gives
// the last directory `mode` through its descriptor (whatever the umask or an older agent left).
absl::StatusOr<UniqueFd> OpenWorkDir(const std::string& work_dir, const std::string& relative,
                                     mode_t mode) {
  BeneathOptions options;
  options.create_mode = mode;
  options.root_label = "the agent's work dir";
  absl::StatusOr<UniqueFd> dir = OpenDirBeneath(work_dir, relative, options);
  if (!dir.ok()) return HostError(dir.status());
  TC_RETURN_IF_ERROR(ChmodFd(dir->get(), absl::StrCat(work_dir, "/", relative), mode));
  return dir;
}

// The checkpoint directory, created beneath its root without following a link there; the user's
// error names the directory.
absl::StatusOr<UniqueFd> OpenCheckpointDir(const RunFilesRequest& request) {
  absl::StatusOr<UniqueFd> dir = absl::InternalError("unset");
  if (request.checkpoint_root.empty()) {
    dir = OpenOwnedByRoot(request.checkpoint_dir, BeneathOptions());
  } else {
    // A directory outside its root is trainctld's mistake, never the user's.
    TC_ASSIGN_OR_RETURN(std::string beneath,
                        PathBeneath(request.checkpoint_root, request.checkpoint_dir));
    BeneathOptions options;
    options.root_label = "the allowed root";
    dir = OpenDirBeneath(request.checkpoint_root, beneath, options);
  }
  if (dir.ok()) return dir;
  return absl::Status(dir.status().code(), absl::StrCat("checkpointDir ", request.checkpoint_dir,
                                                        ": ", dir.status().message()));
}

}  // namespace

absl::Status CheckPathComponent(absl::string_view what, absl::string_view name) {
  bool ok = !name.empty() && name != "." && name != ".." && name.size() <= 255;
  for (char c : name) ok = ok && IsSafeChar(c);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", what, " \"", name, "\": use letters, digits, '.', '_' and '-'"));
}

absl::StatusOr<RunIdParts> ParseRunId(absl::string_view run_id) {
  std::optional<RunIdParts> parts = SplitRunId(run_id);
  if (!parts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid run id \"", run_id, "\": want <job id>/<attempt>/<replica name>/<restart>"));
  }
  if (absl::Status s = CheckPathComponent("job id", parts->job_id); !s.ok()) return s;
  if (absl::Status s = CheckPathComponent("replica name", parts->replica_name); !s.ok()) return s;
  return *parts;
}

absl::Status CheckRunId(absl::string_view run_id, const RunIdParts& parts) {
  TC_RETURN_IF_ERROR(CheckPathComponent("job id", parts.job_id));
  TC_RETURN_IF_ERROR(CheckPathComponent("replica name", parts.replica_name));
  if (parts.attempt < 0 || parts.restart < 0) {
    return absl::InvalidArgumentError("negative attempt or restart");
  }
  if (run_id != MakeRunId(parts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run id \"", run_id, "\" does not match \"", MakeRunId(parts), "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> PrepareRunFiles(const RunFilesRequest& request, const RunUser* owner) {
  const RunIdParts& run = request.run;
  const std::string job_dir = absl::StrCat("jobs/", run.job_id);
  // The job's directory only lets the owners of its replicas' directories reach them.
  TC_ASSIGN_OR_RETURN(UniqueFd jobs, OpenWorkDir(request.work_dir, job_dir, 0711));
  TC_ASSIGN_OR_RETURN(
      UniqueFd working,
      OpenWorkDir(request.work_dir, absl::StrCat(job_dir, "/", run.replica_name), 0700));
  // Logs are the agent's to read (it serves them); no other user lists or reads them.
  const std::string attempt_dir = absl::StrCat("logs/", run.job_id, "/attempt-", run.attempt);
  TC_ASSIGN_OR_RETURN(UniqueFd logs, OpenWorkDir(request.work_dir, "logs", 0700));
  TC_ASSIGN_OR_RETURN(logs, OpenWorkDir(request.work_dir, absl::StrCat("logs/", run.job_id), 0700));
  TC_ASSIGN_OR_RETURN(logs, OpenWorkDir(request.work_dir, attempt_dir, 0700));
  std::optional<UniqueFd> checkpoint;
  if (!request.checkpoint_dir.empty()) {
    TC_ASSIGN_OR_RETURN(checkpoint, OpenCheckpointDir(request));
  }
  const std::string working_dir = RunWorkingDir(request.work_dir, run);
  if (owner != nullptr) {
    TC_RETURN_IF_ERROR(ChownFd(working.get(), working_dir, owner->uid, owner->gid, owner->name));
    if (checkpoint) {
      TC_RETURN_IF_ERROR(
          ChownFd(checkpoint->get(), request.checkpoint_dir, owner->uid, owner->gid, owner->name));
    }
  }
  const std::string log_path = RunLogPath(request.work_dir, run);
  const std::string log_name = log_path.substr(log_path.rfind('/') + 1);
  UniqueFd log(openat(logs.get(), log_name.c_str(),
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (log.get() < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", log_path, ": ", std::strerror(errno)));
  }
  // Readable by the replica's user and root only, whatever the umask or an older agent left.
  TC_RETURN_IF_ERROR(ChmodFd(log.get(), log_path, 0600));
  if (owner != nullptr) {
    TC_RETURN_IF_ERROR(ChownFd(log.get(), log_path, owner->uid, owner->gid, owner->name));
  }
  return log.release();
}

std::string RunWorkingDir(const std::string& work_dir, const RunIdParts& run) {
  return absl::StrCat(work_dir, "/jobs/", run.job_id, "/", run.replica_name);
}

std::string RunLogPath(const std::string& work_dir, const RunIdParts& run) {
  return absl::StrCat(work_dir, "/logs/", run.job_id, "/attempt-", run.attempt, "/",
                      run.replica_name, ".restart-", run.restart, ".log");
}

absl::Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", path, ": ", ec.message()));
  if (!std::filesystem::is_directory(path, ec)) {
    return absl::InternalError(absl::StrCat("cannot create ", path, ": not a directory"));
  }
  return absl::OkStatus();
}

std::string ReadOutputTail(const std::string& path, int max_lines, int64_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st;
  std::string data;
  int64_t start = 0;
  if (fstat(fd, &st) == 0) {
    start = st.st_size > max_bytes ? st.st_size - max_bytes : 0;
    absl::StatusOr<std::string> read = ReadFileAt(fd, start, st.st_size - start);
    if (read.ok()) data = *std::move(read);
  }
  close(fd);
  absl::string_view tail(data);
  while (!tail.empty() && tail.back() == '\n') tail.remove_suffix(1);
  if (start > 0) {  // The first line is probably cut; drop it unless it is all there is.
    size_t newline = tail.find('\n');
    if (newline != absl::string_view::npos) tail.remove_prefix(newline + 1);
  }
  int lines = 1;
  for (size_t i = tail.size(); i > 0; --i) {
    if (tail[i - 1] == '\n' && ++lines > max_lines) {
      tail.remove_prefix(i);
      break;
    }
  }
  return SanitizeUtf8(tail);
}

}  // namespace trainctl::agent
