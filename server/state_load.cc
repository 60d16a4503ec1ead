#include "server/state_load.h"

#include "absl/strings/str_cat.h"
#include "model/model_proto.h"

namespace trainctl::server {

absl::StatusOr<LoadedState> LoadState(storage::Store& store, const sched::CoreOptions& options,
                                      int64_t ended_since_ms, int64_t max_ended) {
  absl::StatusOr<storage::Snapshot> snap = store.Load(ended_since_ms, max_ended);
  if (!snap.ok()) return snap.status();
  LoadedState out;
  for (const sched::Node& node : snap->nodes) {
    for (const std::string& fp : node.status.revoked_certificates) {
      out.revoked_certificates.push_back(fp);
    }
  }
  for (std::string& fp : snap->revoked_certificates) {
    out.revoked_certificates.push_back(std::move(fp));
  }
  std::vector<sched::Job> jobs;
  jobs.reserve(snap->jobs.size());
  for (const v1::Job& stored : snap->jobs) {
    absl::StatusOr<sched::Job> job = sched::JobFromProto(stored);
    if (!job.ok()) {
      return absl::DataLossError(absl::StrCat("job ", stored.id(), ": ", job.status().message()));
    }
    jobs.push_back(*std::move(job));
  }
  std::vector<sched::Quota> quotas;
  quotas.reserve(snap->quotas.size());
  for (const v1::Quota& stored : snap->quotas) quotas.push_back(sched::QuotaFromProto(stored));
  out.core = std::make_unique<sched::Core>(options);
  out.core->Restore(std::move(jobs), std::move(snap->nodes), snap->runs, std::move(quotas));
  out.core->RestoreLastCreate(absl::FromUnixMillis(snap->last_create_ms));
  out.core->RestoreProjectUids(std::move(snap->project_uids));
  out.core->RestoreUsageLedgers(std::move(snap->project_usage));
  out.core->RestoreUsageHours(std::move(snap->usage_hours));
  out.tokens = std::move(snap->tokens);
  out.secrets = std::move(snap->secrets);
  return out;
}

}  // namespace trainctl::server
