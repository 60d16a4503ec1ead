// trainctld's flags as the options of the parts it runs: the core's, the reconcile loop's and the
// API's. One mapping, used at start (server/daemon.h) and by SIGHUP's reload
// (server/config_reload.h), so that a setting reaches its part the same way either time.
//
//   DaemonOptions options = DaemonOptionsFromFlags(flags);
//   LoadState(store, options.core, ...);
//
// Thread-safe: the function keeps no state.
#pragma once

#include <cstdint>

#include "scheduler/core.h"
#include "server/api.h"
#include "server/daemon_flags.h"

namespace trainctl::server {

struct DaemonOptions {
  sched::CoreOptions core;
  // The reconcile loop's retention and finished-job cache (server/reconcile_loop.h): terminal
  // jobs that ended longer ago than the cache, or beyond its count, stay in the database
  // (JobArchive reads them), so that a burst of jobs that ended at once is not read whole.
  int64_t job_retention_ms = 0;
  // Hourly usage rows older than this are deleted (0: never).
  int64_t usage_retention_ms = 0;
  int64_t finished_job_cache_ms = 0;
  int64_t finished_job_cache_jobs = 0;
  ApiLimits api;
};

// The checkpoint root is made absolute against the working directory.
DaemonOptions DaemonOptionsFromFlags(const DaemonFlags& flags);

}  // namespace trainctl::server
