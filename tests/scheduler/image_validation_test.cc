// A pool's image fields (image, imagePullPolicy, imagePullSecret, mounts) through ValidateJobSpec,
// one row per rule with the exact message a user sees, and image references on their own.
#include "scheduler/image_validation.h"

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "scheduler/job_validation.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

// Pool 1 of testing::Spec(2) with an image and `mounts` as {hostPath, path}.
void SetWorkerImage(v1::JobSpec* s, std::vector<std::pair<std::string, std::string>> mounts = {}) {
  v1::WorkerPool* pool = s->mutable_worker_pools(1);
  pool->set_image("registry.example.com:5000/team/train:1.4");
  for (const auto& [host, path] : mounts) {
    v1::ImageMount* m = pool->add_mounts();
    m->set_host_path(host);
    m->set_path(path);
  }
}

struct ImageRow {
  const char* what;
  std::function<void(v1::JobSpec*)> mutate;
  const char* message;  // empty: valid
};

TEST_CASE("ValidateJobSpec checks a pool's image, pull policy, pull secret and mounts",
          "[job_validation][image]") {
  const ImageRow rows[] = {
      {"an image with a registry, port and tag", [](v1::JobSpec* s) { SetWorkerImage(s); }, ""},
      {"pinned by digest, tag too",
       [](v1::JobSpec* s) {
         s->mutable_worker_pools(0)->set_image("ghcr.io/org/train:v1@sha256:" +
                                               std::string(64, 'a'));
       },
       ""},
      {"an image with an uppercase path",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_image("Team/train"); },
       "workerPools[1].image must be an OCI image reference such as "
       "registry:5000/team/train:1.4: its repository's part \"Team\" must be lowercase letters "
       "and digits, joined by '.', '_', '__' or '-'; got \"Team/train\""},
      {"an image with a bad digest",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_image("train@sha256:abc"); },
       "workerPools[1].image must be an OCI image reference such as "
       "registry:5000/team/train:1.4: its digest (after '@') must be \"sha256:\" and 64 lowercase "
       "hex digits; got \"train@sha256:abc\""},
      {"an image with a bad tag",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_image("train:.x"); },
       "workerPools[1].image must be an OCI image reference such as "
       "registry:5000/team/train:1.4: its tag \".x\" must be 1..128 characters of A-Z, a-z, 0-9, "
       "'_', '.' and '-', not starting with '.' or '-'; got \"train:.x\""},
      {"an image with a bad port",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_image("localhost:99999/train"); },
       "workerPools[1].image must be an OCI image reference such as "
       "registry:5000/team/train:1.4: its registry \"localhost:99999\" must be a host name or a "
       "[IPv6 address], with an optional :port of 1..65535; got \"localhost:99999/train\""},
      {"an image too long",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_image(std::string(513, 'a')); },
       "workerPools[1].image must be at most 512 characters, got 513"},
      {"pull policy ALWAYS",
       [](v1::JobSpec* s) {
         SetWorkerImage(s);
         s->mutable_worker_pools(1)->set_image_pull_policy(v1::IMAGE_PULL_POLICY_ALWAYS);
       },
       ""},
      {"an unknown pull policy",
       [](v1::JobSpec* s) {
         SetWorkerImage(s);
         s->mutable_worker_pools(1)->set_image_pull_policy(static_cast<v1::ImagePullPolicy>(7));
       },
       "workerPools[1].imagePullPolicy must be IF_NOT_PRESENT or ALWAYS, got 7"},
      {"a pull secret",
       [](v1::JobSpec* s) {
         SetWorkerImage(s);
         s->mutable_worker_pools(1)->set_image_pull_secret("registry.creds");
       },
       ""},
      {"a pull secret without an image",
       [](v1::JobSpec* s) { s->mutable_worker_pools(0)->set_image_pull_secret("creds"); },
       "workerPools[0].imagePullSecret is only used with workerPools[0].image; set an image or "
       "remove it"},
      {"a pull secret with a bad name",
       [](v1::JobSpec* s) {
         SetWorkerImage(s);
         s->mutable_worker_pools(1)->set_image_pull_secret("-x");
       },
       "workerPools[1].imagePullSecret must name a secret: 1 to 253 characters of A-Z, a-z, 0-9, "
       "'_', '.' and '-', starting with a letter or digit; got \"-x\""},
      {"mounts",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/data/imagenet", "/data"}, {"/", "/host"}});
       },
       ""},
      {"mounts without an image",
       [](v1::JobSpec* s) {
         v1::ImageMount* m = s->mutable_worker_pools(0)->add_mounts();
         m->set_host_path("/data");
         m->set_path("/data");
       },
       "workerPools[0].mounts are only used with workerPools[0].image (they are bound into its "
       "containers); set an image or remove them"},
      {"a relative path",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/data", "data"}});
       },
       "workerPools[1].mounts[0].path must be absolute, got \"data\""},
      {"a relative host path",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"", "/data"}});
       },
       "workerPools[1].mounts[0].hostPath must be absolute, got \"\""},
      {"a host path with ..",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/data/../etc", "/data"}});
       },
       "workerPools[1].mounts[0].hostPath must be lexically normal (no \".\" or \"..\" parts, no "
       "repeated or trailing '/'), got \"/data/../etc\""},
      {"a path with a trailing slash",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/a", "/a"}, {"/b", "/b/"}});
       },
       "workerPools[1].mounts[1].path must be lexically normal (no \".\" or \"..\" parts, no "
       "repeated or trailing '/'), got \"/b/\""},
      {"a path of //",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/a", "//a"}});
       },
       "workerPools[1].mounts[0].path must be lexically normal (no \".\" or \"..\" parts, no "
       "repeated or trailing '/'), got \"//a\""},
      {"the root",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/data", "/"}});
       },
       "workerPools[1].mounts[0].path must not be \"/\" or lie under /proc, /sys or /dev, got "
       "\"/\""},
      {"under /proc",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/data", "/proc/self"}});
       },
       "workerPools[1].mounts[0].path must not be \"/\" or lie under /proc, /sys or /dev, got "
       "\"/proc/self\""},
      {"/sys itself",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/data", "/sys"}});
       },
       "workerPools[1].mounts[0].path must not be \"/\" or lie under /proc, /sys or /dev, got "
       "\"/sys\""},
      {"/devices is not /dev",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/data", "/devices"}});
       },
       ""},
      {"two mounts at one path",
       [](v1::JobSpec* s) {
         SetWorkerImage(s, {{"/a", "/data"}, {"/b", "/x"}, {"/c", "/data"}});
       },
       "workerPools[1].mounts[2].path \"/data\" is also the path of workerPools[1].mounts[0]"},
      {"17 mounts",
       [](v1::JobSpec* s) {
         std::vector<std::pair<std::string, std::string>> mounts;
         for (int i = 0; i < 17; ++i) mounts.push_back({"/d", "/m" + std::to_string(i)});
         SetWorkerImage(s, mounts);
       },
       "workerPools[1].mounts holds at most 16 mounts, got 17"},
  };
  for (const ImageRow& row : rows) {
    SECTION(row.what) {
      v1::JobSpec spec = testing::Spec(2);
      row.mutate(&spec);
      absl::Status s = ValidateJobSpec(spec);
      if (std::string(row.message).empty()) {
        INFO(s.message());
        CHECK(s.ok());
      } else {
        CHECK(s.code() == absl::StatusCode::kInvalidArgument);
        CHECK(s.message() == row.message);
      }
    }
  }
}

TEST_CASE("ValidateImageReference takes OCI references and only those", "[image]") {
  const std::string digest = "@sha256:" + std::string(64, '0');
  for (const std::string& good : std::vector<std::string>{
           "train",
           "library/ubuntu:22.04",
           "team/train:1.4",
           "registry:5000/team/train:1.4",
           "localhost/train",
           "localhost:5000/a/b/c:latest",
           "[::1]:5000/train",
           "10.0.0.1:5000/train",
           "nvcr.io/nvidia/pytorch:24.01-py3",
           "my-registry.example.com/a.b/c__d/e-f---g:Tag_1.x-y",
           "train" + digest,
           "ghcr.io/org/train:v1" + digest,
           "Registry.Example.COM/team/train",
       }) {
    INFO(good);
    CHECK(ValidateImageReference("image", good).ok());
  }
  for (const std::string& bad : std::vector<std::string>{
           ":tag",
           "train:",
           "/train",
           "train/",
           "team//train",
           "Train",
           "team/Train",
           "te am/train",
           "-train",
           "train-",
           "a..b",
           "a._b",
           "a___b",
           "registry:abc/train",
           "registry:0/train",
           "-reg.io/train",
           "[zz]:5000/train",
           "train@sha256:" + std::string(64, 'A'),
           "train@sha512:" + std::string(128, 'a'),
           "train@",
           "train:" + std::string(129, 't'),
           "train:-x",
       }) {
    INFO(bad);
    absl::Status s = ValidateImageReference("image", bad);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace trainctl::sched
