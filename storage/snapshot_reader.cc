#include "storage/snapshot_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "storage/job_rows.h"
#include "storage/pg_statement.h"
#include "storage/statement.h"
#include "storage/usage_rows.h"

namespace trainctl::storage {
namespace {

// The labels of a nodes row (k=v lines, batch_writer.cc).
std::map<std::string, std::string> SplitLabels(const std::string& text) {
  std::map<std::string, std::string> labels;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    labels[kv.first] = kv.second;
  }
  return labels;
}

}  // namespace

template <typename Cache>
absl::StatusOr<Snapshot> LoadSnapshot(Cache& cache, const SnapshotSql& sql, int64_t ended_since_ms,
                                      int64_t max_ended) {
  Snapshot snap;
  {
    // The live jobs through jobs_live, the last ended ones through jobs_ended, newest first.
    TC_ASSIGN_OR_RETURN(auto* st, cache.Get(sql.jobs_to_load));
    TC_RETURN_IF_ERROR(st->Bind({ended_since_ms, std::max<int64_t>(0, max_ended)}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      TC_ASSIGN_OR_RETURN(v1::Job job, ParseJobRow(row.Text(0), row.Bytes(1)));
      snap.jobs.push_back(std::move(job));
      return absl::OkStatus();
    }));
  }
  {
    TC_ASSIGN_OR_RETURN(auto* st, cache.Get("SELECT MAX(create_ms) FROM jobs"));  // jobs_by_age
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      if (!row.IsNull(0)) snap.last_create_ms = row.Int(0);
      return absl::OkStatus();
    }));
  }
  std::sort(snap.jobs.begin(), snap.jobs.end(), [](const v1::Job& a, const v1::Job& b) {
    const int64_t ta = TimestampToMs(a.create_time()), tb = TimestampToMs(b.create_time());
    return ta != tb ? ta < tb : a.id() < b.id();
  });
  for (v1::Job& job : snap.jobs) {
    TC_RETURN_IF_ERROR(ReadAttempts(cache, &job));
    TC_ASSIGN_OR_RETURN(std::vector<sched::ReplicaRun> runs, ReadRuns(cache, job.id()));
    for (sched::ReplicaRun& r : runs) snap.runs.push_back(std::move(r));
  }
  {
    TC_ASSIGN_OR_RETURN(auto* st, cache.Get("SELECT name, address, capacity_cpu, capacity_mem_mb, "
                                            "capacity_gpus, alloc_cpu, alloc_mem_mb, alloc_gpus, "
                                            "labels, agent_instance, registered_ms, "
                                            "last_heartbeat_ms, status FROM nodes ORDER BY name"));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      sched::Node n;
      n.name = row.Text(0);
      n.address = row.Text(1);
      n.capacity = {row.Double(2), row.Int(3), row.Int(4)};
      n.allocatable = {row.Double(5), row.Int(6), row.Int(7)};
      n.labels = SplitLabels(row.Text(8));
      n.agent_instance = row.Text(9);
      n.registered = absl::FromUnixMillis(row.Int(10));
      n.last_heartbeat = absl::FromUnixMillis(row.Int(11));
      v1::Node status;
      if (!status.ParseFromString(row.Bytes(12))) {
        return absl::DataLossError(absl::StrCat("the status of node ", n.name, " is corrupt"));
      }
      n.status = sched::NodeStatusFromProto(status);
      snap.nodes.push_back(std::move(n));
      return absl::OkStatus();
    }));
  }
  {
    TC_ASSIGN_OR_RETURN(auto* st, cache.Get("SELECT project, data FROM quotas ORDER BY project"));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      v1::Quota quota;
      if (!quota.ParseFromString(row.Bytes(1))) {
        return absl::DataLossError(absl::StrCat("quota of ", row.Text(0), ": unreadable row"));
      }
      snap.quotas.push_back(std::move(quota));
      return absl::OkStatus();
    }));
  }
  {
    TC_ASSIGN_OR_RETURN(auto* st, cache.Get("SELECT project, uid FROM project_uids"));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      snap.project_uids[row.Text(0)] = static_cast<uint32_t>(row.Int(1));
      return absl::OkStatus();
    }));
  }
  {
    TC_ASSIGN_OR_RETURN(auto* st, cache.Get("SELECT project, gpu_seconds, cpu_seconds, "
                                            "memory_mb_seconds, as_of_ms FROM project_usage"));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      sched::UsageLedger u;
      u.project = row.Text(0);
      u.gpu_seconds = row.Double(1);
      u.cpu_seconds = row.Double(2);
      u.memory_mb_seconds = row.Double(3);
      u.as_of = absl::FromUnixMillis(row.Int(4));
      snap.project_usage.push_back(std::move(u));
      return absl::OkStatus();
    }));
  }
  {
    // The latest hour only: the rollup goes on from it while it is open (usage_rollup.h).
    TC_ASSIGN_OR_RETURN(
        auto* st,
        cache.Get("SELECT hour_ms, project, creator, node, labels, gpu_seconds, cpu_seconds, "
                  "memory_mb_seconds, runs, wall_seconds, queue_wait_seconds FROM usage_hours "
                  "WHERE hour_ms = (SELECT MAX(hour_ms) FROM usage_hours)"));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      snap.usage_hours.push_back(UsageHourOfRow(row));
      return absl::OkStatus();
    }));
  }
  {
    TC_ASSIGN_OR_RETURN(auto* st, cache.Get("SELECT project, name, sealed, size, update_ms FROM "
                                            "project_secrets ORDER BY project, name"));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      SecretRow r;
      r.project = row.Text(0);
      r.name = row.Text(1);
      r.sealed = row.Bytes(2);
      r.size = row.Int(3);
      r.update_ms = row.Int(4);
      snap.secrets.push_back(std::move(r));
      return absl::OkStatus();
    }));
  }
  {
    TC_ASSIGN_OR_RETURN(auto* st, cache.Get(sql.tokens_oldest_first));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      TokenRow t;
      t.hash = row.Text(1);
      if (!t.token.ParseFromString(row.Bytes(2))) {
        return absl::DataLossError(absl::StrCat("token ", row.Text(0), ": unreadable row"));
      }
      snap.tokens.push_back(std::move(t));
      return absl::OkStatus();
    }));
  }
  {
    TC_ASSIGN_OR_RETURN(
        auto* st, cache.Get("SELECT fingerprint FROM revoked_certificates ORDER BY fingerprint"));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_RETURN_IF_ERROR(ForEachRow(*st, [&](auto& row) -> absl::Status {
      snap.revoked_certificates.push_back(row.Text(0));
      return absl::OkStatus();
    }));
  }
  return snap;
}

template absl::StatusOr<Snapshot> LoadSnapshot(StatementCache&, const SnapshotSql&, int64_t,
                                               int64_t);
template absl::StatusOr<Snapshot> LoadSnapshot(PgStatementCache&, const SnapshotSql&, int64_t,
                                               int64_t);

}  // namespace trainctl::storage
