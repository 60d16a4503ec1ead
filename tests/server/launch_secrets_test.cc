// The secrets a launch gets just before it is sent (server/launch_secrets.h): its pool's
// secretRefs in its environment, its imagePullSecret as the image's credentials, and a
// prepare_error naming a secret that is gone.
#include "server/launch_secrets.h"

#include <catch2/catch.hpp>
#include <string>

namespace trainctl::server {
namespace {

const absl::Time kLaunchNow = absl::FromUnixMillis(1'800'000'000'000);

// A job of two pools: "chief" runs in an image whose registry needs `registry-creds`, and reads
// `wandb` as WANDB_API_KEY; "worker" runs on the host.
v1::JobSpec ImagePullSecretJob() {
  v1::JobSpec spec;
  spec.set_display_name("images");
  v1::WorkerPool* chief = spec.add_worker_pools();
  chief->set_name("chief");
  chief->set_replica_count(1);
  chief->add_command("python3");
  chief->set_image("registry:5000/team/train:1.4");
  chief->set_image_pull_secret("registry-creds");
  (*chief->mutable_secret_refs())["WANDB_API_KEY"] = "wandb";
  v1::WorkerPool* worker = spec.add_worker_pools();
  worker->set_name("worker");
  worker->set_replica_count(1);
  worker->add_command("python3");
  return spec;
}

v1::LaunchReplica SecretsLaunchOf(const std::string& job_id, const std::string& replica) {
  v1::LaunchReplica launch;
  launch.set_job_id(job_id);
  launch.set_replica_name(replica);
  return launch;
}

TEST_CASE("a launch gets its pool's image credentials from the project's secret",
          "[secrets][image]") {
  sched::CoreOptions options;
  options.id_seed = 5;
  sched::Core core(options);
  sched::Effects fx;
  absl::StatusOr<const sched::Job*> job = core.SubmitJob(ImagePullSecretJob(), kLaunchNow, &fx);
  REQUIRE(job.ok());
  const std::string id = (*job)->id;
  ProjectSecrets secrets(SecretKey(std::string(32, 'k')));
  secrets.Apply(*secrets.Set("default", "registry-creds", "robot:s3cret", kLaunchNow));
  secrets.Apply(*secrets.Set("default", "wandb", "w-token", kLaunchNow));

  v1::LaunchReplica chief = SecretsLaunchOf(id, "chief-0");
  AddSecretValues(core, &secrets, &chief);
  CHECK(chief.prepare_error().empty());
  CHECK(chief.image_credentials() == "robot:s3cret");
  CHECK(chief.env().at("WANDB_API_KEY") == "w-token");
  // A pool without an image gets no credentials.
  v1::LaunchReplica worker = SecretsLaunchOf(id, "worker-0");
  AddSecretValues(core, &secrets, &worker);
  CHECK(worker.prepare_error().empty());
  CHECK(worker.image_credentials().empty());

  // A changed secret reaches the next launch.
  secrets.Apply(*secrets.Set("default", "registry-creds", "robot:rotated", kLaunchNow));
  v1::LaunchReplica next = SecretsLaunchOf(id, "chief-0");
  AddSecretValues(core, &secrets, &next);
  CHECK(next.image_credentials() == "robot:rotated");

  // Deleted after the submit: the launch fails as the user's error, naming the secret, and
  // carries no value.
  secrets.Forget("default", "registry-creds");
  v1::LaunchReplica gone = SecretsLaunchOf(id, "chief-0");
  AddSecretValues(core, &secrets, &gone);
  CHECK(gone.prepare_error() ==
        "secret \"registry-creds\" for imagePullSecret: project default has no secret named "
        "registry-creds");
  CHECK(gone.image_credentials().empty());

  // A trainctld that keeps no secrets cannot resolve one.
  v1::LaunchReplica none = SecretsLaunchOf(id, "chief-0");
  AddImageCredentials(ImagePullSecretJob().worker_pools(0), "default", nullptr, &none);
  CHECK(none.prepare_error() ==
        "secret \"registry-creds\" for imagePullSecret: this trainctld keeps no secrets");
  // Nor is a pull secret without an image ever looked up.
  v1::WorkerPool no_image = ImagePullSecretJob().worker_pools(0);
  no_image.clear_image();
  v1::LaunchReplica host = SecretsLaunchOf(id, "chief-0");
  AddImageCredentials(no_image, "default", nullptr, &host);
  CHECK(host.prepare_error().empty());
  CHECK(host.image_credentials().empty());
}

}  // namespace
}  // namespace trainctl::server
