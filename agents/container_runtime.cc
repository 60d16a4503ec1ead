#include "agents/container_runtime.h"

#include <unistd.h>

#include <fstream>
#include <thread>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/image_pull.h"
#include "agents/spawn.h"
#include "common/log_context.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

bool HasOverlayfs() {
  std::ifstream in("/proc/filesystems");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::EndsWith(line, "\toverlay")) return true;
  }
  return false;
}

// `ref` pinned to `digest`: "<repository>@<digest>", what the cache serves without the registry.
std::string PinnedRef(const std::string& ref, const std::string& digest) {
  absl::StatusOr<ImageRef> parsed = ParseImageRef(ref);
  return parsed.ok() ? absl::StrCat(parsed->repository, "@", digest) : ref;
}

trainctl::v1::ReplicaExited NotStarted(const std::string& run_id, const std::string& error) {
  trainctl::v1::ReplicaExited exited;
  exited.set_run_id(run_id);
  exited.set_launch_failed(true);
  exited.set_launch_error(error);
  exited.set_end_time_ms(WallNowMs());
  return exited;
}

}  // namespace

absl::Status CheckImageSupport(const ContainerSettings& settings,
                               const ImageCache::Options& cache) {
  if (geteuid() != 0) {
    return absl::FailedPreconditionError("the agent does not run as root, which runc needs");
  }
  const std::string path = SearchPathOf(CurrentEnvironment());
  for (const std::string& tool : {settings.runc, cache.skopeo, cache.umoci}) {
    if (!ResolveCommand(tool, path, "/").ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(tool, " is not installed (apt-get install skopeo umoci runc)"));
    }
  }
  if (!HasOverlayfs()) {
    return absl::FailedPreconditionError("the kernel has no overlayfs (modprobe overlay)");
  }
  return absl::OkStatus();
}

ContainerRuntime::ContainerRuntime(Options options, Images images)
    : images_(std::move(images)), on_exited_(options.on_exited) {
  std::shared_ptr<Shared> shared = shared_;
  std::shared_ptr<ImageCache> cache = images_.cache;
  ContainerSettings settings = images_.container;
  options.prepare_container = [shared, settings](ContainerInputs in) {
    {
      absl::MutexLock lock(&shared->mu);
      auto it = shared->images.find(in.launch->run_id());
      if (it == shared->images.end()) {
        return absl::StatusOr<PreparedContainer>(
            absl::InternalError("the run's image was not pulled"));
      }
      in.image = it->second;
    }
    return PrepareContainer(settings, in);
  };
  options.on_run_end = [settings](const std::string& run_id) { RemoveContainer(settings, run_id); };
  ExitedCallback report = options.on_exited;
  options.on_exited = [shared, cache, report](trainctl::v1::ReplicaExited exited) {
    std::optional<std::string> digest;
    {
      absl::MutexLock lock(&shared->mu);
      auto it = shared->images.find(exited.run_id());
      if (it != shared->images.end()) {
        digest = it->second.digest;
        shared->images.erase(it);
      }
    }
    if (digest) cache->Release(*digest);
    if (report) report(std::move(exited));
  };
  inner_ = std::make_unique<ProcessLauncher>(std::move(options));
}

bool ContainerRuntime::Shared::Enter() {
  absl::MutexLock lock(&mu);
  if (closed) return false;
  ++busy;
  return true;
}

void ContainerRuntime::Shared::Leave() {
  absl::MutexLock lock(&mu);
  --busy;
}

ContainerRuntime::~ContainerRuntime() {
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->closed = true;
  }
  images_.cache->CancelPulls();
  absl::MutexLock lock(&shared_->mu);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) {
    return shared_->busy == 0 && shared_->threads == 0;
  };
  shared_->mu.Await(absl::Condition(&idle));
}

std::vector<std::string> ContainerRuntime::AdoptRecordedRuns(
    const std::set<std::string>& reported) {
  // Ends found now go through on_run_end, which removes their containers.
  std::vector<std::string> running = inner_->AdoptRecordedRuns(reported);
  const std::set<std::string> live(running.begin(), running.end());
  for (const std::string& run_id : RecordedContainerRuns(images_.container)) {
    if (live.count(run_id) == 0) {
      RemoveContainer(images_.container, run_id);  // Its run ended before the agent knew it.
      continue;
    }
    absl::StatusOr<std::string> digest = RecordedContainerDigest(images_.container, run_id);
    absl::StatusOr<std::string> ref = RecordedContainerImage(images_.container, run_id);
    absl::StatusOr<Image> image = absl::NotFoundError("no digest recorded");
    if (digest.ok() && ref.ok()) image = images_.cache->Acquire({PinnedRef(*ref, *digest)});
    if (!image.ok()) {
      spdlog::warn("run {}: cannot pin the image of its container again: {}", run_id,
                   std::string(image.status().message()));
      continue;
    }
    absl::MutexLock lock(&shared_->mu);
    shared_->images[run_id] = *std::move(image);
  }
  return running;
}

void ContainerRuntime::Launch(const trainctl::v1::LaunchReplica& launch) {
  if (launch.image().empty() || fenced_ || rejecting_ || !launch.prepare_error().empty()) {
    inner_->Launch(launch);  // Refused there when it must be.
    return;
  }
  {
    absl::MutexLock lock(&shared_->mu);
    if (shared_->pulling.count(launch.run_id()) > 0 || shared_->images.count(launch.run_id()) > 0) {
      spdlog::info("run {}: launch ignored, the run is already known", launch.run_id());
      return;
    }
    shared_->pulling[launch.run_id()] = launch;
    ++shared_->threads;
  }
  std::thread(&ContainerRuntime::PullThenLaunch, shared_, images_.cache, images_, on_exited_,
              inner_.get(), launch)
      .detach();
}

void ContainerRuntime::PullThenLaunch(std::shared_ptr<Shared> shared,
                                      std::shared_ptr<ImageCache> cache, Images images,
                                      ExitedCallback on_exited, ReplicaRuntime* inner,
                                      trainctl::v1::LaunchReplica launch) {
  // Last of all, once nothing of the runtime is used any more.
  absl::Cleanup ended = [&shared, &cache] {
    cache.reset();
    absl::MutexLock lock(&shared->mu);
    --shared->threads;
  };
  LogScope log_scope = LogScope::ForRun(launch.run_id());
  auto pull_message = [&](int64_t bytes, bool done) {
    trainctl::v1::ImagePull pull;
    pull.set_run_id(launch.run_id());
    pull.set_image(launch.image());
    pull.set_bytes_done(bytes);
    pull.set_done(done);
    return pull;
  };
  auto tell = [&](trainctl::v1::ImagePull pull) {
    if (!images.on_pull || !shared->Enter()) return;
    images.on_pull(std::move(pull));
    shared->Leave();
  };
  tell(pull_message(0, false));
  bool downloaded = false;
  absl::Time last = absl::Now();
  const ImageRequest request(
      launch.image(),
      launch.image_pull_always() ? ImageRequest::kAlways : ImageRequest::kIfNotPresent,
      launch.image_credentials());
  absl::StatusOr<Image> image = cache->Acquire(request, [&](const PullProgress& progress) {
    if (progress.stage == PullProgress::kDownloading) downloaded = true;
    if (absl::Now() - last < images.progress_every) return;
    last = absl::Now();
    tell(pull_message(progress.bytes_done, false));
  });
  const std::string& run_id = launch.run_id();
  bool entered = false;
  {
    absl::MutexLock lock(&shared->mu);
    // Stopped meanwhile (and reported then), or the runtime is gone: nothing more to do.
    if (shared->pulling.erase(run_id) > 0 && !shared->closed) {
      entered = true;
      ++shared->busy;
      if (image.ok()) {
        shared->images[run_id] = *image;
        shared->handing_over[run_id];
      }
    }
  }
  if (!entered) {
    if (image.ok()) cache->Release(image->digest);
    return;
  }
  if (!image.ok()) {
    spdlog::warn("run {}: {}", run_id, std::string(image.status().message()));
    trainctl::v1::ReplicaExited exited = NotStarted(run_id, std::string(image.status().message()));
    exited.set_launch_error_is_user(absl::IsInvalidArgument(image.status()));
    exited.set_registry_unavailable(absl::IsUnavailable(image.status()) ||
                                    absl::IsDeadlineExceeded(image.status()));
    if (on_exited) on_exited(std::move(exited));
    shared->Leave();
    return;
  }
  trainctl::v1::ImagePull done = pull_message(image->bytes, true);
  done.set_digest(image->digest);
  done.set_cached(!downloaded);
  if (images.on_pull) images.on_pull(std::move(done));
  spdlog::info("run {}: image {} ready ({}{})", run_id, launch.image(), image->digest,
               downloaded ? "" : ", cached");
  inner->Launch(launch);
  std::optional<std::pair<int64_t, std::string>> stop;
  {
    absl::MutexLock lock(&shared->mu);
    auto it = shared->handing_over.find(run_id);
    stop = std::move(it->second);
    shared->handing_over.erase(it);
  }
  if (stop) inner->Stop(run_id, stop->first, stop->second).IgnoreError();
  shared->Leave();
}

int ContainerRuntime::EndPulling(const std::function<void(trainctl::v1::ReplicaExited*)>& mark) {
  std::vector<trainctl::v1::ReplicaExited> ended;
  {
    absl::MutexLock lock(&shared_->mu);
    for (const auto& [run_id, launch] : shared_->pulling) {
      trainctl::v1::ReplicaExited exited = NotStarted(
          run_id, absl::StrCat("stopped while its image ", launch.image(), " was being pulled"));
      mark(&exited);
      ended.push_back(std::move(exited));
    }
    shared_->pulling.clear();
  }
  const int count = static_cast<int>(ended.size());
  // Reported from a thread of their own: Fence's caller holds the lock the callback takes.
  if (count > 0 && on_exited_ && shared_->Enter()) {
    std::thread([shared = shared_, report = on_exited_, ended = std::move(ended)]() mutable {
      for (trainctl::v1::ReplicaExited& exited : ended) report(std::move(exited));
      shared->Leave();
    }).detach();
  }
  return count;
}

absl::Status ContainerRuntime::Stop(const std::string& run_id, int64_t grace_ms,
                                    const std::string& reason) {
  std::optional<trainctl::v1::ReplicaExited> ended;
  {
    absl::MutexLock lock(&shared_->mu);
    if (auto it = shared_->handing_over.find(run_id); it != shared_->handing_over.end()) {
      it->second = std::make_pair(grace_ms, reason);  // Passed on once Launch() returned.
      return absl::OkStatus();
    }
    auto it = shared_->pulling.find(run_id);
    if (it != shared_->pulling.end()) {
      ended = NotStarted(run_id, absl::StrCat("stopped (", reason, ") while its image ",
                                              it->second.image(), " was being pulled"));
      ended->set_stopped_by_request(true);
      shared_->pulling.erase(it);
    }
  }
  if (!ended) return inner_->Stop(run_id, grace_ms, reason);
  spdlog::info("run {}: stopped while its image was being pulled ({})", run_id, reason);
  if (on_exited_) on_exited_(*std::move(ended));
  return absl::OkStatus();
}

void ContainerRuntime::StopAll(int64_t grace_ms, const std::string& reason) {
  EndPulling([](trainctl::v1::ReplicaExited* e) { e->set_node_shutdown(true); });
  inner_->StopAll(grace_ms, reason);
}

absl::Status ContainerRuntime::Notice(const trainctl::v1::NoticeReplica& notice) {
  {
    absl::MutexLock lock(&shared_->mu);
    if (shared_->pulling.count(notice.run_id()) > 0) {
      return absl::UnavailableError("the run is still starting: its image is being pulled");
    }
  }
  return inner_->Notice(notice);
}

int ContainerRuntime::Fence(int64_t grace_ms, const std::string& reason) {
  fenced_ = true;
  const int ended = EndPulling([](trainctl::v1::ReplicaExited* e) { e->set_fenced(true); });
  return ended + inner_->Fence(grace_ms, reason);
}

void ContainerRuntime::Unfence() {
  fenced_ = false;
  inner_->Unfence();
}

void ContainerRuntime::RefuseFencedLaunch(const std::string& run_id, const std::string& reason) {
  inner_->RefuseFencedLaunch(run_id, reason);
}

void ContainerRuntime::RejectNewLaunches(const std::string& reason) {
  rejecting_ = true;
  inner_->RejectNewLaunches(reason);
}

void ContainerRuntime::ForgetRun(const std::string& run_id) const { inner_->ForgetRun(run_id); }

trainctl::v1::LogData ContainerRuntime::ReadLog(const std::string& run_id, int64_t offset,
                                                int64_t max_bytes) const {
  {
    absl::MutexLock lock(&shared_->mu);
    if (shared_->pulling.count(run_id) > 0) {
      trainctl::v1::LogData out;
      out.set_next_offset(offset);
      return out;  // Nothing yet, more to come.
    }
  }
  return inner_->ReadLog(run_id, offset, max_bytes);
}

bool ContainerRuntime::LogFinal(const std::string& run_id) const {
  {
    absl::MutexLock lock(&shared_->mu);
    if (shared_->pulling.count(run_id) > 0 || shared_->handing_over.count(run_id) > 0) {
      return false;
    }
  }
  return inner_->LogFinal(run_id);
}

std::vector<trainctl::v1::KnownRun> ContainerRuntime::KnownRuns() const {
  return inner_->KnownRuns();
}

int ContainerRuntime::ActiveCount() const {
  absl::MutexLock lock(&shared_->mu);
  return inner_->ActiveCount() + static_cast<int>(shared_->pulling.size());
}

bool ContainerRuntime::WaitUntilIdle(absl::Time deadline) const {
  {
    absl::MutexLock lock(&shared_->mu);
    auto none = [this]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) { return shared_->pulling.empty(); };
    if (!shared_->mu.AwaitWithDeadline(absl::Condition(&none), deadline)) return false;
  }
  return inner_->WaitUntilIdle(deadline);
}

}  // namespace trainctl::agent
