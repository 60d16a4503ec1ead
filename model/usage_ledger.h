// UsageLedger: one project's decayed usage, the row fair share keeps per project
// (scheduler/fair_share.h) and the store writes (project_usage); and UsageHour, the undecayed
// hourly rollup the same accrual charges (scheduler/usage_rollup.h) and the store keeps beyond job
// retention (usage_hours): who used what, for accounting (`trainctl usage`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "absl/time/time.h"

namespace trainctl::sched {

// A project's decayed usage (fair share, scheduler/fair_share.h): what its replicas held, in
// GPU-, CPU- and MiB-seconds, each second halved every half-life since, as of `as_of`. One row per
// project in the store (project_usage).
struct UsageLedger {
  std::string project;
  double gpu_seconds = 0;
  double cpu_seconds = 0;
  double memory_mb_seconds = 0;
  absl::Time as_of = absl::UnixEpoch();
};

// Whose usage one hourly row counts: the job's project, its creator (the token owner that
// submitted it; "" without authentication), the node its replicas held resources on, and the
// job's labels (EncodeUsageLabels), so that a query may group by any label key.
struct UsageKey {
  std::string project;
  std::string creator;
  std::string node;
  std::string labels;

  bool operator<(const UsageKey& o) const {
    return std::tie(project, creator, node, labels) <
           std::tie(o.project, o.creator, o.node, o.labels);
  }
  bool operator==(const UsageKey& o) const {
    return project == o.project && creator == o.creator && node == o.node && labels == o.labels;
  }
};

// One hour's undecayed usage of one key: allocated resources times the seconds they were held
// (GPU-, CPU- and MiB-seconds), the runs that began holding in the hour, the replica-seconds held
// (wall) and the queue wait of the runs placed from the queue (submission or retry to
// placement). One row per (hour, key) in the store (usage_hours); rows are written whole (an
// upsert), so writing one again never counts twice.
struct UsageHour {
  absl::Time hour = absl::UnixEpoch();  // the hour's start (UTC), a whole hour
  UsageKey key;
  double gpu_seconds = 0;
  double cpu_seconds = 0;
  double memory_mb_seconds = 0;
  int64_t runs = 0;
  double wall_seconds = 0;
  double queue_wait_seconds = 0;
};

// What a project's replicas used over some interval, undecayed (the /metrics counters,
// UsageRollup::TakeAdded).
struct UsageAdded {
  double gpu_seconds = 0;
  double cpu_seconds = 0;
  double memory_mb_seconds = 0;
};

// The start of the hour `t` lies in (UTC).
inline absl::Time HourOf(absl::Time t) {
  return absl::Floor(t - absl::UnixEpoch(), absl::Hours(1)) + absl::UnixEpoch();
}

// Job labels as one canonical string, "k1=v1,k2=v2" in key order, with '%', ',' and '=' in keys
// and values written %25, %2C and %3D, so it decodes back exactly (DecodeUsageLabels).
std::string EncodeUsageLabels(const std::map<std::string, std::string>& labels);
std::map<std::string, std::string> DecodeUsageLabels(const std::string& encoded);

}  // namespace trainctl::sched
