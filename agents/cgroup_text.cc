#include "agents/cgroup_text.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/index_list.h"

namespace trainctl::agent {

int64_t CpuQuotaMicros(double cpu) {
  const double quota = std::llround(cpu * static_cast<double>(kCpuPeriodMicros));
  return std::max<int64_t>(static_cast<int64_t>(quota), kMinCpuQuotaMicros);
}

std::string CpuMaxValue(double cpu) {
  return absl::StrCat(CpuQuotaMicros(cpu), " ", kCpuPeriodMicros);
}

absl::StatusOr<std::set<int>> ParseCpuList(absl::string_view text) {
  absl::StatusOr<std::vector<int32_t>> cpus = ParseIndexList(text);
  if (!cpus.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("bad CPU list: ", cpus.status().message()));
  }
  return std::set<int>(cpus->begin(), cpus->end());
}

std::string FormatCpuList(const std::set<int>& cpus) {
  return FormatIndexList(std::vector<int32_t>(cpus.begin(), cpus.end()));
}

std::string CharDeviceRule(int major, int minor) {
  return absl::StrCat("c ", major, ":", minor, " rwm");
}

std::optional<int64_t> ParseOomKillCount(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(absl::StripAsciiWhitespace(line), ' ', absl::SkipEmpty());
    if (fields.size() != 2 || fields[0] != "oom_kill") continue;
    int64_t count = 0;
    if (!absl::SimpleAtoi(fields[1], &count) || count < 0) return std::nullopt;
    return count;
  }
  return std::nullopt;
}

}  // namespace trainctl::agent
