// LoadState: trainctld's in-memory state built from its database — the scheduler core with the
// live and recently ended jobs, every node and quota, plus the API tokens and revoked certificates
// the server keeps beside it. trainctld's start uses it, and so does the reconcile loop when it
// rebuilds the core after a failed commit (a full disk), so both see the durable state the same
// way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/core.h"
#include "storage/store.h"

namespace trainctl::server {

struct LoadedState {
  std::unique_ptr<sched::Core> core;
  std::vector<storage::TokenRow> tokens;
  // Every project secret, sealed.
  std::vector<storage::SecretRow> secrets;
  // Fingerprints of every revoked certificate: those of live nodes and of deleted ones.
  std::vector<std::string> revoked_certificates;
};

// Reads `store` into a new core made with `options`: the live jobs and those that ended at or
// after `ended_since_ms`, at most `max_ended` of them, the last ended (Store::Load: trainctld
// passes --finished-job-cache and --finished-job-cache-jobs), every node, run of those jobs and
// quota. An error names the job that cannot be read.
absl::StatusOr<LoadedState> LoadState(storage::Store& store, const sched::CoreOptions& options,
                                      int64_t ended_since_ms = 0,
                                      int64_t max_ended = storage::Store::kAllEnded);

}  // namespace trainctl::server
