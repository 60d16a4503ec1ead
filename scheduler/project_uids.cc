#include "scheduler/project_uids.h"

#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainctl::sched {
namespace {

// The bounds of a range: above the system ids (a replica must not run as a system user such as
// daemon or bin), and at most 2^31 - 2 (-1 is "no id" to chown and setreuid).
constexpr uint32_t kMinRangeUid = 1000;
constexpr uint32_t kMaxRangeUid = 2147483646;

}  // namespace

std::string UidRange::ToString() const { return absl::StrCat(first, "-", last); }

absl::StatusOr<UidRange> ParseUidRange(absl::string_view what, absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, absl::MaxSplits('-', 1));
  UidRange range;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &range.first) ||
      !absl::SimpleAtoi(parts[1], &range.last) || range.first < kMinRangeUid ||
      range.first > range.last || range.last > kMaxRangeUid) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": expected FIRST-LAST, two uids with ", kMinRangeUid,
        " <= FIRST <= LAST <= ", kMaxRangeUid, " (e.g. 65536-99999), got \"", text, "\""));
  }
  for (uint32_t reserved : {65534u, 65535u}) {
    if (range.Contains(reserved)) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": the range ", text, " holds ", reserved,
          reserved == 65534 ? " (nobody)" : " (-1 as a 16-bit id)", "; choose one without it"));
    }
  }
  return range;
}

void ProjectUids::Restore(std::map<std::string, uint32_t> uids) {
  by_project_ = std::move(uids);
  taken_.clear();
  for (const auto& [project, uid] : by_project_) taken_.insert(uid);
}

absl::StatusOr<ProjectUids::Allocation> ProjectUids::Allocate(const std::string& project) {
  if (std::optional<uint32_t> uid = Find(project)) return Allocation{*uid, false};
  // The lowest uid of the range no project holds: walk the taken ones inside it in order.
  uint64_t candidate = range_.first;
  for (auto it = taken_.lower_bound(range_.first); it != taken_.end() && *it == candidate; ++it) {
    ++candidate;
  }
  if (candidate > range_.last) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no replica uid left for project ", project, ": every uid of --replica-uid-range ",
        range_.ToString(),
        " belongs to another project; widen trainctld's --replica-uid-range and restart "
        "it"));
  }
  const auto uid = static_cast<uint32_t>(candidate);
  by_project_[project] = uid;
  taken_.insert(uid);
  return Allocation{uid, true};
}

std::optional<uint32_t> ProjectUids::Find(const std::string& project) const {
  auto it = by_project_.find(project);
  if (it == by_project_.end()) return std::nullopt;
  return it->second;
}

}  // namespace trainctl::sched
