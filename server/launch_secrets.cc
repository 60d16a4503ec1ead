#include "server/launch_secrets.h"

#include "absl/strings/str_cat.h"

namespace trainctl::server {
namespace {

absl::StatusOr<std::string> OpenSecret(const ProjectSecrets* secrets, const std::string& project,
                                       const std::string& name) {
  if (secrets == nullptr) return absl::FailedPreconditionError("this trainctld keeps no secrets");
  return secrets->Open(project, name);
}

}  // namespace

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
      absl::StatusOr<std::string> value = OpenSecret(secrets, job->spec.project(), name);
      if (!value.ok()) {
        launch->set_prepare_error(
            absl::StrCat("secret \"", name, "\" for ", var, ": ", value.status().message()));
        return;
      }
      (*launch->mutable_env())[var] = *std::move(value);
    }
    AddImageCredentials(pool, job->spec.project(), secrets, launch);
  }
}

void AddImageCredentials(const v1::WorkerPool& pool, const std::string& project,
                         const ProjectSecrets* secrets, v1::LaunchReplica* launch) {
  if (pool.image().empty() || pool.image_pull_secret().empty()) return;
  absl::StatusOr<std::string> value = OpenSecret(secrets, project, pool.image_pull_secret());
  if (!value.ok()) {
    launch->set_prepare_error(absl::StrCat("secret \"", pool.image_pull_secret(),
                                           "\" for imagePullSecret: ", value.status().message()));
    return;
  }
  launch->set_image_credentials(*std::move(value));
}

}  // namespace trainctl::server
