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

// Creates the run's working, log and (unless empty) checkpoint directories, and opens its log
// for appending (O_APPEND, close-on-exec). With an `owner` (null: leave them the caller's), the
// working directory becomes the owner's with mode 0700, its parent gets mode 0711 so the owner
// can reach it, and the checkpoint directory and the log file become the owner's. Returns the
// log's fd, which the caller closes. INTERNAL when a step fails.
absl::StatusOr<int> PrepareRunFiles(const std::string& working_dir, const std::string& log_path,
                                    const std::string& checkpoint_dir,
                                    const RunUser* owner = nullptr);

std::string RunWorkingDir(const std::string& work_dir, const RunIdParts& run);
std::string RunLogPath(const std::string& work_dir, const RunIdParts& run);

// mkdir -p.
absl::Status MakeDirs(const std::string& path);

// The last `max_lines` lines of the file, at most `max_bytes` bytes of it, as valid UTF-8. A
// line cut by the byte limit is dropped unless it is the only one. "" when the file is missing
// or unreadable: the tail is a courtesy, never an error.
std::string ReadOutputTail(const std::string& path, int max_lines = 20, int64_t max_bytes = 4096);

}  // namespace trainctl::agent
