#include "agents/run_records.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agents/run_files.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

constexpr char kRecordFile[] = "record";
constexpr char kLockFile[] = "lock";

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status RecordErrno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Whether some process holds the lock of the file at `path`; false when it does not exist.
bool LockHeld(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // Releases the lock if this took it.
  return held;
}

}  // namespace

std::string FormatRunRecord(const RunRecord& record) {
  // One "key value" line each; the checkpoint dir last, since it may hold any character but a
  // newline (the progress pattern, validated by the scheduler, holds none).
  return absl::StrCat("run_id ", record.run_id, "\nboot_id ", record.boot_id,
                      "\nmemory_limit_bytes ", record.memory_limit_bytes, "\nexclusive_cpus ",
                      record.exclusive_cpus, "\nprogress_pattern ", record.progress_pattern,
                      "\ncheckpoint_dir ", record.checkpoint_dir, "\n");
}

absl::StatusOr<RunRecord> ParseRunRecord(const std::string& text) {
  RunRecord record;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    const absl::string_view key = kv.first, value = kv.second;
    bool ok = true;
    if (key == "run_id") {
      record.run_id = std::string(value);
    } else if (key == "boot_id") {
      record.boot_id = std::string(value);
    } else if (key == "memory_limit_bytes") {
      ok = absl::SimpleAtoi(value, &record.memory_limit_bytes) && record.memory_limit_bytes >= 0;
    } else if (key == "exclusive_cpus") {
      record.exclusive_cpus = std::string(value);
    } else if (key == "progress_pattern") {
      record.progress_pattern = std::string(value);
    } else if (key == "checkpoint_dir") {
      record.checkpoint_dir = std::string(value);
    }  // Unknown keys are skipped: a newer agent may add some.
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("bad run record line \"", line, "\""));
  }
  if (record.run_id.empty()) return absl::InvalidArgumentError("run record lacks run_id");
  return record;
}

std::string BootId() {
  static const std::string* const id =
      new std::string(absl::StripAsciiWhitespace(ReadWholeFile("/proc/sys/kernel/random/boot_id")));
  return *id;
}

std::string RunRecordStore::RunDir(const std::string& run_id) const {
  // Run ids are made of [A-Za-z0-9._-] and '/', so '+' keeps names unique.
  return absl::StrCat(dir_, "/", absl::StrReplaceAll(run_id, {{"/", "+"}}));
}

absl::StatusOr<int> RunRecordStore::Create(const RunRecord& record) const {
  if (record.checkpoint_dir.find('\n') != std::string::npos) {
    return absl::InvalidArgumentError("checkpoint dir holds a newline");
  }
  const std::string dir = RunDir(record.run_id);
  if (mkdir(dir.c_str(), 0755) != 0) {
    if (errno == ENOENT) {
      if (absl::Status s = MakeDirs(dir); !s.ok()) return s;
    } else if (errno != EEXIST) {
      return RecordErrno("mkdir", dir);
    } else if (LockHeld(absl::StrCat(dir, "/", kLockFile))) {
      return absl::FailedPreconditionError(
          absl::StrCat("run ", record.run_id, " already has a live trainctl-shim"));
    }
  }
  auto fail = [&](absl::Status s) {
    Remove(record.run_id).IgnoreError();
    return s;
  };
  const std::string path = absl::StrCat(dir, "/", kRecordFile);
  const std::string tmp = path + ".tmp";
  const std::string text = FormatRunRecord(record);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(RecordErrno("open", tmp));
  ssize_t n = write(fd, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) {
    absl::Status s =
        n < 0 ? RecordErrno("write", tmp) : absl::InternalError("short write of " + tmp);
    close(fd);
    return fail(s);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) return fail(RecordErrno("rename", tmp));
  const std::string lock_path = absl::StrCat(dir, "/", kLockFile);
  int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) return fail(RecordErrno("open", lock_path));
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    absl::Status s = RecordErrno("flock", lock_path);
    close(lock);
    return fail(s);
  }
  return lock;
}

absl::Status RunRecordStore::Remove(const std::string& run_id) const {
  const std::string dir = RunDir(run_id);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot remove ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

std::vector<RunRecordStore::Found> RunRecordStore::Load() const {
  std::vector<Found> found;
  DIR* dir = opendir(dir_.c_str());
  if (dir == nullptr) return found;
  std::vector<std::string> names;
  while (struct dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  const std::string boot = BootId();
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir_, "/", name);
    const bool alive = LockHeld(absl::StrCat(path, "/", kLockFile));
    absl::StatusOr<RunRecord> record =
        ParseRunRecord(ReadWholeFile(absl::StrCat(path, "/", kRecordFile)));
    if (record.ok() && RunDir(record->run_id) != path) {
      record = absl::InvalidArgumentError("its name does not match its run id");
    }
    if (record.ok() && (alive || record->boot_id == boot)) {
      found.push_back({*std::move(record), alive});
      continue;
    }
    if (!record.ok() && alive) {
      spdlog::error("{}: {}, but a trainctl-shim holds its lock; leaving it alone", path,
                    std::string(record.status().message()));
      continue;
    }
    if (!record.ok()) {
      spdlog::warn("removing {}: {}: no replica was started for it", path,
                   std::string(record.status().message()));
    } else {
      spdlog::info("run {}: removing its directory of an earlier boot", record->run_id);
    }
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) spdlog::warn("cannot remove {}: {}", path, ec.message());
  }
  return found;
}

}  // namespace trainctl::agent
