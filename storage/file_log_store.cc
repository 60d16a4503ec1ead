// FileLogStore (storage/file_log_store.h): segment files of records, their scan at a run's first
// use, the index of each run's pieces, and the summaries Jobs() answers from.
#include "storage/file_log_store.h"

#include <errno.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/os_error.h"
#include "common/status_macros.h"
#include "storage/log_rules.h"
#include "storage/log_segment.h"

namespace trainctl::storage {
// Named, not anonymous: the storage library is a unity build.
namespace file_log_store_internal {

using log_segment::OsError;
using log_segment::PieceIndex;
using log_segment::Scan;
using log_segment::ScanSegment;

constexpr char kSuffix[] = ".seg";
constexpr char kDeleting[] = ".deleting-";

struct Run {
  absl::Mutex mu;
  std::string run_id;
  std::string job_id;
  std::string path;
  // The segment was looked at: `exists` and, when it does, fd, state and end are known.
  bool loaded ABSL_GUARDED_BY(mu) = false;
  // The segment exists (with a sound head); fd is open on it.
  bool exists ABSL_GUARDED_BY(mu) = false;
  // `pieces` holds every piece of the segment.
  bool indexed ABSL_GUARDED_BY(mu) = false;
  int fd ABSL_GUARDED_BY(mu) = -1;
  LogRunState state ABSL_GUARDED_BY(mu);
  std::vector<PieceIndex> pieces ABSL_GUARDED_BY(mu);
  // The end of the last sound record: where the next is written.
  int64_t end ABSL_GUARDED_BY(mu) = 0;

  ~Run() {
    if (fd >= 0) close(fd);
  }
  // Forgets what was read, so the next use reads the segment again (after a failed write).
  void Unload() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (fd >= 0) close(fd);
    fd = -1;
    loaded = exists = indexed = false;
    pieces.clear();
    state = LogRunState();
    end = 0;
  }
};

// Reads the whole segment of `run`, checking every record: cuts off a damaged tail, removes a
// segment without a sound head.
absl::Status Load(Run& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu) {
  run.Unload();
  const int fd = open(run.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    run.loaded = true;
    return absl::OkStatus();
  }
  if (fd < 0) return OsError(errno, "opening the log copy", run.path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return OsError(err, "reading the size of the log copy", run.path);
  }
  absl::StatusOr<Scan> scan = ScanSegment(fd, st.st_size, /*full=*/true, run.path);
  if (!scan.ok()) {
    close(fd);
    return scan.status();
  }
  if (!scan->has_head) {
    close(fd);
    if (st.st_size > 0) {
      spdlog::warn(
          "the log copy {} has no sound head record ({}), so its first write never "
          "finished: removing it",
          run.path, scan->damage);
    }
    if (unlink(run.path.c_str()) != 0 && errno != ENOENT) {
      return OsError(errno, "removing the unfinished log copy", run.path);
    }
    run.loaded = true;
    return absl::OkStatus();
  }
  if (scan->good_end < st.st_size) {
    spdlog::warn(
        "the log copy {} ends in damage ({}), the tail of a write a crash cut short: "
        "cutting off its last {} bytes, so the copy ends at offset {} and the agent ships "
        "the rest again",
        run.path, scan->damage, st.st_size - scan->good_end, scan->state.stored);
    if (ftruncate(fd, scan->good_end) != 0 || fdatasync(fd) != 0) {
      const int err = errno;
      close(fd);
      return OsError(err, "cutting the damaged tail off the log copy", run.path);
    }
  }
  run.fd = fd;
  run.loaded = run.exists = run.indexed = true;
  run.state = std::move(scan->state);
  run.state.job_id = run.job_id;
  run.pieces = std::move(scan->pieces);
  run.end = scan->good_end;
  return absl::OkStatus();
}

// Opens the segment of `run` as `state` says it stands (a Load or write of this process left
// it so), reading none of it. False when the file is not of that size.
absl::StatusOr<bool> Reopen(Run& run, const LogRunState& state)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu) {
  const int fd = open(run.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return false;
  if (fd < 0) return OsError(errno, "opening the log copy", run.path);
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size != state.bytes) {
    close(fd);
    return false;
  }
  run.fd = fd;
  run.loaded = run.exists = true;
  run.state = state;
  run.end = st.st_size;
  return true;
}

// Indexes the pieces of `run`'s segment from its record headers (the data was checked when the
// store first loaded it). False when they do not end where the run does.
absl::StatusOr<bool> Index(Run& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu) {
  TC_ASSIGN_OR_RETURN(Scan scan, ScanSegment(run.fd, run.end, /*full=*/false, run.path));
  if (!scan.has_head || scan.good_end != run.end || scan.state.stored != run.state.stored) {
    return false;
  }
  run.pieces = std::move(scan.pieces);
  run.indexed = true;
  return true;
}

// The first piece that holds a byte at or after `offset` (pieces.size() when none does).
size_t PieceAt(const std::vector<PieceIndex>& pieces, int64_t offset) {
  return std::partition_point(pieces.begin(), pieces.end(),
                              [&](const PieceIndex& p) { return p.next_offset <= offset; }) -
         pieces.begin();
}

// The run id a segment's file name `name` in job `job_id`'s directory stands for, or "".
std::string RunIdOfSegment(const std::string& job_id, const std::string& name) {
  if (!absl::EndsWith(name, kSuffix)) return "";
  const std::string stem = name.substr(0, name.size() - std::strlen(kSuffix));
  const size_t first = stem.find('.');
  const size_t last = stem.rfind('.');
  if (first == std::string::npos || first == last) return "";
  std::string run_id =
      absl::StrCat(job_id, "/", stem.substr(0, first), "/",
                   stem.substr(first + 1, last - first - 1), "/", stem.substr(last + 1));
  return ParseLogRunId(run_id).ok() ? run_id : "";
}

}  // namespace file_log_store_internal

absl::StatusOr<std::unique_ptr<FileLogStore>> FileLogStore::Open(const std::string& dir,
                                                                 size_t max_cached_runs) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return log_segment::OsError(errno, "making the log directory", dir);
    }
    if (!parent.empty()) TC_RETURN_IF_ERROR(log_segment::SyncPath(parent.string()));
  }
  if (!std::filesystem::is_directory(dir, ec) || access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the log directory ", dir,
                     " is not a directory trainctld can read and write: fix its permissions or "
                     "give another (--log-dir)"));
  }
  std::unique_ptr<FileLogStore> store(new FileLogStore(dir, std::max<size_t>(max_cached_runs, 1)));
  TC_RETURN_IF_ERROR(store->RemoveLeftovers());
  return store;
}

FileLogStore::~FileLogStore() = default;

absl::Status FileLogStore::RemoveLeftovers() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (!absl::StartsWith(entry.path().filename().string(), file_log_store_internal::kDeleting)) {
      continue;
    }
    std::error_code rm;
    std::filesystem::remove_all(entry.path(), rm);
    if (rm) {
      return absl::InternalError(absl::StrCat("removing ", entry.path().string(),
                                              " (a deleted job's logs): ", rm.message()));
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("listing ", dir_, ": ", ec.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> FileLogStore::SegmentPath(const std::string& run_id) const {
  TC_ASSIGN_OR_RETURN(RunIdParts parts, ParseLogRunId(run_id));
  return absl::StrCat(dir_, "/", parts.job_id, "/", parts.attempt, ".", parts.replica_name, ".",
                      parts.restart, file_log_store_internal::kSuffix);
}

size_t FileLogStore::cached_runs() {
  absl::MutexLock lock(&mu_);
  return runs_.size();
}

absl::StatusOr<std::shared_ptr<FileLogStore::Run>> FileLogStore::GetRun(const std::string& run_id) {
  TC_ASSIGN_OR_RETURN(std::string path, SegmentPath(run_id));
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it != runs_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  } else {
    auto run = std::make_shared<Run>();
    run->run_id = run_id;
    run->job_id = SplitRunId(run_id)->job_id;
    run->path = std::move(path);
    lru_.push_front(run_id);
    it = runs_.emplace(run_id, Entry{std::move(run), lru_.begin()}).first;
  }
  std::shared_ptr<Run> run = it->second.run;
  // Evicts the least recently used that no call holds (a call holds its copy of the pointer,
  // taken under mu_: one held only here stays so while mu_ is).
  for (auto lru = lru_.end(); runs_.size() > max_cached_runs_ && lru != lru_.begin();) {
    --lru;
    auto victim = runs_.find(*lru);
    if (victim->second.run.use_count() > 1) continue;
    runs_.erase(victim);
    lru = lru_.erase(lru);
  }
  return run;
}

void FileLogStore::SetSummary(const std::string& run_id, const std::string& job_id,
                              const LogRunState* state) {
  absl::MutexLock lock(&mu_);
  if (state != nullptr) {
    summaries_[job_id][run_id] = {*state, /*verified=*/true};
    return;
  }
  auto job = summaries_.find(job_id);
  if (job == summaries_.end()) return;
  job->second.erase(run_id);
  if (job->second.empty()) summaries_.erase(job);
}

std::optional<LogRunState> FileLogStore::Verified(const std::string& run_id,
                                                  const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto job = summaries_.find(job_id);
  if (job == summaries_.end()) return std::nullopt;
  auto run = job->second.find(run_id);
  if (run == job->second.end() || !run->second.verified) return std::nullopt;
  return run->second.state;
}

absl::Status FileLogStore::Prepare(Run& run, bool index) {
  using namespace file_log_store_internal;
  bool ready = run.loaded;
  if (!ready) {
    std::optional<LogRunState> verified = Verified(run.run_id, run.job_id);
    if (verified.has_value()) {
      TC_ASSIGN_OR_RETURN(ready, Reopen(run, *verified));
    }
  }
  if (ready && index && run.exists && !run.indexed) {
    TC_ASSIGN_OR_RETURN(ready, Index(run));
  }
  if (ready) return absl::OkStatus();
  TC_RETURN_IF_ERROR(Load(run));
  SetSummary(run.run_id, run.job_id, run.exists ? &run.state : nullptr);
  return absl::OkStatus();
}

absl::StatusOr<LogRunState> FileLogStore::Append(const std::string& node, const std::string& job_id,
                                                 const v1::LogPiece& piece) {
  using namespace log_segment;
  TC_RETURN_IF_ERROR(CheckLogPiece(node, job_id, piece));
  absl::ReaderMutexLock dir_lock(&dir_mu_);
  TC_ASSIGN_OR_RETURN(std::shared_ptr<Run> run, GetRun(piece.run_id()));
  absl::MutexLock lock(&run->mu);
  TC_RETURN_IF_ERROR(Prepare(*run, /*index=*/false));
  LogRunState state = run->state;
  if (run->exists) {
    TC_RETURN_IF_ERROR(CheckLogNode(state, node, piece.run_id()));
  } else {
    state = LogRunState();
    state.job_id = job_id;
    state.node = node;
  }
  const LogPieceEffect effect = ApplyLogPiece(piece, &state);
  std::string buf;
  if (!run->exists) {
    Header head;
    head.flags = kHead;
    head.time_ms = piece.time_ms();
    head.file_size = state.file_size;
    EncodeRecord(head, node, &buf);
  }
  const int64_t piece_pos = run->end + static_cast<int64_t>(buf.size() + kHeaderSize);
  if (effect.taken) {
    Header h;
    h.flags = (piece.gap() ? kGap : 0) | (piece.final() ? kFinal : 0);
    h.offset = piece.offset();
    h.next_offset = piece.next_offset();
    h.time_ms = piece.time_ms();
    h.file_size = state.file_size;
    EncodeRecord(h, piece.data(), &buf);
  }
  if (buf.empty()) {  // only file_size raised, or nothing: kept in memory
    state.bytes = run->end;
    run->state = state;
    if (effect.changed) SetSummary(run->run_id, run->job_id, &state);
    return state;
  }

  const bool created = !run->exists;
  bool made_dir = false;
  const std::string job_dir = absl::StrCat(dir_, "/", job_id);
  if (created) {
    if (mkdir(job_dir.c_str(), 0700) == 0) {
      made_dir = true;
    } else if (errno != EEXIST) {
      return log_segment::OsError(errno, "making the log directory", job_dir);
    }
    run->fd = open(run->path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (run->fd < 0) return log_segment::OsError(errno, "making the log copy", run->path);
    run->exists = true;  // for Unload
  }
  absl::Status s = log_segment::WriteAt(run->fd, buf, run->end, run->path);
  if (s.ok() && fdatasync(run->fd) != 0) {
    s = log_segment::OsError(errno, "syncing the log copy", run->path);
  }
  if (s.ok() && created) s = log_segment::SyncPath(job_dir);
  if (s.ok() && made_dir) s = log_segment::SyncPath(dir_);
  if (!s.ok()) {
    // Back to what the file held before, as far as that goes; the next use reads it again.
    if (created) {
      unlink(run->path.c_str());
    } else if (ftruncate(run->fd, run->end) != 0) {
      spdlog::warn("cannot cut {} back to {} bytes after a failed write: {}", run->path, run->end,
                   ErrnoText(errno));
    }
    run->Unload();
    return s;
  }
  if (created) run->indexed = true;  // no piece before this one
  if (effect.taken && run->indexed) {
    run->pieces.push_back({piece.offset(), piece.next_offset(), piece.time_ms(), piece_pos,
                           static_cast<uint32_t>(piece.data().size()), piece.gap()});
  }
  run->end += static_cast<int64_t>(buf.size());
  state.bytes = run->end;
  run->state = state;
  SetSummary(run->run_id, run->job_id, &state);
  return state;
}

absl::StatusOr<std::optional<LogRunState>> FileLogStore::State(const std::string& run_id) {
  absl::ReaderMutexLock dir_lock(&dir_mu_);
  TC_ASSIGN_OR_RETURN(std::shared_ptr<Run> run, GetRun(run_id));
  absl::MutexLock lock(&run->mu);
  TC_RETURN_IF_ERROR(Prepare(*run, /*index=*/false));
  if (!run->exists) return std::nullopt;
  return run->state;
}

absl::StatusOr<LogSlice> FileLogStore::Read(const std::string& run_id, int64_t offset,
                                            int64_t max_bytes) {
  TC_RETURN_IF_ERROR(CheckLogRead(run_id, offset, max_bytes));
  absl::ReaderMutexLock dir_lock(&dir_mu_);
  TC_ASSIGN_OR_RETURN(std::shared_ptr<Run> run, GetRun(run_id));
  absl::MutexLock lock(&run->mu);
  TC_RETURN_IF_ERROR(Prepare(*run, /*index=*/true));
  if (!run->exists) {
    return absl::NotFoundError(absl::StrCat("the store holds no log of run ", run_id));
  }
  LogSlice slice;
  slice.state = run->state;
  slice.next_offset = offset;
  std::string chunk;
  for (size_t i = file_log_store_internal::PieceAt(run->pieces, offset); i < run->pieces.size();
       ++i) {
    const log_segment::PieceIndex& p = run->pieces[i];
    if (p.next_offset == p.offset) continue;  // a gap of no length
    if (p.gap) {
      if (!slice.data.empty()) break;
      TC_RETURN_IF_ERROR(log_segment::ReadAt(run->fd, p.pos, p.length, &slice.data, run->path));
      slice.next_offset = p.next_offset;
      break;
    }
    const int64_t skip = std::max<int64_t>(offset - p.offset, 0);
    const int64_t want =
        std::min<int64_t>(p.length - skip, max_bytes - static_cast<int64_t>(slice.data.size()));
    TC_RETURN_IF_ERROR(
        log_segment::ReadAt(run->fd, p.pos + skip, static_cast<size_t>(want), &chunk, run->path));
    slice.data += chunk;
    slice.next_offset = p.offset + skip + want;
    if (static_cast<int64_t>(slice.data.size()) >= max_bytes) break;
  }
  return slice;
}

absl::StatusOr<int64_t> FileLogStore::OffsetSince(const std::string& run_id, int64_t since_ms) {
  absl::ReaderMutexLock dir_lock(&dir_mu_);
  TC_ASSIGN_OR_RETURN(std::shared_ptr<Run> run, GetRun(run_id));
  absl::MutexLock lock(&run->mu);
  TC_RETURN_IF_ERROR(Prepare(*run, /*index=*/true));
  if (!run->exists) {
    return absl::NotFoundError(absl::StrCat("the store holds no log of run ", run_id));
  }
  for (const log_segment::PieceIndex& p : run->pieces) {
    if (p.next_offset > p.offset && p.time_ms >= since_ms) return p.offset;
  }
  return run->state.stored;
}

absl::StatusOr<int64_t> FileLogStore::TailOffset(const std::string& run_id, int lines) {
  constexpr int64_t kChunk = 64 << 10;
  absl::ReaderMutexLock dir_lock(&dir_mu_);
  TC_ASSIGN_OR_RETURN(std::shared_ptr<Run> run, GetRun(run_id));
  absl::MutexLock lock(&run->mu);
  TC_RETURN_IF_ERROR(Prepare(*run, /*index=*/true));
  if (!run->exists) {
    return absl::NotFoundError(absl::StrCat("the store holds no log of run ", run_id));
  }
  LogTailCounter tail(lines, run->state.stored);
  std::string chunk;
  for (auto p = run->pieces.rbegin(); p != run->pieces.rend() && !tail.done(); ++p) {
    if (p->gap) {
      tail.Gap(p->offset, p->next_offset);
      continue;
    }
    for (int64_t end = p->length; end > 0 && !tail.done();) {
      const int64_t start = std::max<int64_t>(end - kChunk, 0);
      TC_RETURN_IF_ERROR(log_segment::ReadAt(run->fd, p->pos + start,
                                             static_cast<size_t>(end - start), &chunk, run->path));
      tail.Written(p->offset + start, chunk);
      end = start;
    }
  }
  return tail.result();
}

absl::Status FileLogStore::DeleteJob(const std::string& job_id) {
  TC_RETURN_IF_ERROR(CheckLogJobId(job_id));
  absl::WriterMutexLock dir_lock(&dir_mu_);
  int64_t n = 0;
  {
    // No call is under way (dir_mu_): nothing else holds these runs.
    absl::MutexLock lock(&mu_);
    for (auto it = runs_.begin(); it != runs_.end();) {
      if (it->second.run->job_id != job_id) {
        ++it;
        continue;
      }
      lru_.erase(it->second.lru);
      it = runs_.erase(it);
    }
    summaries_.erase(job_id);
    n = ++deletions_;
  }
  const std::string job_dir = absl::StrCat(dir_, "/", job_id);
  const std::string doomed =
      absl::StrCat(dir_, "/", file_log_store_internal::kDeleting, job_id, "-", getpid(), "-", n);
  std::error_code ec;
  std::filesystem::remove_all(doomed, ec);
  if (rename(job_dir.c_str(), doomed.c_str()) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return log_segment::OsError(errno, "moving aside the logs of job " + job_id + ":", job_dir);
  }
  TC_RETURN_IF_ERROR(log_segment::SyncPath(dir_));
  std::filesystem::remove_all(doomed, ec);
  if (ec) {
    // Gone from the store already; the next Open removes the rest.
    spdlog::warn("removing {} (the logs of deleted job {}): {}", doomed, job_id, ec.message());
  }
  return absl::OkStatus();
}

absl::Status FileLogStore::ScanSummaries() {
  using file_log_store_internal::RunIdOfSegment;
  std::error_code ec;
  for (const auto& job : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string job_id = job.path().filename().string();
    if (!IsLogStoreName(job_id) || !job.is_directory(ec)) continue;
    std::error_code job_ec;
    for (const auto& seg : std::filesystem::directory_iterator(job.path(), job_ec)) {
      const std::string run_id = RunIdOfSegment(job_id, seg.path().filename().string());
      if (run_id.empty()) continue;
      {
        absl::MutexLock lock(&mu_);
        auto summaries = summaries_.find(job_id);
        if (summaries != summaries_.end() && summaries->second.count(run_id) > 0) continue;
      }
      const std::string path = seg.path().string();
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT) continue;
      if (fd < 0) return log_segment::OsError(errno, "opening the log copy", path);
      struct stat st;
      absl::StatusOr<file_log_store_internal::Scan> scan =
          fstat(fd, &st) == 0
              ? file_log_store_internal::ScanSegment(fd, st.st_size, /*full=*/false, path)
              : log_segment::OsError(errno, "reading the size of the log copy", path);
      close(fd);
      if (!scan.ok()) return scan.status();
      if (!scan->has_head) continue;
      scan->state.job_id = job_id;
      scan->state.bytes = st.st_size;
      absl::MutexLock lock(&mu_);
      summaries_[job_id].emplace(run_id, Summary{std::move(scan->state), /*verified=*/false});
    }
    if (job_ec) {
      return absl::InternalError(
          absl::StrCat("listing ", job.path().string(), ": ", job_ec.message()));
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("listing ", dir_, ": ", ec.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LogJobUsage>> FileLogStore::Jobs() {
  absl::ReaderMutexLock dir_lock(&dir_mu_);
  bool scanned;
  {
    absl::MutexLock lock(&mu_);
    scanned = scanned_;
  }
  if (!scanned) {
    TC_RETURN_IF_ERROR(ScanSummaries());
    absl::MutexLock lock(&mu_);
    scanned_ = true;
  }
  absl::MutexLock lock(&mu_);
  std::vector<LogJobUsage> jobs;
  for (const auto& [job_id, runs] : summaries_) {
    if (runs.empty()) continue;
    LogJobUsage usage;
    usage.job_id = job_id;
    usage.all_final = true;
    for (const auto& [run_id, summary] : runs) {
      const LogRunState& state = summary.state;
      usage.bytes += state.bytes;
      usage.last_ms = std::max(usage.last_ms, state.last_ms);
      usage.all_final = usage.all_final && state.final;
    }
    jobs.push_back(std::move(usage));
  }
  return jobs;
}

}  // namespace trainctl::storage
