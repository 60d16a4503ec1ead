#include "agents/host_resources.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainctl::agent {

std::optional<int64_t> ParseMemTotalMb(const std::string& meminfo) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumeSuffix(&line, "kB")) return std::nullopt;
    int64_t kib;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib) || kib < 0) return std::nullopt;
    return kib / 1024;
  }
  return std::nullopt;
}

std::vector<int32_t> NvidiaDeviceMinors(const std::string& dev_dir) {
  std::vector<int32_t> minors;
  DIR* dir = opendir(dev_dir.c_str());
  if (dir == nullptr) return minors;
  while (struct dirent* entry = readdir(dir)) {
    absl::string_view name = entry->d_name;
    int32_t minor;
    if (absl::ConsumePrefix(&name, "nvidia") && !name.empty() &&
        name.find_first_not_of("0123456789") == absl::string_view::npos &&
        absl::SimpleAtoi(name, &minor)) {
      minors.push_back(minor);
    }
  }
  closedir(dir);
  std::sort(minors.begin(), minors.end());
  return minors;
}

absl::StatusOr<HostResources> DetectHostResources() {
  HostResources out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return absl::InternalError(absl::StrCat("sched_getaffinity: ", std::strerror(errno)));
  }
  out.cpu = CPU_COUNT(&set);
  std::ifstream meminfo("/proc/meminfo");
  std::stringstream text;
  text << meminfo.rdbuf();
  std::optional<int64_t> memory_mb = ParseMemTotalMb(text.str());
  if (!memory_mb) return absl::InternalError("cannot read MemTotal from /proc/meminfo");
  out.memory_mb = *memory_mb;
  return out;
}

}  // namespace trainctl::agent
