// RequestIndex: the jobs created with a request id (CreateJobRequest.request_id, AIP-155) within
// the last 24 hours, by the caller's scope and the id, so that a retried create returns the job
// the first one made instead of starting the same training twice.
//
// The scope is the job's creator (the token's owner; "" while authentication is off, one scope
// for every caller). The index is rebuilt from the jobs at a restart (Job.request_id and
// Job.request_hash are stored with the job), so a retry after a crash of trainctld still finds
// its job.
//
// Thread-safety: none; owned by the core.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "model/model.h"

namespace trainctl::sched {

// What a create carries to be deduplicated: its request id and the SHA-256 (hex) of its spec.
struct CreateRequestKey {
  std::string id;
  std::string spec_hash;
};

// A request id: empty (none), or 1..64 characters of [A-Za-z0-9._:-]. INVALID_ARGUMENT naming
// the field otherwise.
absl::Status ValidateRequestId(const std::string& id);

// ALREADY_EXISTS: `request_id` created job `job_id` with another spec within the window.
absl::Status RequestIdTaken(const std::string& request_id, const std::string& job_id);

class RequestIndex {
 public:
  // How long a request id keeps returning its job.
  static constexpr absl::Duration kWindow = absl::Hours(24);

  // Indexes `job` when it carries a request id (at its create time).
  void Add(const Job& job);
  // The job created by `scope` with `request_id` within the window before `now`: its id and the
  // hash of its spec; nullptr when none.
  struct Entry {
    std::string job_id;
    std::string spec_hash;
    absl::Time created;
  };
  const Entry* Find(const std::string& scope, const std::string& request_id, absl::Time now) const;
  // Forgets `job`'s entry (the job was deleted): its request id may create a new job.
  void Remove(const Job& job);
  // Forgets entries older than the window.
  void Expire(absl::Time now);

  size_t size() const { return entries_.size(); }

 private:
  using Key = std::pair<std::string, std::string>;
  std::map<Key, Entry> entries_;
  // The same keys by create time, for Expire.
  std::set<std::pair<absl::Time, Key>> by_time_;
};

}  // namespace trainctl::sched
