// ImageCache's disk (image_cache.h): the layout and its recovery at construction, state.json,
// eviction and the sweep of blobs no image needs.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agents/image_cache.h"
#include "common/os_error.h"

namespace trainctl::agent {
namespace image_store_internal {

namespace fs = std::filesystem;

absl::Status MakeDir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", ErrnoText(errno)));
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InternalError(absl::StrCat("cannot create ", path, ": not a directory"));
  }
  if ((st.st_mode & 07777) != mode && chmod(path.c_str(), mode) != 0) {
    return absl::InternalError(absl::StrCat("cannot chmod ", path, ": ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

// The names in `dir` (not "." or "..").
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  return names;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

void RemoveNow(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) spdlog::warn("image cache: cannot remove {}: {}", path, ec.message());
}

}  // namespace image_store_internal

absl::Status ImageCache::Recover() {
  namespace store = image_store_internal;
  if (options_.dir.empty()) return absl::InternalError("no image directory was given");
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  for (const auto& [path, mode] :
       std::vector<std::pair<std::string, mode_t>>{{options_.dir, 0711},
                                                   {blob_dir_, 0700},
                                                   {blob_dir_ + "/sha256", 0700},
                                                   {oci_dir_, 0700},
                                                   {rootfs_dir_, 0711},
                                                   {tmp_dir_, 0700}}) {
    absl::Status made = store::MakeDir(path, mode);
    if (!made.ok()) return made;
  }
  // What pulls and deletions of an earlier life left.
  for (const std::string& name : store::Names(tmp_dir_)) {
    spdlog::info("image cache: removing leftover {}/{}", tmp_dir_, name);
    store::RemoveNow(tmp_dir_ + "/" + name);
  }

  std::vector<StoredImage> stored;
  const std::string state_path = options_.dir + "/state.json";
  if (store::Exists(state_path)) {
    std::ifstream in(state_path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::vector<StoredImage>> parsed = ParseStateJson(text.str());
    if (parsed.ok()) {
      stored = *std::move(parsed);
    } else {
      spdlog::warn("image cache: {}: {}; rebuilding it from {}", state_path,
                   std::string(parsed.status().message()), rootfs_dir_);
    }
  }
  for (StoredImage& image : stored) {
    const std::string hex = image.digest.substr(7);
    if (store::Exists(rootfs_dir_ + "/" + hex) && store::Exists(oci_dir_ + "/" + hex)) {
      entries_[image.digest].stored = std::move(image);
    }
  }
  // A complete root with its layout but no record: an agent that died before saving it.
  for (const std::string& hex : store::Names(rootfs_dir_)) {
    const std::string digest = "sha256:" + hex;
    if (entries_.count(digest) > 0) continue;
    const std::string rootfs = rootfs_dir_ + "/" + hex;
    absl::StatusOr<LayoutImage> layout =
        IsSha256Digest(digest)
            ? ReadLayoutImage(oci_dir_ + "/" + hex + "/index.json", blob_dir_, "image")
            : absl::InternalError("not an image digest");
    if (!layout.ok()) {
      spdlog::info("image cache: removing {}: {}", rootfs, std::string(layout.status().message()));
      store::RemoveNow(rootfs);
      continue;
    }
    Entry& entry = entries_[digest];
    entry.stored.digest = digest;
    entry.stored.blobs = layout->blobs;
    entry.stored.config = layout->config;
    entry.stored.rootfs_bytes = DiskBytes(rootfs);
    entry.stored.last_used = absl::Now();
    spdlog::info("image cache: took back {} ({} bytes)", digest, entry.stored.rootfs_bytes);
  }
  for (const std::string& hex : store::Names(oci_dir_)) {
    if (entries_.count("sha256:" + hex) == 0) store::RemoveNow(oci_dir_ + "/" + hex);
  }
  std::vector<std::string> trash;
  SweepBlobsLocked(&trash);
  DeleteTrees(trash);
  SaveStateLocked();
  return absl::OkStatus();
}

void ImageCache::SaveStateLocked() {
  std::vector<StoredImage> images;
  images.reserve(entries_.size());
  for (const auto& [digest, entry] : entries_) images.push_back(entry.stored);
  const std::string path = options_.dir + "/state.json";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << StateJson(images) << "\n";
    out.close();
    if (!out) {
      spdlog::warn("image cache: cannot write {}", tmp);
      return;
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    spdlog::warn("image cache: cannot rename {} to {}: {}", tmp, path, ErrnoText(errno));
  }
}

void ImageCache::TrashLocked(const std::string& path, std::vector<std::string>* trash) {
  if (!image_store_internal::Exists(path)) return;
  const std::string target = absl::StrCat(tmp_dir_, "/trash-", getpid(), "-", ++trash_seq_);
  if (rename(path.c_str(), target.c_str()) == 0) {
    trash->push_back(target);
    return;
  }
  spdlog::warn("image cache: cannot move {} to {}: {}; removing it in place", path, target,
               ErrnoText(errno));
  image_store_internal::RemoveNow(path);
}

void ImageCache::SweepBlobsLocked(std::vector<std::string>* trash) {
  std::set<std::string> needed;
  for (const auto& [digest, entry] : entries_) {
    needed.insert(entry.stored.blobs.begin(), entry.stored.blobs.end());
  }
  const std::string dir = blob_dir_ + "/sha256";
  for (const std::string& hex : image_store_internal::Names(dir)) {
    if (needed.count("sha256:" + hex) == 0) TrashLocked(dir + "/" + hex, trash);
  }
}

std::vector<std::string> ImageCache::EvictLocked(const std::string& keep) {
  std::vector<std::string> trash;
  if (options_.max_bytes <= 0) return trash;
  int64_t total = DiskBytes(blob_dir_);
  for (const auto& [digest, entry] : entries_) total += entry.stored.rootfs_bytes;
  if (total <= options_.max_bytes) return trash;
  // Blobs go too, unless a pull is copying: it may have found some of them there and be
  // counting on them.
  const bool sweep = digest_flights_.empty();
  std::vector<std::pair<absl::Time, std::string>> candidates;
  for (const auto& [digest, entry] : entries_) {
    if (entry.pins == 0 && busy_.count(digest) == 0 && digest != keep) {
      candidates.emplace_back(entry.stored.last_used, digest);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (const auto& [last_used, digest] : candidates) {
    if (total <= options_.max_bytes) break;
    const Entry& entry = entries_[digest];
    int64_t freed = entry.stored.rootfs_bytes;
    if (sweep) {
      std::set<std::string> others;
      for (const auto& [d, e] : entries_) {
        if (d != digest) others.insert(e.stored.blobs.begin(), e.stored.blobs.end());
      }
      for (const std::string& blob : entry.stored.blobs) {
        if (others.count(blob) == 0) freed += DiskBytes(BlobPath(blob_dir_, blob));
      }
    }
    spdlog::info(
        "image cache: evicting {} ({}), last used {}, {} bytes: the cache holds {} of "
        "at most {} bytes",
        digest, absl::StrJoin(entry.stored.refs, ", "), absl::FormatTime(entry.stored.last_used),
        freed, total, options_.max_bytes);
    const std::string hex = digest.substr(7);
    TrashLocked(rootfs_dir_ + "/" + hex, &trash);
    TrashLocked(oci_dir_ + "/" + hex, &trash);
    entries_.erase(digest);
    total -= freed;
  }
  if (sweep) SweepBlobsLocked(&trash);
  if (total > options_.max_bytes) {
    spdlog::warn(
        "image cache: {} bytes, over its limit of {}: every image left is in use or "
        "was just pulled",
        total, options_.max_bytes);
  }
  return trash;
}

}  // namespace trainctl::agent
