#include "server/launch_secrets.h"

#include "absl/strings/str_cat.h"

namespace trainctl::server {

void AddSecretValues(const sched::Core& core, const ProjectSecrets* secrets,
                     v1::LaunchReplica* launch) {
  const sched::Job* job = core.FindJob(launch->job_id());
  if (job == nullptr) return;
  std::string pool_name;
  for (const sched::Replica& r : job->replicas) {
    if (r.name == launch->replica_name()) pool_name = r.pool;
  }
  for (const v1::WorkerPool& pool : job->spec.worker_pools()) {
    if (pool.name() != pool_name) continue;
    for (const auto& [var, name] : pool.secret_refs()) {
      absl::StatusOr<std::string> value =
          secrets != nullptr ? secrets->Open(job->spec.project(), name)
                             : absl::FailedPreconditionError("this trainctld keeps no secrets");
      if (!value.ok()) {
        launch->set_prepare_error(
            absl::StrCat("secret \"", name, "\" for ", var, ": ", value.status().message()));
        return;
      }
      (*launch->mutable_env())[var] = *std::move(value);
    }
  }
}

}  // namespace trainctl::server
