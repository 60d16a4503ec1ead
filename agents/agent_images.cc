// The agent's part in replicas that run in images: opening the node's image cache (or saying why
// the node runs no images), building the runtime that runs them (container_runtime.h), pull
// progress to the scheduler, and `trainctl node prepull`.
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/agent.h"
#include "agents/cdi.h"
#include "agents/container_runtime.h"
#include "agents/launcher.h"
#include "agents/run_files.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

ImageCache::Options CacheOptions(const Agent::Options& options) {
  ImageCache::Options cache;
  cache.dir = ImageDirOf(options.images, options.work_dir);
  cache.max_bytes = options.images.cache_bytes;
  cache.insecure_registries = options.images.insecure_registries;
  cache.pull_timeout = options.images.pull_timeout;
  return cache;
}

}  // namespace

ContainerSettings Agent::ContainerSettingsOf() const {
  ContainerSettings settings;
  settings.runc = options_.images.runc;
  settings.runc_root =
      (options_.state_dir.empty() ? options_.work_dir : options_.state_dir) + "/runc";
  settings.containers_dir = options_.work_dir + "/containers";
  settings.binds = options_.images.binds;
  settings.mount_roots = options_.images.mount_roots;
  settings.cdi_dirs =
      options_.images.cdi_dirs.empty() ? DefaultCdiDirs() : options_.images.cdi_dirs;
  settings.cdi_gpu_kind = options_.images.cdi_gpu_kind;
  return settings;
}

std::shared_ptr<ImageCache> Agent::OpenImageCache(const Options& options) {
  if (options.images.disabled) {
    spdlog::info("images: off (--no-images)");
    return nullptr;
  }
  if (options.runtime) return nullptr;  // A runtime of its own (tests): no images.
  ContainerSettings settings;
  settings.runc = options.images.runc;
  const ImageCache::Options cache = CacheOptions(options);
  if (absl::Status usable = CheckImageSupport(settings, cache); !usable.ok()) {
    spdlog::info("images: off: {}", std::string(usable.message()));
    return nullptr;
  }
  spdlog::info(
      "images: on; cache {} (limit {}), insecure registries: {}", cache.dir,
      cache.max_bytes > 0 ? absl::StrCat(cache.max_bytes >> 20, " MiB") : "none",
      cache.insecure_registries.empty() ? "none" : absl::StrJoin(cache.insecure_registries, ","));
  return std::make_shared<ImageCache>(cache);
}

std::unique_ptr<ReplicaRuntime> Agent::MakeRuntime(ReplicaRuntime::Options runtime_options) {
  if (options_.runtime) return options_.runtime(std::move(runtime_options));
  if (image_cache_ == nullptr) return std::make_unique<ProcessLauncher>(std::move(runtime_options));
  ContainerRuntime::Images images;
  images.container = ContainerSettingsOf();
  images.container.cgroups = runtime_options.cgroups;
  if (absl::Status s = MakeDirs(images.container.runc_root); !s.ok()) {
    spdlog::warn("images: {}", std::string(s.message()));
  }
  images.cache = image_cache_;
  images.on_pull = [this](trainctl::v1::ImagePull pull) {
    trainctl::v1::AgentMessage message;
    *message.mutable_image_pull() = std::move(pull);
    absl::MutexLock lock(&mu_);
    if (context_ != nullptr) outbox_.push_back(std::move(message));
  };
  return std::make_unique<ContainerRuntime>(std::move(runtime_options), std::move(images));
}

void Agent::Prepull(const trainctl::v1::PrepullImage& request) {
  auto* containers = dynamic_cast<ContainerRuntime*>(runtime_.get());
  if (containers == nullptr) {
    trainctl::v1::AgentMessage reply;
    reply.mutable_image_prepulled()->set_request_id(request.request_id());
    reply.mutable_image_prepulled()->set_error(
        "this node runs no images (its agent says why at its start)");
    absl::MutexLock lock(&mu_);
    outbox_.push_back(std::move(reply));
    return;
  }
  spdlog::info("prepulling {}", request.image());
  // The thread holds the cache; the agent's destructor cancels the pull and waits for it.
  std::shared_ptr<ImageCache> cache = image_cache_;
  std::shared_ptr<PrepullSink> sink = prepull_sink_;
  {
    absl::MutexLock lock(&sink->mu);
    ++sink->threads;
  }
  std::thread([cache, sink, request]() mutable {
    trainctl::v1::AgentMessage reply;
    trainctl::v1::ImagePrepulled& answer = *reply.mutable_image_prepulled();
    answer.set_request_id(request.request_id());
    absl::StatusOr<Image> image = cache->Acquire(
        ImageRequest(request.image(), ImageRequest::kIfNotPresent, request.credentials()));
    if (image.ok()) {
      cache->Release(image->digest);
      answer.set_digest(image->digest);
      answer.set_bytes(image->bytes);
      spdlog::info("prepulled {} ({})", request.image(), image->digest);
    } else {
      answer.set_error(std::string(image.status().message()));
      spdlog::warn("prepull of {} failed: {}", request.image(), answer.error());
    }
    cache.reset();  // Before the agent may go.
    absl::MutexLock lock(&sink->mu);
    --sink->threads;
    if (sink->agent == nullptr) return;
    absl::MutexLock agent_lock(&sink->agent->mu_);
    sink->agent->outbox_.push_back(std::move(reply));
  }).detach();
}

}  // namespace trainctl::agent
