#include "agents/run_records.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agents/proc_stats.h"
#include "agents/run_files.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

constexpr char kSuffix[] = ".run";

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string FormatRunRecord(const RunRecord& record) {
  // One "key value" line each; the checkpoint dir last, since it is the only free-form value.
  return absl::StrCat("run_id ", record.run_id, "\npid ", record.pid, "\nstart_ticks ",
                      record.start_ticks, "\nboot_id ", record.boot_id, "\nmemory_limit_bytes ",
                      record.memory_limit_bytes, "\nexclusive_cpus ", record.exclusive_cpus,
                      "\ncheckpoint_dir ", record.checkpoint_dir, "\n");
}

absl::StatusOr<RunRecord> ParseRunRecord(const std::string& text) {
  RunRecord record;
  bool has_run_id = false, has_pid = false, has_start = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    const absl::string_view key = kv.first, value = kv.second;
    bool ok = true;
    if (key == "run_id") {
      record.run_id = std::string(value);
      has_run_id = !value.empty();
    } else if (key == "pid") {
      ok = absl::SimpleAtoi(value, &record.pid) && record.pid > 0;
      has_pid = ok;
    } else if (key == "start_ticks") {
      ok = absl::SimpleAtoi(value, &record.start_ticks);
      has_start = ok;
    } else if (key == "boot_id") {
      record.boot_id = std::string(value);
    } else if (key == "memory_limit_bytes") {
      ok = absl::SimpleAtoi(value, &record.memory_limit_bytes) && record.memory_limit_bytes >= 0;
    } else if (key == "exclusive_cpus") {
      record.exclusive_cpus = std::string(value);
    } else if (key == "checkpoint_dir") {
      record.checkpoint_dir = std::string(value);
    }  // Unknown keys are skipped: a newer agent may add some.
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("bad run record line \"", line, "\""));
  }
  if (!has_run_id || !has_pid || !has_start) {
    return absl::InvalidArgumentError("run record lacks run_id, pid or start_ticks");
  }
  return record;
}

std::string BootId() {
  return std::string(absl::StripAsciiWhitespace(ReadWholeFile("/proc/sys/kernel/random/boot_id")));
}

bool RecordedProcessRuns(const RunRecord& record) {
  ProcStat stat;
  if (!ReadProcStat(record.pid, &stat) || stat.state == 'Z') return false;
  return stat.start_ticks == record.start_ticks && record.boot_id == BootId();
}

std::string RunRecordStore::PathOf(const std::string& run_id) const {
  // Run ids are made of [A-Za-z0-9._-] and '/', so '+' keeps names unique.
  return absl::StrCat(dir_, "/", absl::StrReplaceAll(run_id, {{"/", "+"}}), kSuffix);
}

absl::Status RunRecordStore::Write(const RunRecord& record) const {
  if (record.checkpoint_dir.find('\n') != std::string::npos) {
    return absl::InvalidArgumentError("checkpoint dir holds a newline");
  }
  if (absl::Status s = MakeDirs(dir_); !s.ok()) return s;
  const std::string path = PathOf(record.run_id);
  const std::string tmp = path + ".tmp";
  const std::string text = FormatRunRecord(record);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", tmp, ": ", std::strerror(errno)));
  ssize_t n = write(fd, text.data(), text.size());
  int write_errno = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("write ", tmp, ": ", std::strerror(write_errno)));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int rename_errno = errno;
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("rename ", tmp, ": ", std::strerror(rename_errno)));
  }
  return absl::OkStatus();
}

absl::Status RunRecordStore::Remove(const std::string& run_id) const {
  const std::string path = PathOf(run_id);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("unlink ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::vector<RunRecord> RunRecordStore::LoadAlive() const {
  std::vector<RunRecord> alive;
  DIR* dir = opendir(dir_.c_str());
  if (dir == nullptr) return alive;
  std::vector<std::string> names;
  while (struct dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  closedir(dir);
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir_, "/", name);
    absl::StatusOr<RunRecord> record = absl::EndsWith(name, kSuffix)
                                           ? ParseRunRecord(ReadWholeFile(path))
                                           : absl::InvalidArgumentError("not a run record");
    if (record.ok() && PathOf(record->run_id) != path) {
      record = absl::InvalidArgumentError("its name does not match its run id");
    }
    if (!record.ok()) {
      spdlog::warn("removing {}: {}", path, std::string(record.status().message()));
    } else if (RecordedProcessRuns(*record)) {
      alive.push_back(*std::move(record));
      continue;
    } else {
      spdlog::info("run {}: pid {} of an earlier agent is gone; removing its record",
                   record->run_id, record->pid);
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("cannot remove {}: {}", path, std::strerror(errno));
    }
  }
  return alive;
}

}  // namespace trainctl::agent
