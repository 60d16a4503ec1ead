// Where a replica run's files live on the node, and how its captured output is read back.
//
// Layout under the agent's --work-dir:
//   jobs/<job id>/<replica name>/                          working directory, stable across
//                                                          restarts and attempts
//   logs/<job id>/attempt-<n>/<replica>.restart-<r>.log    stdout+stderr of one run
//
// A run id is "<job id>/<attempt>/<replica name>/<restart>"; ParseRunId() checks that each part
// is safe to use as a path component.
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agents/run_user.h"
#include "common/run_id.h"
#include "common/utf8.h"

namespace trainctl::agent {

using trainctl::MakeRunId;
using trainctl::RunIdParts;
using trainctl::SanitizeUtf8;

// Splits a run id. INVALID_ARGUMENT when it does not have four parts, a number is not a
// non-negative integer, or a name is not a safe path component ([A-Za-z0-9._-]+, not "." or
// "..").
absl::StatusOr<RunIdParts> ParseRunId(absl::string_view run_id);

// INVALID_ARGUMENT unless `name` is a safe single path component (see ParseRunId).
absl::Status CheckPathComponent(absl::string_view what, absl::string_view name);

// OK when `parts` are safe path components (see ParseRunId) and `run_id` is made of them.
absl::Status CheckRunId(absl::string_view run_id, const RunIdParts& parts);

// What PrepareRunFiles makes for one run.
struct RunFilesRequest {
  std::string work_dir;  // the agent's --work-dir
  RunIdParts run;        // checked (CheckRunId)
  // LaunchReplica.checkpoint_dir and checkpoint_root; an empty root: a trainctld older than
  // the agent, whose directories are walked from "/" following only root's links (safe_path.h).
  std::string checkpoint_dir;
  std::string checkpoint_root;
};

// Creates the run's working directory (RunWorkingDir), its log directories and (unless empty)
// checkpoint directory, and opens its log (RunLogPath) for appending (O_APPEND, close-on-exec).
// Nothing is created or opened through a symbolic link: the work dir and the checkpoint root are
// opened as any path, what lies beneath them without following links (safe_path.h). Modes are
// set through the descriptors, whatever the umask: jobs/<job> 0711, the working directory 0700,
// logs/, logs/<job> and its attempt directory 0700, the log file 0600. With an `owner` (null:
// leave them the caller's), the working and checkpoint directories and the log file become the
// owner's. Returns the log's fd, which the caller closes. INVALID_ARGUMENT (the user's error)
// when the checkpoint directory passes through a symbolic link or a non-directory beneath its
// root ("checkpointDir /ckpt/teama/esc/sub: \"esc\" is a symbolic link; trainctl follows none
// beneath the allowed root /ckpt/teama"); INTERNAL when another step fails.
absl::StatusOr<int> PrepareRunFiles(const RunFilesRequest& request, const RunUser* owner = nullptr);

std::string RunWorkingDir(const std::string& work_dir, const RunIdParts& run);
std::string RunLogPath(const std::string& work_dir, const RunIdParts& run);

// mkdir -p.
absl::Status MakeDirs(const std::string& path);

// The last `max_lines` lines of the file, at most `max_bytes` bytes of it, as valid UTF-8. A
// line cut by the byte limit is dropped unless it is the only one. "" when the file is missing
// or unreadable: the tail is a courtesy, never an error.
std::string ReadOutputTail(const std::string& path, int max_lines = 20, int64_t max_bytes = 4096);

}  // namespace trainctl::agent
