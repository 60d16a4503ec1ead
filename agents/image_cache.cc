// ImageCache (image_cache.h): Acquire, Release, Prefetch and List, and the single-flight
// bookkeeping of pulls. The pull itself (skopeo, umoci) is in image_cache_fetch.cc; the state
// file, recovery and eviction in image_cache_store.cc.
#include "agents/image_cache.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/os_error.h"
#include "common/status_macros.h"

namespace trainctl::agent {

namespace image_cache_internal {

// `options` with its dir absolute (the tools run in other directories) and without a trailing '/'.
ImageCache::Options WithAbsoluteDir(ImageCache::Options options) {
  if (options.dir.empty()) return options;
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(options.dir, ec);
  if (!ec) options.dir = dir.lexically_normal().string();
  while (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  return options;
}

}  // namespace image_cache_internal

ImageCache::ImageCache(Options options)
    : options_(image_cache_internal::WithAbsoluteDir(std::move(options))),
      blob_dir_(options_.dir + "/blobs"),
      oci_dir_(options_.dir + "/oci"),
      rootfs_dir_(options_.dir + "/rootfs"),
      tmp_dir_(options_.dir + "/tmp") {
  absl::MutexLock lock(&mu_);
  broken_ = Recover();
  if (!broken_.ok()) {
    spdlog::error("image cache {}: {}", options_.dir, broken_.ToString());
    return;
  }
  int64_t rootfs_bytes = 0;
  for (const auto& [digest, entry] : entries_) rootfs_bytes += entry.stored.rootfs_bytes;
  spdlog::info("image cache {}: {} images, {} bytes unpacked, {} bytes of blobs (limit {})",
               options_.dir, entries_.size(), rootfs_bytes, DiskBytes(blob_dir_),
               options_.max_bytes > 0 ? absl::StrCat(options_.max_bytes) : "none");
}

ImageCache::~ImageCache() = default;

absl::StatusOr<Image> ImageCache::Acquire(
    const ImageRequest& request, const std::function<void(const PullProgress&)>& progress) {
  TC_ASSIGN_OR_RETURN(std::string digest, Obtain(request, /*pin=*/true, progress));
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(digest);
  if (it == entries_.end()) {  // Cannot happen: it is pinned.
    return absl::InternalError(absl::StrCat("image ", digest, " vanished from the cache"));
  }
  return ImageOf(it->second);
}

absl::Status ImageCache::Prefetch(const ImageRequest& request) {
  return Obtain(request, /*pin=*/false, nullptr).status();
}

void ImageCache::Release(const std::string& digest) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(digest);
  if (it == entries_.end() || it->second.pins == 0) {
    spdlog::warn("image cache: release of {}, which is not {}", digest,
                 it == entries_.end() ? "cached" : "pinned");
    return;
  }
  --it->second.pins;
  // Used until now: an image a replica ran on for days is not the least recently used.
  it->second.stored.last_used = absl::Now();
  SaveStateLocked();
}

std::vector<CachedImage> ImageCache::List() {
  absl::MutexLock lock(&mu_);
  std::vector<CachedImage> out;
  for (const auto& [digest, entry] : entries_) {
    CachedImage image;
    image.refs = entry.stored.refs;
    image.digest = digest;
    image.bytes = EntryBytes(entry);
    image.last_used = entry.stored.last_used;
    image.pins = entry.pins;
    out.push_back(std::move(image));
  }
  std::sort(out.begin(), out.end(),
            [](const CachedImage& a, const CachedImage& b) { return a.last_used > b.last_used; });
  return out;
}

const ImageCache::Entry* ImageCache::CachedLocked(const ImageRef& ref,
                                                  ImageRequest::PullPolicy policy) const {
  if (!ref.digest.empty()) {
    auto it = entries_.find(ref.digest);
    return it == entries_.end() ? nullptr : &it->second;
  }
  if (policy == ImageRequest::kAlways) return nullptr;
  const std::string key = ref.Key();
  for (const auto& [digest, entry] : entries_) {
    const std::vector<std::string>& refs = entry.stored.refs;
    if (std::find(refs.begin(), refs.end(), key) != refs.end()) return &entry;
  }
  return nullptr;
}

absl::StatusOr<std::string> ImageCache::Obtain(const ImageRequest& request, bool pin,
                                               const ProgressFn& progress) {
  TC_ASSIGN_OR_RETURN(ImageRef ref, ParseImageRef(request.ref));
  std::shared_ptr<Flight> flight;
  bool starter = false;
  {
    absl::MutexLock lock(&mu_);
    TC_RETURN_IF_ERROR(broken_);
    if (const Entry* cached = CachedLocked(ref, request.policy)) {
      Entry& entry = entries_[cached->stored.digest];
      if (pin) ++entry.pins;
      entry.stored.last_used = absl::Now();
      SaveStateLocked();
      return entry.stored.digest;
    }
    std::shared_ptr<Flight>& slot = ref_flights_[ref.Key()];
    if (slot == nullptr) {
      slot = std::make_shared<Flight>();
      slot->progress.ref = request.ref;
      starter = true;
    }
    flight = slot;
    if (pin) ++flight->pins;
  }
  if (starter) {
    RunFlight(ref, request, flight, progress);
  } else {
    Wait(flight, progress);
  }
  absl::MutexLock lock(&mu_);
  if (!flight->status.ok()) return flight->status;
  return flight->digest;
}

void ImageCache::Wait(const std::shared_ptr<Flight>& flight, const ProgressFn& progress,
                      Flight* mirror) {
  mu_.Lock();
  while (!mu_.AwaitWithTimeout(absl::Condition(&flight->done), absl::Milliseconds(500))) {
    PullProgress p = flight->progress;
    if (mirror != nullptr) mirror->progress = p;
    mu_.Unlock();
    if (progress) progress(p);
    mu_.Lock();
  }
  mu_.Unlock();
}

void ImageCache::RunFlight(const ImageRef& ref, const ImageRequest& request,
                           const std::shared_ptr<Flight>& flight, const ProgressFn& progress) {
  PullJob job;
  job.ref = ref;
  job.request = &request;
  job.flight = flight;
  job.progress = progress;
  job.deadline = absl::Now() + options_.pull_timeout;
  bool added = false;
  absl::Status status = [&]() -> absl::Status {
    std::string pattern = tmp_dir_ + "/pull-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(
          absl::StrCat("cannot make a directory in ", tmp_dir_, ": ", ErrnoText(errno)));
    }
    job.work = pattern;
    if (!request.credentials.empty()) {
      TC_ASSIGN_OR_RETURN(std::string auth, AuthFileJson(request.credentials, ref.registry));
      job.authfile = job.work + "/auth.json";
      TC_RETURN_IF_ERROR(WriteAuthFile(job.authfile, auth));
    }
    Report(job, PullProgress::kResolving, /*now=*/true);
    TC_ASSIGN_OR_RETURN(job.digest, Resolve(job));
    std::shared_ptr<Flight> other;
    {
      absl::MutexLock lock(&mu_);
      ++busy_[job.digest];
      if (entries_.count(job.digest) > 0) return absl::OkStatus();  // Unchanged: reused.
      auto it = digest_flights_.find(job.digest);
      if (it != digest_flights_.end()) {
        other = it->second;
      } else {
        job.digest_flight = std::make_shared<Flight>();
        job.digest_flight->progress = flight->progress;
        digest_flights_[job.digest] = job.digest_flight;
      }
    }
    if (other != nullptr) {  // Another reference to the same image is being pulled.
      Wait(other, progress, flight.get());
      absl::MutexLock lock(&mu_);
      return other->status;
    }
    absl::StatusOr<Entry> entry = Fetch(job);
    absl::MutexLock lock(&mu_);
    job.digest_flight->status = entry.status();
    job.digest_flight->done = true;
    digest_flights_.erase(job.digest);
    if (!entry.ok()) return entry.status();
    entries_[job.digest] = *std::move(entry);
    added = true;
    return absl::OkStatus();
  }();

  std::vector<std::string> trash;
  {
    absl::MutexLock lock(&mu_);
    if (!job.digest.empty()) {
      auto busy = busy_.find(job.digest);
      if (busy != busy_.end() && --busy->second == 0) busy_.erase(busy);
    }
    auto it = status.ok() ? entries_.find(job.digest) : entries_.end();
    if (status.ok() && it == entries_.end()) {  // Cannot happen: busy.
      status = absl::InternalError(absl::StrCat("image ", job.digest, " vanished from the cache"));
    }
    if (status.ok()) {
      // The reference names this image now, and no other.
      const std::string key = ref.Key();
      for (auto& [digest, entry] : entries_) {
        std::vector<std::string>& refs = entry.stored.refs;
        refs.erase(std::remove(refs.begin(), refs.end(), key), refs.end());
      }
      it->second.stored.refs.push_back(key);
      it->second.pins += flight->pins;
      it->second.stored.last_used = absl::Now();
      flight->digest = job.digest;
      if (added) trash = EvictLocked(job.digest);
      SaveStateLocked();
    }
    flight->status = status;
    flight->done = true;
    ref_flights_.erase(ref.Key());
  }
  if (!status.ok()) spdlog::warn("image {}: {}", request.ref, status.ToString());
  if (!job.work.empty()) trash.push_back(job.work);
  DeleteTrees(trash);
}

Image ImageCache::ImageOf(const Entry& entry) const {
  Image image;
  image.digest = entry.stored.digest;
  image.rootfs = rootfs_dir_ + "/" + entry.stored.digest.substr(7);
  image.env = entry.stored.config.env;
  image.working_dir = entry.stored.config.working_dir;
  image.entrypoint = entry.stored.config.entrypoint;
  image.cmd = entry.stored.config.cmd;
  image.user = entry.stored.config.user;
  image.bytes = EntryBytes(entry);
  return image;
}

int64_t ImageCache::EntryBytes(const Entry& entry) const {
  int64_t bytes = entry.stored.rootfs_bytes;
  for (const std::string& blob : entry.stored.blobs) bytes += DiskBytes(BlobPath(blob_dir_, blob));
  return bytes;
}

void ImageCache::DeleteTrees(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) spdlog::warn("image cache: cannot remove {}: {}", path, ec.message());
  }
}

}  // namespace trainctl::agent
