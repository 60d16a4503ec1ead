// Reading the hourly usage rollup (usage_hours, scheduler/usage_rollup.h) back for accounting:
// the rows of a time range summed per key (ReadUsage, on either backend's statement cache, run
// by the JobArchive off the reconcile loop), and those sums grouped by one dimension (GroupUsage:
// project, user, node, or a job label's value), the answer of `trainctl usage`.
//
//   TC_ASSIGN_OR_RETURN(UsageBy by, ParseUsageBy("label:team"));
//   TC_ASSIGN_OR_RETURN(auto rows, archive->ListUsage({since_ms, until_ms}));
//   std::vector<UsageTotal> totals = GroupUsage(rows, by);
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/usage_ledger.h"

namespace trainctl::storage {

// The rows of the hours that overlap [since_ms, until_ms): an hour counts whole.
struct UsageQuery {
  int64_t since_ms = 0;
  int64_t until_ms = std::numeric_limits<int64_t>::max();
};

// How usage is grouped.
struct UsageBy {
  enum class Dimension { kProject, kUser, kNode, kLabel };
  Dimension dimension = Dimension::kProject;
  // For kLabel: the label's key.
  std::string label;
};

// "project", "user", "node" or "label:KEY". INVALID_ARGUMENT, saying what it takes, otherwise.
absl::StatusOr<UsageBy> ParseUsageBy(const std::string& text);

// One group's sums. `key` is the group's project, creator, node or label value ("" for rows
// without one: no creator without authentication, a job without that label).
struct UsageTotal {
  std::string key;
  double gpu_seconds = 0;
  double cpu_seconds = 0;
  double memory_mb_seconds = 0;
  int64_t runs = 0;
  double wall_seconds = 0;
  double queue_wait_seconds = 0;
};

// `rows` summed by `by`, ordered by key; only the projects in `projects` when it is set.
std::vector<UsageTotal> GroupUsage(const std::vector<sched::UsageHour>& rows, const UsageBy& by,
                                   const std::set<std::string>* projects = nullptr);

// The rows `q` asks for, summed per (project, creator, node, labels): each UsageHour's hour is
// the earliest hour summed.
template <typename Cache>
absl::StatusOr<std::vector<sched::UsageHour>> ReadUsage(Cache& cache, const UsageQuery& q);

// A row of (hour_ms, project, creator, node, labels, gpu_seconds, cpu_seconds,
// memory_mb_seconds, runs, wall_seconds, queue_wait_seconds), as ReadUsage and the snapshot
// reader select them, of either backend's statement.
template <typename Row>
sched::UsageHour UsageHourOfRow(Row& row) {
  sched::UsageHour u;
  u.hour = absl::FromUnixMillis(row.Int(0));
  u.key = sched::UsageKey{row.Text(1), row.Text(2), row.Text(3), row.Text(4)};
  u.gpu_seconds = row.Double(5);
  u.cpu_seconds = row.Double(6);
  u.memory_mb_seconds = row.Double(7);
  u.runs = row.Int(8);
  u.wall_seconds = row.Double(9);
  u.queue_wait_seconds = row.Double(10);
  return u;
}

// The statement that deletes at most kUsageExpireBatch rows of hours before ?1 (either dialect).
inline constexpr int kUsageExpireBatch = 1000;
inline constexpr char kExpireUsageSql[] =
    "DELETE FROM usage_hours WHERE (hour_ms, project, creator, node, labels) IN (SELECT hour_ms, "
    "project, creator, node, labels FROM usage_hours WHERE hour_ms < ? ORDER BY hour_ms LIMIT "
    "1000)";

}  // namespace trainctl::storage
