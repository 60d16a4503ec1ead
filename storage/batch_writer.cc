#include "storage/batch_writer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "storage/job_rows.h"
#include "storage/pg_statement.h"
#include "storage/statement.h"
#include "storage/usage_rows.h"

namespace trainctl::storage {
namespace {

// Runs `run(statement, row)` for each of `rows` with the cached statement for `sql`; prepares
// nothing when there are none.
template <typename Cache, typename Rows, typename Fn>
absl::Status RunEach(Cache& cache, const char* sql, Rows&& rows, Fn run) {
  if (rows.empty()) return absl::OkStatus();
  TC_ASSIGN_OR_RETURN(auto* st, cache.Get(sql));
  for (auto& row : rows) TC_RETURN_IF_ERROR(run(*st, row));
  return absl::OkStatus();
}

// A node's labels as the nodes row holds them: k=v lines.
std::string JoinLabels(const std::map<std::string, std::string>& labels) {
  std::vector<std::string> lines;
  for (const auto& [k, v] : labels) lines.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(lines, "\n");
}

}  // namespace

template <typename Cache>
absl::Status WriteBatch(Cache& cache, const BatchSql& sql, Batch& batch) {
  TC_RETURN_IF_ERROR(
      RunEach(cache,
              "INSERT INTO jobs (id, project, state, priority, create_ms, update_ms, data, "
              "request_key) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
              "state=excluded.state, update_ms=excluded.update_ms, data=excluded.data",
              batch.jobs, [](auto& st, v1::Job& job) {
                // The row without the attempts, which have rows of their own; no copy.
                google::protobuf::RepeatedPtrField<v1::Attempt> attempts;
                attempts.Swap(job.mutable_attempts());
                std::string data = job.SerializeAsString();
                attempts.Swap(job.mutable_attempts());
                return st.Run({job.id(), job.project(), int64_t{job.state()},
                               int64_t{job.priority()}, TimestampToMs(job.create_time()),
                               TimestampToMs(job.update_time()), Blob{std::move(data)},
                               job.request_id().empty()
                                   ? Value(Null{})
                                   : Value(RequestKey(job.creator(), job.request_id()))});
              }));
  TC_RETURN_IF_ERROR(
      RunEach(cache,
              "INSERT INTO attempts (job_id, number, state, reason, start_ms, end_ms, nodes, data) "
              "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(job_id, number) DO UPDATE SET "
              "state=excluded.state, reason=excluded.reason, start_ms=excluded.start_ms, "
              "end_ms=excluded.end_ms, nodes=excluded.nodes, data=excluded.data",
              batch.attempts, [](auto& st, const std::pair<std::string, v1::Attempt>& row) {
                const v1::Attempt& a = row.second;
                return st.Run({row.first, int64_t{a.number()}, int64_t{a.state()}, a.reason(),
                               TimestampToMs(a.start_time()), TimestampToMs(a.end_time()),
                               absl::StrJoin(a.nodes(), ","), Blob{a.SerializeAsString()}});
              }));
  TC_RETURN_IF_ERROR(RunEach(
      cache,
      // An update in place (not INSERT OR REPLACE, which deletes the row and inserts it again,
      // with its index entries): a run's row is written at its launch, start and end.
      "INSERT INTO replica_runs (run_id, job_id, attempt, replica, restart, node, state, pid, "
      "exit_code, signal, oom, message, start_ms, end_ms) VALUES "
      "(?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET node=excluded.node, "
      "state=excluded.state, pid=excluded.pid, exit_code=excluded.exit_code, "
      "signal=excluded.signal, oom=excluded.oom, message=excluded.message, "
      "start_ms=excluded.start_ms, end_ms=excluded.end_ms",
      batch.runs, [](auto& st, const sched::ReplicaRun& r) {
        return st.Run({r.run_id, r.job_id, int64_t{r.attempt}, r.replica, int64_t{r.restart},
                       r.node, int64_t{r.state}, r.pid,
                       r.exit_code ? Value(int64_t{*r.exit_code}) : Value(Null{}),
                       r.signal ? Value(int64_t{*r.signal}) : Value(Null{}), int64_t{r.oom_killed},
                       r.message, r.start_ms, r.end_ms});
      }));
  TC_RETURN_IF_ERROR(
      RunEach(cache, sql.upsert_node, batch.nodes, [](auto& st, const sched::Node& n) {
        return st.Run({n.name, n.address, n.capacity.cpu, n.capacity.memory_mb, n.capacity.gpus,
                       n.allocatable.cpu, n.allocatable.memory_mb, n.allocatable.gpus,
                       JoinLabels(n.labels), n.agent_instance, absl::ToUnixMillis(n.registered),
                       absl::ToUnixMillis(n.last_heartbeat),
                       Blob{sched::ToProto(n.status).SerializeAsString()}});
      }));
  TC_RETURN_IF_ERROR(
      RunEach(cache, "DELETE FROM nodes WHERE name = ?", batch.deleted_nodes,
              [](auto& st, const auto& deleted) { return st.Run({deleted.first}); }));
  for (const auto& [name, revoked] : batch.deleted_nodes) {
    TC_RETURN_IF_ERROR(RunEach(cache, sql.insert_revoked, revoked,
                               [&name = name](auto& st, const std::string& fp) {
                                 return st.Run({fp, name});
                               }));
  }
  TC_RETURN_IF_ERROR(
      RunEach(cache,
              "INSERT INTO events (time_ms, job_id, attempt, replica, node, type, reason, actor) "
              "VALUES (?,?,?,?,?,?,?,?)",
              batch.events, [](auto& st, const sched::Event& e) {
                return st.Run({e.time_ms, e.job_id, int64_t{e.attempt}, e.replica, e.node, e.type,
                               e.reason, e.actor});
              }));
  TC_RETURN_IF_ERROR(
      RunEach(cache,
              "INSERT INTO tokens (id, hash, data) VALUES (?,?,?) ON CONFLICT(id) DO UPDATE SET "
              "data=excluded.data",
              batch.tokens, [](auto& st, const TokenRow& t) {
                return st.Run({t.token.id(), t.hash, Blob{t.token.SerializeAsString()}});
              }));
  TC_RETURN_IF_ERROR(
      RunEach(cache, sql.upsert_quota, batch.quotas, [](auto& st, const v1::Quota& q) {
        return st.Run({q.project(), Blob{q.SerializeAsString()}});
      }));
  TC_RETURN_IF_ERROR(RunEach(cache, "INSERT INTO project_uids (project, uid) VALUES (?,?)",
                             batch.project_uids, [](auto& st, const auto& row) {
                               return st.Run({row.first, int64_t{row.second}});
                             }));
  TC_RETURN_IF_ERROR(RunEach(
      cache,
      "INSERT INTO project_usage (project, gpu_seconds, cpu_seconds, memory_mb_seconds, as_of_ms) "
      "VALUES (?,?,?,?,?) ON CONFLICT(project) DO UPDATE SET gpu_seconds=excluded.gpu_seconds, "
      "cpu_seconds=excluded.cpu_seconds, memory_mb_seconds=excluded.memory_mb_seconds, "
      "as_of_ms=excluded.as_of_ms",
      batch.project_usage, [](auto& st, const sched::UsageLedger& u) {
        return st.Run({u.project, u.gpu_seconds, u.cpu_seconds, u.memory_mb_seconds,
                       absl::ToUnixMillis(u.as_of)});
      }));
  TC_RETURN_IF_ERROR(RunEach(
      cache,
      "INSERT INTO usage_hours (hour_ms, project, creator, node, labels, gpu_seconds, cpu_seconds, "
      "memory_mb_seconds, runs, wall_seconds, queue_wait_seconds) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
      "ON CONFLICT(hour_ms, project, creator, node, labels) DO UPDATE SET "
      "gpu_seconds=excluded.gpu_seconds, cpu_seconds=excluded.cpu_seconds, "
      "memory_mb_seconds=excluded.memory_mb_seconds, runs=excluded.runs, "
      "wall_seconds=excluded.wall_seconds, queue_wait_seconds=excluded.queue_wait_seconds",
      batch.usage_hours, [](auto& st, const sched::UsageHour& u) {
        return st.Run({absl::ToUnixMillis(u.hour), u.key.project, u.key.creator, u.key.node,
                       u.key.labels, u.gpu_seconds, u.cpu_seconds, u.memory_mb_seconds, u.runs,
                       u.wall_seconds, u.queue_wait_seconds});
      }));
  if (batch.expire_usage_before_ms > 0) {
    TC_RETURN_IF_ERROR(RunEach(cache, kExpireUsageSql,
                               std::vector<int64_t>{batch.expire_usage_before_ms},
                               [](auto& st, int64_t before) { return st.Run({before}); }));
  }
  TC_RETURN_IF_ERROR(RunEach(
      cache,
      "INSERT INTO project_secrets (project, name, sealed, size, update_ms) VALUES (?,?,?,?,?) "
      "ON CONFLICT(project, name) DO UPDATE SET sealed=excluded.sealed, size=excluded.size, "
      "update_ms=excluded.update_ms",
      batch.secrets, [](auto& st, const SecretRow& r) {
        return st.Run({r.project, r.name, Blob{r.sealed}, r.size, r.update_ms});
      }));
  TC_RETURN_IF_ERROR(RunEach(cache, "DELETE FROM project_secrets WHERE project = ? AND name = ?",
                             batch.deleted_secrets, [](auto& st, const auto& key) {
                               return st.Run({key.first, key.second});
                             }));
  TC_RETURN_IF_ERROR(
      RunEach(cache,
              "INSERT INTO workdir_uses (project, digest, job_id, add_ms) VALUES (?,?,?,?) "
              "ON CONFLICT (project, digest, job_id) DO NOTHING",
              batch.workdir_uses, [](auto& st, const WorkdirUse& u) {
                return st.Run({u.project, u.digest, u.job_id, u.add_ms});
              }));
  TC_RETURN_IF_ERROR(RunEach(
      cache,
      "INSERT INTO replica_stacks (run_id, job_id, attempt, replica, capture_ms, data) VALUES "
      "(?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET capture_ms=excluded.capture_ms, "
      "data=excluded.data",
      batch.stacks, [](auto& st, const v1::ReplicaStacks& s) {
        return st.Run({s.run_id(), s.job_id(), int64_t{s.attempt()}, s.replica(),
                       TimestampToMs(s.capture_time()), Blob{s.SerializeAsString()}});
      }));
  // Last: rows this turn wrote for a job it then deleted go too.
  for (const char* sql :
       {"DELETE FROM events WHERE job_id = ?", "DELETE FROM replica_runs WHERE job_id = ?",
        "DELETE FROM replica_stacks WHERE job_id = ?", "DELETE FROM attempts WHERE job_id = ?",
        "DELETE FROM jobs WHERE id = ?"}) {
    TC_RETURN_IF_ERROR(RunEach(cache, sql, batch.deleted_jobs,
                               [](auto& st, const std::string& id) { return st.Run({id}); }));
  }
  return absl::OkStatus();
}

template absl::Status WriteBatch(StatementCache&, const BatchSql&, Batch&);
template absl::Status WriteBatch(PgStatementCache&, const BatchSql&, Batch&);

}  // namespace trainctl::storage
