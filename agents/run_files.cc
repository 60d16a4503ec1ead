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
#include "common/status_macros.h"

namespace trainctl::agent {
namespace {

bool IsSafeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Length of the valid UTF-8 sequence at the start of `s`, or 0 when it is not valid.
size_t Utf8SequenceLength(absl::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  unsigned char c = byte(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
    unsigned char hi = c == 0xED ? 0x9F : 0xBF;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// pread() until `size` bytes or end of file.
absl::StatusOr<std::string> ReadAt(int fd, int64_t offset, int64_t size) {
  std::string out(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("read: ", std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
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

std::string SanitizeUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t n = Utf8SequenceLength(text);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      n = 1;
    } else {
      out.append(text.data(), n);
    }
    text.remove_prefix(n);
  }
  return out;
}

std::string ReadOutputTail(const std::string& path, int max_lines, int64_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st;
  std::string data;
  int64_t start = 0;
  if (fstat(fd, &st) == 0) {
    start = st.st_size > max_bytes ? st.st_size - max_bytes : 0;
    absl::StatusOr<std::string> read = ReadAt(fd, start, st.st_size - start);
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

absl::StatusOr<LogChunk> ReadLogChunk(const std::string& path, int64_t offset, int64_t max_bytes) {
  if (offset < 0) return absl::InvalidArgumentError("negative log offset");
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    if (error == ENOENT) return absl::NotFoundError(absl::StrCat("no log file ", path));
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(error)));
  }
  LogChunk chunk;
  absl::Status status;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    status = absl::InternalError(absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  } else {
    chunk.file_size = st.st_size;
    int64_t size = offset < st.st_size ? std::min<int64_t>(max_bytes, st.st_size - offset) : 0;
    absl::StatusOr<std::string> data = ReadAt(fd, offset, size);
    if (data.ok()) {
      chunk.data = *std::move(data);
    } else {
      status = data.status();
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return chunk;
}

}  // namespace trainctl::agent
