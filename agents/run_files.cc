#include "agents/run_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/log_read.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace {

bool IsSafeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

absl::Status Chown(const std::string& path, const RunUser& owner) {
  if (chown(path.c_str(), owner.uid, owner.gid) == 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("cannot give ", path, " to user ", owner.name, ": ", std::strerror(errno)));
}

absl::Status Chmod(const std::string& path, mode_t mode) {
  if (chmod(path.c_str(), mode) == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cannot chmod ", path, ": ", std::strerror(errno)));
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

absl::StatusOr<int> PrepareRunFiles(const std::string& working_dir, const std::string& log_path,
                                    const std::string& checkpoint_dir, const RunUser* owner) {
  TC_RETURN_IF_ERROR(MakeDirs(working_dir));
  TC_RETURN_IF_ERROR(MakeDirs(log_path.substr(0, log_path.rfind('/'))));
  if (!checkpoint_dir.empty()) TC_RETURN_IF_ERROR(MakeDirs(checkpoint_dir));
  if (owner != nullptr) {
    TC_RETURN_IF_ERROR(Chmod(working_dir.substr(0, working_dir.rfind('/')), 0711));
    TC_RETURN_IF_ERROR(Chown(working_dir, *owner));
    TC_RETURN_IF_ERROR(Chmod(working_dir, 0700));
    if (!checkpoint_dir.empty()) TC_RETURN_IF_ERROR(Chown(checkpoint_dir, *owner));
  }
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", log_path, ": ", std::strerror(errno)));
  }
  if (owner != nullptr && fchown(fd, owner->uid, owner->gid) != 0) {
    const int error = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("cannot give ", log_path, " to user ", owner->name,
                                            ": ", std::strerror(error)));
  }
  return fd;
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
