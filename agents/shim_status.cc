// The agent's parsing of what trainctl-shim writes (shim_status.h), and the wording of failed
// launches, which matches SpawnProcess's (spawn.cc).
#include "agents/shim_status.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "agents/shim/shim_protocol.h"

namespace trainctl::agent {
namespace {

// The whole file at `path`: NOT_FOUND when it does not exist, INTERNAL when it cannot be read.
absl::StatusOr<std::string> ReadRunFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    return absl::InternalError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("read ", path, ": ", std::strerror(error)));
    }
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

bool ParseFlag(absl::string_view value, bool* out) {
  if (value != "0" && value != "1") return false;
  *out = value == "1";
  return true;
}

}  // namespace

absl::StatusOr<ShimStatus> ParseShimStatus(const std::string& text) {
  ShimStatus status;
  bool has_state = false, has_pid = false, has_ticks = false, has_exit_code = false,
       has_signal = false, has_errno = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    const absl::string_view key = kv.first, value = kv.second;
    bool ok = true;
    if (key == "state") {
      has_state = true;
      if (value == shim::kStateRunning) {
        status.state = ShimStatus::State::kRunning;
      } else if (value == shim::kStateExited) {
        status.state = ShimStatus::State::kExited;
      } else if (value == shim::kStateFailed) {
        status.state = ShimStatus::State::kFailed;
      } else {
        ok = false;
      }
    } else if (key == "pid") {
      ok = has_pid = absl::SimpleAtoi(value, &status.pid) && status.pid > 0;
    } else if (key == "start_ticks") {
      ok = has_ticks = absl::SimpleAtoi(value, &status.start_ticks);
    } else if (key == "start_time_ms") {
      ok = absl::SimpleAtoi(value, &status.start_time_ms);
    } else if (key == "end_time_ms") {
      ok = absl::SimpleAtoi(value, &status.end_time_ms);
    } else if (key == "exit_code") {
      ok = has_exit_code = absl::SimpleAtoi(value, &status.exit_code) && status.exit_code >= 0 &&
                           status.exit_code <= 255;
    } else if (key == "signal") {
      ok = has_signal = absl::SimpleAtoi(value, &status.signal) && status.signal > 0;
    } else if (key == "core_dumped") {
      ok = ParseFlag(value, &status.core_dumped);
    } else if (key == "oom_killed") {
      ok = ParseFlag(value, &status.oom_killed);
    } else if (key == "failed_stage") {
      status.failed_stage = std::string(value);
      ok = !value.empty();
    } else if (key == "failed_errno") {
      ok = has_errno = absl::SimpleAtoi(value, &status.failed_errno) && status.failed_errno >= 0;
    } else if (key == "error") {
      status.error = std::string(value);
    }  // Unknown keys are skipped: a newer shim may add some.
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("bad shim status line \"", line, "\""));
    }
  }
  if (!has_state) return absl::InvalidArgumentError("shim status lacks a state");
  switch (status.state) {
    case ShimStatus::State::kFailed:
      if (status.failed_stage.empty() || !has_errno) {
        return absl::InvalidArgumentError("failed shim status lacks failed_stage or failed_errno");
      }
      break;
    case ShimStatus::State::kExited:
      if (has_exit_code == has_signal) {
        return absl::InvalidArgumentError(
            "exited shim status needs exactly one of exit_code and signal");
      }
      [[fallthrough]];
    case ShimStatus::State::kRunning:
      if (!has_pid || !has_ticks) {
        return absl::InvalidArgumentError("shim status lacks pid or start_ticks");
      }
      break;
  }
  return status;
}

absl::StatusOr<ShimStatus> ReadShimStatus(const std::string& run_dir) {
  absl::StatusOr<std::string> text = ReadRunFile(absl::StrCat(run_dir, "/", shim::kStatusFile));
  if (!text.ok()) return text.status();
  return ParseShimStatus(*text);
}

absl::StatusOr<ShimStatus> ParseReadyLine(const std::string& text) {
  absl::string_view line = text;
  absl::ConsumeSuffix(&line, "\n");
  const std::vector<absl::string_view> words = absl::StrSplit(line, ' ');
  ShimStatus status;
  bool ok = false;
  if (words.size() == 4 && words[0] == shim::kReadyStarted) {
    status.state = ShimStatus::State::kRunning;
    ok = absl::SimpleAtoi(words[1], &status.pid) && status.pid > 0 &&
         absl::SimpleAtoi(words[2], &status.start_ticks) &&
         absl::SimpleAtoi(words[3], &status.start_time_ms);
  } else if (words.size() == 3 && words[0] == shim::kReadyFailed) {
    status.state = ShimStatus::State::kFailed;
    status.failed_stage = std::string(words[1]);
    ok = !status.failed_stage.empty() && absl::SimpleAtoi(words[2], &status.failed_errno) &&
         status.failed_errno >= 0;
  }
  // SimpleAtoi allows surrounding whitespace; the line does not.
  if (!ok || absl::StrContains(line, '\n')) {
    return absl::InvalidArgumentError(absl::StrCat("bad shim ready line \"", line, "\""));
  }
  return status;
}

absl::StatusOr<ShimPid> ParseShimPid(const std::string& text) {
  ShimPid shim;
  bool has_pid = false, has_ticks = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    bool ok = true;
    if (kv.first == "pid") {
      ok = has_pid = absl::SimpleAtoi(kv.second, &shim.pid) && shim.pid > 0;
    } else if (kv.first == "start_ticks") {
      ok = has_ticks = absl::SimpleAtoi(kv.second, &shim.start_ticks) && shim.start_ticks > 0;
    }
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("bad shim.pid line \"", line, "\""));
  }
  if (!has_pid || !has_ticks)
    return absl::InvalidArgumentError("shim.pid lacks pid or start_ticks");
  return shim;
}

absl::StatusOr<ShimPid> ReadShimPid(const std::string& run_dir) {
  absl::StatusOr<std::string> text = ReadRunFile(absl::StrCat(run_dir, "/", shim::kShimPidFile));
  if (!text.ok()) return text.status();
  return ParseShimPid(*text);
}

bool IsUserExecError(int error) {
  switch (error) {
    case ENOENT:
    case EACCES:
    case ENOEXEC:
    case ENOTDIR:
    case EISDIR:
    case ELOOP:
    case ENAMETOOLONG:
    case E2BIG:
      return true;
    default:
      return false;
  }
}

absl::Status LaunchErrorOf(const ShimStatus& status, const std::string& argv0,
                           const std::string& working_dir, const std::string& user_name) {
  if (status.state != ShimStatus::State::kFailed) return absl::OkStatus();
  const std::string error_text = std::strerror(status.failed_errno);
  if (status.failed_stage == shim::kStageExec) {
    std::string message = absl::StrCat("cannot execute ", argv0, ": ", error_text);
    return IsUserExecError(status.failed_errno) ? absl::InvalidArgumentError(message)
                                                : absl::InternalError(message);
  }
  if (status.failed_stage == shim::kStageChdir) {
    return absl::InternalError(absl::StrCat(
        "cannot enter working directory ", working_dir,
        user_name.empty() ? "" : absl::StrCat(" as user ", user_name), ": ", error_text));
  }
  if (status.failed_stage == shim::kStageUser) {
    return absl::InternalError(absl::StrCat("cannot switch to user ",
                                            user_name.empty() ? "?" : user_name, ": ", error_text));
  }
  if (status.failed_stage == shim::kStageMount) {
    return absl::InternalError(status.error.empty() ? absl::StrCat("cannot give the replica its "
                                                                   "job's private /tmp: ",
                                                                   error_text)
                                                    : status.error);
  }
  if (status.failed_stage == shim::kStageStdio) {
    return absl::InternalError(absl::StrCat("cannot set up stdin/stdout/stderr: ", error_text));
  }
  // The shim's own failure (or a stage this agent does not know): its own words.
  return absl::InternalError(
      absl::StrCat("trainctl-shim failed: ", status.error.empty() ? error_text : status.error));
}

}  // namespace trainctl::agent
