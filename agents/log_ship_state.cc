// LogShipState (log_ship_state.h): the runs' log files found on disk, the pieces of the next
// ShipLogs request, and what an answer changes.
#include "agents/log_ship_state.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agents/log_read.h"
#include "agents/run_files.h"
#include "common/run_id.h"

namespace trainctl::agent {
namespace log_ship_internal {

// Calls `fn(name, is_dir)` for each entry of `dir` but "." and ".."; nothing when it cannot be
// read. Entries whose type readdir leaves unknown are looked at with lstat; links are neither.
template <typename Fn>
void ListDir(const std::string& dir, Fn fn) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    bool is_dir = entry->d_type == DT_DIR;
    bool is_file = entry->d_type == DT_REG;
    if (entry->d_type == DT_UNKNOWN) {
      struct stat st;
      if (lstat((dir + "/" + name).c_str(), &st) != 0) continue;
      is_dir = S_ISDIR(st.st_mode);
      is_file = S_ISREG(st.st_mode);
    }
    if (is_dir || is_file) fn(name, is_dir);
  }
  closedir(d);
}

// A whole non-negative number written as RunLogPath writes it.
bool ParseCount(absl::string_view text, int32_t* out) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(text, out);
}

// The run whose log `file` in logs/<job>/<attempt dir> is, when it is one ("w-0.restart-2.log").
std::optional<RunIdParts> RunOfLogFile(const std::string& job, const std::string& attempt_dir,
                                       const std::string& file) {
  constexpr absl::string_view kAttempt = "attempt-";
  constexpr absl::string_view kRestart = ".restart-";
  constexpr absl::string_view kLog = ".log";
  RunIdParts parts;
  parts.job_id = job;
  if (!absl::StartsWith(attempt_dir, kAttempt) ||
      !ParseCount(absl::string_view(attempt_dir).substr(kAttempt.size()), &parts.attempt)) {
    return std::nullopt;
  }
  if (!absl::EndsWith(file, kLog)) return std::nullopt;
  const absl::string_view stem = absl::string_view(file).substr(0, file.size() - kLog.size());
  const size_t restart = stem.rfind(kRestart);
  if (restart == absl::string_view::npos || restart == 0) return std::nullopt;
  parts.replica_name = std::string(stem.substr(0, restart));
  if (!ParseCount(stem.substr(restart + kRestart.size()), &parts.restart)) return std::nullopt;
  if (!ParseRunId(MakeRunId(parts)).ok()) return std::nullopt;
  return parts;
}

trainctl::v1::LogPiece PieceAt(const std::string& run_id, int64_t offset, int64_t next_offset,
                               int64_t time_ms, int64_t file_size) {
  trainctl::v1::LogPiece piece;
  piece.set_run_id(run_id);
  piece.set_offset(offset);
  piece.set_next_offset(next_offset);
  piece.set_time_ms(time_ms);
  piece.set_file_size(file_size);
  return piece;
}

}  // namespace log_ship_internal

LogShipState::LogShipState(Options options) : options_(std::move(options)) {}

void LogShipState::Scan() {
  for (auto& entry : runs_) entry.second.seen = false;
  const std::string root = options_.work_dir + "/logs";
  log_ship_internal::ListDir(root, [&](const std::string& job, bool job_is_dir) {
    if (!job_is_dir) return;
    const std::string job_dir = root + "/" + job;
    log_ship_internal::ListDir(job_dir, [&](const std::string& attempt, bool attempt_is_dir) {
      if (!attempt_is_dir) return;
      const std::string attempt_dir = job_dir + "/" + attempt;
      log_ship_internal::ListDir(attempt_dir, [&](const std::string& file, bool file_is_dir) {
        if (file_is_dir) return;
        std::optional<RunIdParts> parts = log_ship_internal::RunOfLogFile(job, attempt, file);
        if (!parts) return;
        const std::string path = attempt_dir + "/" + file;
        if (RunLogPath(options_.work_dir, *parts) != path) return;
        RunState& run = runs_[MakeRunId(*parts)];
        run.seen = true;
        run.view.path = path;
        if (run.view.final || run.view.refused) return;
        struct stat st;
        if (stat(path.c_str(), &st) == 0) run.view.file_size = st.st_size;
      });
    });
  });
  for (auto it = runs_.begin(); it != runs_.end();) {
    it = it->second.seen ? std::next(it) : runs_.erase(it);
  }
}

void LogShipState::Resync() {
  for (auto& entry : runs_) {
    entry.second.view.known = false;
    entry.second.retry_at = absl::InfinitePast();
  }
}

std::vector<trainctl::v1::LogPiece> LogShipState::NextPieces(const EndedFn& ended, absl::Time now,
                                                             bool* more) {
  *more = false;
  std::vector<trainctl::v1::LogPiece> pieces;
  const int64_t now_ms = absl::ToUnixMillis(now);
  // Probes: where does each copy end?
  int probes = 0;
  for (auto& [run_id, run] : runs_) {
    if (run.view.final || run.view.refused || run.view.known || now < run.retry_at) continue;
    if (probes == options_.max_probes) {
      *more = true;
      break;
    }
    pieces.push_back(log_ship_internal::PieceAt(run_id, run.view.acked, run.view.acked, now_ms,
                                                run.view.file_size));
    ++probes;
  }
  // Bytes and ends, round robin from the run after the last one shipped.
  int64_t budget = options_.max_request_bytes;
  auto it = runs_.upper_bound(cursor_);
  for (size_t visited = 0; visited < runs_.size(); ++visited, ++it) {
    if (it == runs_.end()) it = runs_.begin();
    const std::string& run_id = it->first;
    RunState& run = it->second;
    if (run.view.final || run.view.refused || !run.view.known || now < run.retry_at) continue;
    const bool has_bytes = run.view.file_size > run.view.acked;
    if (budget <= 0) {
      *more = *more || has_bytes;
      if (has_bytes) break;
      continue;
    }
    // Asked before the read: bytes written before it ended are all in the file by then.
    const bool run_ended = ended(run_id);
    if (!has_bytes && !run_ended) continue;
    bool left = false;
    const int64_t used = AddPieces(run_id, run, run_ended, now_ms, budget, &pieces, &left);
    budget -= used;
    if (used > 0) cursor_ = run_id;
    *more = *more || left;
  }
  return pieces;
}

int64_t LogShipState::AddPieces(const std::string& run_id, RunState& run, bool ended,
                                int64_t now_ms, int64_t budget,
                                std::vector<trainctl::v1::LogPiece>* pieces, bool* left) {
  const size_t first = pieces->size();
  int64_t offset = run.view.acked;
  int64_t used = 0;
  bool reached_end = false;
  while (true) {
    if (used >= budget) {
      *left = true;
      break;
    }
    absl::StatusOr<LogChunk> chunk = ReadLogChunk(run.view.path, offset, budget - used);
    // Gone (the next Scan forgets it) or unreadable for now: what was read stays good.
    if (!chunk.ok()) return used;
    run.view.file_size = chunk->file_size;
    const int64_t plain = chunk->plain_end - offset;
    if (plain > 0) {
      trainctl::v1::LogPiece& piece = pieces->emplace_back(
          log_ship_internal::PieceAt(run_id, offset, chunk->plain_end, now_ms, chunk->file_size));
      piece.set_data(chunk->data.substr(0, static_cast<size_t>(plain)));
      used += plain;
    }
    if (chunk->next_offset > chunk->plain_end) {
      trainctl::v1::LogPiece& gap = pieces->emplace_back(log_ship_internal::PieceAt(
          run_id, chunk->plain_end, chunk->next_offset, now_ms, chunk->file_size));
      gap.set_data(chunk->data.substr(static_cast<size_t>(std::max<int64_t>(plain, 0))));
      gap.set_gap(true);
      used += static_cast<int64_t>(gap.data().size());
    }
    const bool advanced = chunk->next_offset > offset;
    offset = std::max(offset, chunk->next_offset);
    if (offset >= chunk->file_size) {
      reached_end = true;
      break;
    }
    if (!advanced) break;  // a short read: the file shrank under it
  }
  if (ended && reached_end) {
    if (pieces->size() > first) {
      pieces->back().set_final(true);
    } else {
      trainctl::v1::LogPiece& piece = pieces->emplace_back(
          log_ship_internal::PieceAt(run_id, offset, offset, now_ms, run.view.file_size));
      piece.set_final(true);
    }
  }
  return used;
}

absl::StatusOr<LogShipState::Applied> LogShipState::Apply(
    const google::protobuf::RepeatedPtrField<trainctl::v1::LogPiece>& sent,
    const trainctl::v1::ShipLogsResponse& answer, absl::Time now) {
  if (answer.runs_size() != sent.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the scheduler answered ", answer.runs_size(),
                                                   " runs to a request of ", sent.size(),
                                                   " pieces"));
  }
  for (int i = 0; i < sent.size(); ++i) {
    if (answer.runs(i).run_id() != sent[i].run_id() || answer.runs(i).offset() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the scheduler answered for run \"", answer.runs(i).run_id(), "\" at ",
                       answer.runs(i).offset(), " to a piece of run ", sent[i].run_id()));
    }
  }
  Applied applied;
  for (int i = 0; i < sent.size(); ++i) {
    const trainctl::v1::LogShipped& shipped = answer.runs(i);
    const trainctl::v1::LogPiece& piece = sent[i];
    auto it = runs_.find(shipped.run_id());
    if (it == runs_.end()) continue;  // its file went meanwhile
    RunState& run = it->second;
    if (run.view.refused || run.view.final) continue;
    if (!shipped.refused().empty()) {
      run.view.refused = true;
      applied.refused.emplace_back(shipped.run_id(), shipped.refused());
      continue;
    }
    if (!shipped.retry().empty()) {
      run.retry_at = now + options_.retry_after;
      applied.retry = shipped.retry();
      continue;
    }
    // Taken: the copy ended where the piece starts, and ends where it ends now.
    const bool taken = run.view.known && run.view.acked == piece.offset() &&
                       shipped.offset() == piece.next_offset() &&
                       piece.next_offset() > piece.offset();
    if (taken && !piece.gap()) applied.shipped_bytes += static_cast<int64_t>(piece.data().size());
    run.view.acked = shipped.offset();
    run.view.known = true;
    run.view.final = shipped.final();
  }
  return applied;
}

int64_t LogShipState::BacklogBytes() const {
  int64_t total = 0;
  for (const auto& [run_id, run] : runs_) {
    if (run.view.final || run.view.refused) continue;
    total += std::max<int64_t>(0, run.view.file_size - run.view.acked);
  }
  return total;
}

std::optional<LogShipState::RunView> LogShipState::Run(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return it->second.view;
}

}  // namespace trainctl::agent
