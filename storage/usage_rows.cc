// Reading and grouping the hourly usage rollup (storage/usage_rows.h).
#include "storage/usage_rows.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "storage/pg_statement.h"
#include "storage/statement.h"

namespace trainctl::storage {

absl::StatusOr<UsageBy> ParseUsageBy(const std::string& text) {
  UsageBy by;
  if (text == "project" || text.empty()) return by;
  if (text == "user") {
    by.dimension = UsageBy::Dimension::kUser;
    return by;
  }
  if (text == "node") {
    by.dimension = UsageBy::Dimension::kNode;
    return by;
  }
  if (absl::StartsWith(text, "label:") && text.size() > 6) {
    by.dimension = UsageBy::Dimension::kLabel;
    by.label = text.substr(6);
    return by;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--by must be project, user, label:KEY or node, got \"", text, "\""));
}

std::vector<UsageTotal> GroupUsage(const std::vector<sched::UsageHour>& rows, const UsageBy& by,
                                   const std::set<std::string>* projects) {
  std::map<std::string, UsageTotal> groups;
  for (const sched::UsageHour& row : rows) {
    if (projects != nullptr && projects->count(row.key.project) == 0) continue;
    std::string key;
    switch (by.dimension) {
      case UsageBy::Dimension::kProject:
        key = row.key.project;
        break;
      case UsageBy::Dimension::kUser:
        key = row.key.creator;
        break;
      case UsageBy::Dimension::kNode:
        key = row.key.node;
        break;
      case UsageBy::Dimension::kLabel: {
        const std::map<std::string, std::string> labels = sched::DecodeUsageLabels(row.key.labels);
        auto it = labels.find(by.label);
        if (it != labels.end()) key = it->second;
        break;
      }
    }
    UsageTotal& t = groups[key];
    t.key = key;
    t.gpu_seconds += row.gpu_seconds;
    t.cpu_seconds += row.cpu_seconds;
    t.memory_mb_seconds += row.memory_mb_seconds;
    t.runs += row.runs;
    t.wall_seconds += row.wall_seconds;
    t.queue_wait_seconds += row.queue_wait_seconds;
  }
  std::vector<UsageTotal> out;
  out.reserve(groups.size());
  for (auto& [key, total] : groups) out.push_back(std::move(total));
  return out;
}

template <typename Cache>
absl::StatusOr<std::vector<sched::UsageHour>> ReadUsage(Cache& cache, const UsageQuery& q) {
  TC_ASSIGN_OR_RETURN(
      auto* st,
      cache.Get(
          "SELECT MIN(hour_ms), project, creator, node, labels, SUM(gpu_seconds), "
          "SUM(cpu_seconds), SUM(memory_mb_seconds), CAST(SUM(runs) AS BIGINT), SUM(wall_seconds), "
          "SUM(queue_wait_seconds) FROM usage_hours WHERE hour_ms > ? AND hour_ms < ? "
          "GROUP BY project, creator, node, labels"));
  // An hour overlaps [since, until) when it ends after `since` and starts before `until`.
  const int64_t after = q.since_ms <= std::numeric_limits<int64_t>::min() + 3'600'000
                            ? std::numeric_limits<int64_t>::min()
                            : q.since_ms - 3'600'000;
  TC_RETURN_IF_ERROR(st->Bind({after, q.until_ms}));
  std::vector<sched::UsageHour> out;
  TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
    out.push_back(UsageHourOfRow(row));
    return absl::OkStatus();
  }));
  return out;
}

template absl::StatusOr<std::vector<sched::UsageHour>> ReadUsage(StatementCache&,
                                                                 const UsageQuery&);
template absl::StatusOr<std::vector<sched::UsageHour>> ReadUsage(PgStatementCache&,
                                                                 const UsageQuery&);

}  // namespace trainctl::storage
