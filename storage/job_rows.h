// Reading jobs, their attempts, runs and events back from their rows: what the loop's Store and
// the readers' JobArchive share, in both backends. Each function runs its statements from the
// connection's statement cache (`Cache`: StatementCache for SQLite, PgStatementCache for
// PostgreSQL; the SQL is the same) and resets them before it returns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/model.h"
#include "storage/statement.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::storage {

// Events are indexed by node within blocks of 2^kEventBlockBits consecutive ones
// (events_by_node_block, schema 12): a turn's events then touch a few pages of that index, not
// one page per node, and a node's events are read block by block, newest first.
inline constexpr int kEventBlockBits = 12;

struct EventQuery {
  std::string job_id;
  std::string node;
  std::string type;
  int64_t since_ms = 0;
  // Newest `limit` matching events, returned oldest first.
  int32_t limit = 1000;
  // The token owner whose calls caused them ("": anyone, trainctl itself included).
  std::string actor;
};

// The key of a create's request id in the jobs table's request_key column: the creator (the
// request id's scope) and the id.
std::string RequestKey(const std::string& creator, const std::string& request_id);

// A jobs.data blob (the Job without its attempts). DATA_LOSS naming the job when unreadable.
absl::StatusOr<v1::Job> ParseJobRow(const std::string& id, const std::string& bytes);

// Appends the attempts of `job` (by its id) to it, oldest first.
template <typename Cache>
absl::Status ReadAttempts(Cache& cache, v1::Job* job);

// The job `id` with its attempts; nullopt when there is no such row.
template <typename Cache>
absl::StatusOr<std::optional<v1::Job>> ReadJob(Cache& cache, const std::string& id);

// The newest job `creator` made with `request_id` since `since_ms` (with its attempts); nullopt
// when none.
template <typename Cache>
absl::StatusOr<std::optional<v1::Job>> ReadJobByRequest(Cache& cache, const std::string& creator,
                                                        const std::string& request_id,
                                                        int64_t since_ms);

// The runs of job `job_id`, in no particular order.
template <typename Cache>
absl::StatusOr<std::vector<sched::ReplicaRun>> ReadRuns(Cache& cache, const std::string& job_id);

// The events `q` asks for, oldest first.
template <typename Cache>
absl::StatusOr<std::vector<sched::Event>> ReadEvents(Cache& cache, const EventQuery& q);

}  // namespace trainctl::storage
