#include "agents/proc_stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainctl::agent {
namespace {

bool ReadSmallFile(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n;
  out->clear();
  while ((n = read(fd, buf, sizeof(buf))) > 0) out->append(buf, static_cast<size_t>(n));
  close(fd);
  return n == 0;
}

// Calls `visit` with the stat of every process on the host.
template <typename Visit>
void ForEachProcess(Visit visit) {
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return;
  while (struct dirent* entry = readdir(dir)) {
    pid_t pid;
    ProcStat stat;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || !ReadProcStat(pid, &stat)) continue;
    visit(stat);
  }
  closedir(dir);
}

}  // namespace

bool ReadProcStat(pid_t pid, ProcStat* out) {
  std::string text;
  return ReadSmallFile(absl::StrCat("/proc/", pid, "/stat"), &text) && ParseProcStat(text, out);
}

bool ParseProcStat(absl::string_view text, ProcStat* out) {
  size_t open_paren = text.find('(');
  size_t close_paren = text.rfind(')');
  if (open_paren == absl::string_view::npos || close_paren == absl::string_view::npos ||
      close_paren < open_paren) {
    return false;
  }
  if (!absl::SimpleAtoi(text.substr(0, open_paren), &out->pid)) return false;
  // Fields after the name, numbered as in proc(5): 3 state, 4 ppid, 5 pgrp, ... 22 starttime,
  // ... 24 rss.
  std::vector<absl::string_view> fields =
      absl::StrSplit(text.substr(close_paren + 1), ' ', absl::SkipEmpty());
  constexpr size_t kFirst = 3;
  constexpr size_t kState = 3, kPgrp = 5, kStartTime = 22, kRss = 24;
  if (fields.size() < kRss - kFirst + 1 || fields[kState - kFirst].size() != 1) return false;
  out->state = fields[kState - kFirst][0];
  return absl::SimpleAtoi(fields[kPgrp - kFirst], &out->pgrp) &&
         absl::SimpleAtoi(fields[kStartTime - kFirst], &out->start_ticks) &&
         absl::SimpleAtoi(fields[kRss - kFirst], &out->rss_pages);
}

std::map<pid_t, int64_t> ResidentBytesByProcessGroup() {
  std::map<pid_t, int64_t> out;
  const int64_t page_size = sysconf(_SC_PAGESIZE);
  ForEachProcess([&](const ProcStat& stat) {
    if (stat.state != 'Z') out[stat.pgrp] += stat.rss_pages * page_size;
  });
  return out;
}

bool ProcessIsGone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  ProcStat stat;
  return ReadProcStat(pid, &stat) && stat.state == 'Z';
}

}  // namespace trainctl::agent
