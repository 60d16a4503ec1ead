// Rendering GetStacks answers (stacks_view.h).
#include "cli/stacks_view.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/job_view.h"
#include "cli/output.h"
#include "google/protobuf/util/time_util.h"

namespace trainctl::cli {
namespace {

// The most replica names a group's line lists before "and N more".
constexpr size_t kNamesPerGroup = 8;

// Where one replica was, as a group key: its summary, or why it has none.
std::string WhereOf(const v1::ReplicaStacks& s) {
  if (!s.error().empty()) return absl::StrCat("no stacks: ", s.error());
  if (!s.summary().empty()) return absl::StrCat("in ", s.summary());
  return "no frame named (see the full stacks)";
}

std::string Took(const v1::ReplicaStacks& s) {
  const int64_t ms = google::protobuf::util::TimeUtil::DurationToMilliseconds(s.took());
  return ms >= 1000 ? absl::StrCat(ms / 1000, ".", (ms % 1000) / 100, "s") : absl::StrCat(ms, "ms");
}

}  // namespace

std::string RenderStacks(const v1::GetStacksResponse& resp) {
  std::string out;
  for (const v1::ReplicaStacks& s : resp.stacks()) {
    absl::StrAppend(&out, "=== ", s.replica(), " (attempt ", s.attempt(), ", restart ", s.restart(),
                    ", node ", s.node(), "): ", s.reason().empty() ? "?" : s.reason(),
                    ", captured ", FormatTimestamp(s.capture_time()), " in ", Took(s), "\n");
    absl::StrAppend(&out, WhereOf(s), s.truncated() ? " (some text was cut: --stack-max-kb)" : "",
                    "\n");
    for (const v1::ProcessStacks& p : s.processes()) {
      absl::StrAppend(&out, "--- pid ", p.pid(), ": ", p.command(),
                      p.summary().empty() ? "" : absl::StrCat(" (in ", p.summary(), ")"), "\n");
      if (!p.error().empty()) absl::StrAppend(&out, "[", p.error(), "]\n");
      absl::StrAppend(&out, p.text());
      if (!p.text().empty() && p.text().back() != '\n') out += '\n';
    }
    out += '\n';
  }
  return out;
}

std::string StacksSummary(const v1::GetStacksResponse& resp) {
  // Groups in the order of their first replica, then the largest first.
  std::map<std::string, std::vector<std::string>> groups;
  std::vector<std::string> order;
  for (const v1::ReplicaStacks& s : resp.stacks()) {
    std::vector<std::string>& names = groups[WhereOf(s)];
    if (names.empty()) order.push_back(WhereOf(s));
    names.push_back(s.replica());
  }
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return groups[a].size() > groups[b].size();
  });
  std::string out;
  for (const std::string& where : order) {
    const std::vector<std::string>& names = groups[where];
    if (names.size() == 1) {
      absl::StrAppend(&out, names[0], " ", where, "\n");
      continue;
    }
    std::vector<std::string> shown(names.begin(),
                                   names.begin() + std::min(names.size(), kNamesPerGroup));
    absl::StrAppend(&out, names.size(), " replicas ", where, ": ", absl::StrJoin(shown, ", "),
                    names.size() > shown.size()
                        ? absl::StrCat(" and ", names.size() - shown.size(), " more")
                        : "",
                    "\n");
  }
  return out;
}

std::string RenderStacksSection(const std::string& job_id, const v1::GetStacksResponse& resp) {
  if (resp.stacks().empty()) return "";
  std::set<std::string> reasons;
  for (const v1::ReplicaStacks& s : resp.stacks()) reasons.insert(s.reason());
  return absl::StrCat("Stacks (attempt ", resp.attempt(),
                      ", captured before the stop: ", absl::StrJoin(reasons, ", "), "):\n",
                      IndentLines(StacksSummary(resp), 2), "  In full: trainctl stacks ", job_id,
                      "\n");
}

}  // namespace trainctl::cli
