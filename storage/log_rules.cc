// LogRules (storage/log_rules.h): run ids and pieces checked, pieces applied to a copy's state,
// and the backwards count of a copy's lines.
#include "storage/log_rules.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace trainctl::storage {

bool IsLogStoreName(absl::string_view name) {
  if (name.empty() || name.size() > 200 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<RunIdParts> ParseLogRunId(absl::string_view run_id) {
  std::optional<RunIdParts> parts = SplitRunId(run_id);
  if (!parts.has_value() || MakeRunId(*parts) != run_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", run_id,
                     "\" is not a run id: want <job id>/<attempt>/<replica name>/<restart>, the "
                     "numbers without leading zeros"));
  }
  if (!IsLogStoreName(parts->job_id) || !IsLogStoreName(parts->replica_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run id \"", run_id,
                     "\": its job id and replica name must be 1 to 200 of A-Z a-z 0-9 . _ - and "
                     "not start with '.'"));
  }
  return *std::move(parts);
}

absl::Status CheckLogJobId(absl::string_view job_id) {
  if (IsLogStoreName(job_id)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("\"", job_id,
                   "\" is not a job id the log store keeps: 1 to 200 of A-Z a-z 0-9 . _ - and "
                   "not starting with '.'"));
}

absl::Status CheckLogPiece(absl::string_view node, absl::string_view job_id,
                           const v1::LogPiece& piece) {
  absl::StatusOr<RunIdParts> parts = ParseLogRunId(piece.run_id());
  if (!parts.ok()) return parts.status();
  if (node.empty() || node.size() > kMaxLogNodeBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a log piece of run ", piece.run_id(),
                                                   " from a node name of ", node.size(),
                                                   " bytes: want 1 to ", kMaxLogNodeBytes));
  }
  if (parts->job_id != job_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("run \"", piece.run_id(), "\" is not a run of job \"", job_id, "\""));
  }
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("a log piece of run ", piece.run_id(),
                                                   " at offset ", piece.offset(), ": ", what));
  };
  if (piece.offset() < 0 || piece.file_size() < 0) return bad("a negative offset or file size");
  if (piece.next_offset() < piece.offset()) {
    return bad(absl::StrCat("next_offset ", piece.next_offset(), " is before its offset"));
  }
  if (static_cast<int64_t>(piece.data().size()) > kMaxLogPieceBytes) {
    return bad(absl::StrCat(piece.data().size(),
                            " bytes of data, more than the most a piece holds (", kMaxLogPieceBytes,
                            ")"));
  }
  if (!piece.gap() &&
      static_cast<int64_t>(piece.data().size()) != piece.next_offset() - piece.offset()) {
    return bad(absl::StrCat(piece.data().size(), " bytes of data where next_offset - offset is ",
                            piece.next_offset() - piece.offset()));
  }
  return absl::OkStatus();
}

absl::Status CheckLogRead(absl::string_view run_id, int64_t offset, int64_t max_bytes) {
  if (offset >= 0 && max_bytes >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("reading the log copy of run ", run_id,
                                                 " at offset ", offset, " for ", max_bytes,
                                                 " bytes: want an offset >= 0 and bytes >= 1"));
}

absl::Status CheckLogNode(const LogRunState& state, const std::string& node,
                          absl::string_view run_id) {
  if (state.node == node) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the log of run ", run_id, " is shipped by node ", state.node, ", not ", node));
}

LogPieceEffect ApplyLogPiece(const v1::LogPiece& piece, LogRunState* state) {
  LogPieceEffect effect;
  if (state->final) return effect;
  if (piece.offset() == state->stored && !IsLogProbe(piece)) {
    effect.taken = true;
    effect.changed = true;
    state->stored = piece.next_offset();
    state->final = piece.final();
    state->last_ms = std::max(state->last_ms, piece.time_ms());
  }
  const int64_t file_size = std::max({state->file_size, piece.file_size(), state->stored});
  if (file_size != state->file_size) {
    state->file_size = file_size;
    effect.changed = true;
  }
  return effect;
}

LogTailCounter::LogTailCounter(int lines, int64_t stored) : lines_(lines), stored_(stored) {
  if (lines <= 0) {
    done_ = true;
    result_ = stored;
  }
}

bool LogTailCounter::Start(int64_t start) {
  if (done_) return true;
  if (start >= stored_ || start == last_start_) return false;
  last_start_ = start;
  if (++count_ == lines_) {
    done_ = true;
    result_ = start;
  }
  return done_;
}

bool LogTailCounter::Gap(int64_t offset, int64_t next_offset) {
  if (done_) return true;
  if (next_offset <= offset) return false;
  return Start(next_offset) || Start(offset);
}

bool LogTailCounter::Written(int64_t offset, absl::string_view data) {
  size_t n = data.size();
  while (!done_ && n > 0) {
    const void* nl = memrchr(data.data(), '\n', n);
    if (nl == nullptr) break;
    const size_t at = static_cast<const char*>(nl) - data.data();
    Start(offset + static_cast<int64_t>(at) + 1);
    n = at;
  }
  return done_;
}

}  // namespace trainctl::storage
