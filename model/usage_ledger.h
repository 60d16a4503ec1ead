// UsageLedger: one project's decayed usage, the row fair share keeps per project
// (scheduler/fair_share.h) and the store writes (project_usage).
#pragma once

#include <string>

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

}  // namespace trainctl::sched
