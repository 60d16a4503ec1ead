#include "storage/job_rows.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "storage/pg_statement.h"

namespace trainctl::storage {
namespace {

// Decodes the attempts row `st` holds (its columns: number, state, reason, start_ms, end_ms,
// nodes, data).
template <typename St>
absl::Status DecodeAttempt(const St& st, const std::string& job_id, v1::Attempt* a) {
  if (!st.IsNull(6)) {
    if (a->ParseFromString(st.Bytes(6))) return absl::OkStatus();
    return absl::DataLossError(
        absl::StrCat("attempt ", st.Int(0), " of job ", job_id, ": unreadable row"));
  }
  // A row from before schema 4 has only the columns.
  a->set_number(static_cast<int32_t>(st.Int(0)));
  a->set_state(static_cast<v1::JobState>(st.Int(1)));
  a->set_reason(st.Text(2));
  *a->mutable_start_time() = MsToTimestamp(st.Int(3));
  *a->mutable_end_time() = MsToTimestamp(st.Int(4));
  for (absl::string_view n : absl::StrSplit(st.Text(5), ',', absl::SkipEmpty())) {
    a->add_nodes(std::string(n));
  }
  return absl::OkStatus();
}

// The job whose (id, data) row `sql` selects for `values`, with its attempts.
template <typename Cache>
absl::StatusOr<std::optional<v1::Job>> ReadOneJob(Cache& cache, const char* sql,
                                                  std::initializer_list<Value> values) {
  TC_ASSIGN_OR_RETURN(auto* st, cache.Get(sql));
  TC_RETURN_IF_ERROR(st->Bind(values));
  std::optional<v1::Job> job;
  TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
    if (job.has_value()) return absl::OkStatus();
    TC_ASSIGN_OR_RETURN(job, ParseJobRow(row.Text(0), row.Bytes(1)));
    return absl::OkStatus();
  }));
  if (job.has_value()) TC_RETURN_IF_ERROR(ReadAttempts(cache, &*job));
  return job;
}

}  // namespace

std::string RequestKey(const std::string& creator, const std::string& request_id) {
  return absl::StrCat(creator, "\n", request_id);
}

absl::StatusOr<v1::Job> ParseJobRow(const std::string& id, const std::string& bytes) {
  v1::Job job;
  if (!job.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("job ", id, ": unreadable row"));
  }
  return job;
}

template <typename Cache>
absl::Status ReadAttempts(Cache& cache, v1::Job* job) {
  TC_ASSIGN_OR_RETURN(auto* st,
                      cache.Get("SELECT number, state, reason, start_ms, end_ms, nodes, data FROM "
                                "attempts WHERE job_id = ? ORDER BY number"));
  TC_RETURN_IF_ERROR(st->Bind({job->id()}));
  return ForEachRow(
      *st, [job](auto& row) { return DecodeAttempt(row, job->id(), job->add_attempts()); });
}

template <typename Cache>
absl::StatusOr<std::optional<v1::Job>> ReadJob(Cache& cache, const std::string& id) {
  return ReadOneJob(cache, "SELECT id, data FROM jobs WHERE id = ?", {id});
}

template <typename Cache>
absl::StatusOr<std::optional<v1::Job>> ReadJobByRequest(Cache& cache, const std::string& creator,
                                                        const std::string& request_id,
                                                        int64_t since_ms) {
  return ReadOneJob(cache,
                    "SELECT id, data FROM jobs WHERE request_key = ? AND create_ms >= ? "
                    "ORDER BY create_ms DESC LIMIT 1",
                    {RequestKey(creator, request_id), since_ms});
}

template <typename Cache>
absl::StatusOr<std::vector<sched::ReplicaRun>> ReadRuns(Cache& cache, const std::string& job_id) {
  TC_ASSIGN_OR_RETURN(auto* st,
                      cache.Get("SELECT run_id, attempt, replica, restart, node, state, pid, "
                                "exit_code, signal, oom, message, start_ms, end_ms FROM "
                                "replica_runs WHERE job_id = ?"));
  TC_RETURN_IF_ERROR(st->Bind({job_id}));
  std::vector<sched::ReplicaRun> runs;
  TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) {
    sched::ReplicaRun& r = runs.emplace_back();
    r.run_id = row.Text(0);
    r.job_id = job_id;
    r.attempt = static_cast<int32_t>(row.Int(1));
    r.replica = row.Text(2);
    r.restart = static_cast<int32_t>(row.Int(3));
    r.node = row.Text(4);
    r.state = static_cast<v1::ReplicaState>(row.Int(5));
    r.pid = row.Int(6);
    if (!row.IsNull(7)) r.exit_code = static_cast<int32_t>(row.Int(7));
    if (!row.IsNull(8)) r.signal = static_cast<int32_t>(row.Int(8));
    r.oom_killed = row.Int(9) != 0;
    r.message = row.Text(10);
    r.start_ms = row.Int(11);
    r.end_ms = row.Int(12);
    return absl::OkStatus();
  }));
  return runs;
}

namespace {

// Appends to `out`, newest first, the newest events that `sql` (a TC_EVENTS_WHERE) selects, up
// to `q.limit` in `out` in all. ?1..?6 are bound to EventQuery's fields, ?7 to `block` when
// given.
#define TC_EVENTS_WHERE(first)                                                                   \
  "SELECT time_ms, job_id, attempt, replica, node, type, reason, actor FROM events WHERE " first \
  " AND (?1 = '' OR job_id = ?1) AND (?2 = '' OR node = ?2) AND (?3 = '' OR type = ?3) AND "     \
  "time_ms >= ?4 AND (?6 = '' OR actor = ?6) ORDER BY seq DESC LIMIT ?5"
template <typename Cache>
absl::Status AppendEvents(Cache& cache, const char* sql, const EventQuery& q,
                          std::optional<int64_t> block, std::vector<sched::Event>* out) {
  TC_ASSIGN_OR_RETURN(auto* st, cache.Get(sql));
  const int64_t limit = int64_t{q.limit} - static_cast<int64_t>(out->size());
  if (block) {
    TC_RETURN_IF_ERROR(st->Bind({q.job_id, q.node, q.type, q.since_ms, limit, q.actor, *block}));
  } else {
    TC_RETURN_IF_ERROR(st->Bind({q.job_id, q.node, q.type, q.since_ms, limit, q.actor}));
  }
  return ForEachRow(*st, [&](auto& row) {
    sched::Event& e = out->emplace_back();
    e.time_ms = row.Int(0);
    e.job_id = row.Text(1);
    e.attempt = static_cast<int32_t>(row.Int(2));
    e.replica = row.Text(3);
    e.node = row.Text(4);
    e.type = row.Text(5);
    e.reason = row.Text(6);
    e.actor = row.Text(7);
    return absl::OkStatus();
  });
}

// A node's events, through events_by_node_block (schema.h): block by block, newest first, until
// `q.limit` are found, the blocks run out, or (with `q.since_ms`) the events before a block are
// older than asked for.
template <typename Cache>
absl::Status AppendNodeEvents(Cache& cache, const EventQuery& q, std::vector<sched::Event>* out) {
  int64_t first = 0;
  int64_t last = -1;
  TC_ASSIGN_OR_RETURN(auto* bounds, cache.Get("SELECT min(seq), max(seq) FROM events"));
  TC_RETURN_IF_ERROR(bounds->Bind({}));
  TC_RETURN_IF_ERROR(ForEachRow(*bounds, [&](auto& row) {
    if (!row.IsNull(0)) {
      first = row.Int(0) >> kEventBlockBits;
      last = row.Int(1) >> kEventBlockBits;
    }
    return absl::OkStatus();
  }));
  static_assert(kEventBlockBits == 12, "events_by_node_block and this query must agree");
  for (int64_t block = last; block >= first && static_cast<int64_t>(out->size()) < q.limit;
       --block) {
    TC_RETURN_IF_ERROR(
        AppendEvents(cache, TC_EVENTS_WHERE("(seq >> 12) = ?7 AND node = ?2"), q, block, out));
    if (q.since_ms <= 0 || block == first) continue;
    // Event times follow their order (a turn's time), so when the newest event before this
    // block is older than `since_ms`, every one before it is too.
    TC_ASSIGN_OR_RETURN(auto* before, cache.Get("SELECT time_ms FROM events WHERE seq < ?1 "
                                                "ORDER BY seq DESC LIMIT 1"));
    TC_RETURN_IF_ERROR(before->Bind({block << kEventBlockBits}));
    bool older = true;
    TC_RETURN_IF_ERROR(ForEachRow(*before, [&](auto& row) {
      older = row.Int(0) < q.since_ms;
      return absl::OkStatus();
    }));
    if (older) break;
  }
  return absl::OkStatus();
}

}  // namespace

template <typename Cache>
absl::StatusOr<std::vector<sched::Event>> ReadEvents(Cache& cache, const EventQuery& q) {
  // One statement per index: a job's, a node's or an actor's events are found through theirs,
  // however long the log (the same terms with "?1 = '' OR" would scan it all).
  std::vector<sched::Event> out;
  if (q.job_id.empty() && !q.node.empty()) {
    TC_RETURN_IF_ERROR(AppendNodeEvents(cache, q, &out));
  } else {
    const char* sql = !q.job_id.empty()  ? TC_EVENTS_WHERE("job_id = ?1")
                      : !q.actor.empty() ? TC_EVENTS_WHERE("actor = ?6")
                                         : TC_EVENTS_WHERE("1 = 1");
    TC_RETURN_IF_ERROR(AppendEvents(cache, sql, q, std::nullopt, &out));
  }
  std::reverse(out.begin(), out.end());
  return out;
}
#undef TC_EVENTS_WHERE

// The two connections' kinds: SQLite's and PostgreSQL's.
#define TC_JOB_ROWS_INSTANTIATE(Cache)                                                           \
  template absl::Status ReadAttempts(Cache&, v1::Job*);                                          \
  template absl::StatusOr<std::optional<v1::Job>> ReadJob(Cache&, const std::string&);           \
  template absl::StatusOr<std::optional<v1::Job>> ReadJobByRequest(Cache&, const std::string&,   \
                                                                   const std::string&, int64_t); \
  template absl::StatusOr<std::vector<sched::ReplicaRun>> ReadRuns(Cache&, const std::string&);  \
  template absl::StatusOr<std::vector<sched::Event>> ReadEvents(Cache&, const EventQuery&);
TC_JOB_ROWS_INSTANTIATE(StatementCache)
TC_JOB_ROWS_INSTANTIATE(PgStatementCache)
#undef TC_JOB_ROWS_INSTANTIATE

}  // namespace trainctl::storage
