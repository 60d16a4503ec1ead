// ImageCache's pulls (image_cache.h): `skopeo inspect` to resolve a tag, `skopeo copy` into a
// layout of the pull's own with the cache's shared blobs, `umoci unpack`, the renames into place,
// and the progress a pull reports while it runs.
#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agents/image_cache.h"
#include "agents/spawn.h"
#include "agents/unique_fd.h"
#include "common/os_error.h"
#include "common/sha256.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace image_fetch_internal {

// The tag of the one image in each layout under oci/.
constexpr char kLayoutTag[] = "image";
constexpr absl::Duration kReportEvery = absl::Milliseconds(500);

// The names of the entries of `dir` with their sizes (st_size), optionally only those starting
// with `prefix`.
std::vector<std::pair<std::string, int64_t>> FilesIn(const std::string& dir,
                                                     absl::string_view prefix = "") {
  std::vector<std::pair<std::string, int64_t>> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    absl::string_view name = e->d_name;
    if (name == "." || name == ".." || !absl::StartsWith(name, prefix)) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    out.emplace_back(std::string(name), static_cast<int64_t>(st.st_size));
  }
  closedir(d);
  return out;
}

absl::Status RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace image_fetch_internal

absl::Status ImageCache::WriteAuthFile(const std::string& path, const std::string& content) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", ErrnoText(errno)));
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return absl::InternalError(absl::StrCat("cannot write ", path, ": ", ErrnoText(errno)));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

std::vector<std::string> ImageCache::ToolEnv() const {
  // Temporary files of the tools stay on the cache's file system, and go at construction.
  return MergeEnvironment(CurrentEnvironment(), {{"TMPDIR", tmp_dir_}});
}

bool ImageCache::Insecure(const std::string& registry) const {
  const std::vector<std::string>& list = options_.insecure_registries;
  return std::find(list.begin(), list.end(), registry) != list.end();
}

absl::Status ImageCache::PullFailure(const PullJob& job, const ToolOutcome& outcome) const {
  const std::string& image = job.ref.text;
  const std::string& registry = job.ref.registry;
  switch (outcome.end) {
    case ToolOutcome::End::kTimedOut:
      return absl::UnavailableError(absl::StrCat("pulling ", image, " from ", registry,
                                                 " timed out after ",
                                                 absl::FormatDuration(options_.pull_timeout)));
    case ToolOutcome::End::kNotStarted:
      return absl::InternalError(
          absl::StrCat("pulling ", image, ": cannot run ", options_.skopeo, ": ", outcome.error));
    case ToolOutcome::End::kCancelled:
      return absl::UnavailableError(
          absl::StrCat("pulling ", image, " was cancelled: the agent is stopping"));
    case ToolOutcome::End::kSignaled:
      return absl::InternalError(absl::StrCat("pulling ", image, ": ", options_.skopeo,
                                              " was killed by signal ", outcome.signal));
    case ToolOutcome::End::kExited:
      break;
  }
  std::string answer = RegistryAnswer(outcome.stderr_text);
  if (answer.empty())
    answer = absl::StrCat(options_.skopeo, " exited with status ", outcome.exit_code);
  switch (ClassifyPullFailure(outcome.stderr_text)) {
    case absl::StatusCode::kInvalidArgument:
      return absl::InvalidArgumentError(absl::StrCat(
          "image ", image, " cannot be pulled: registry ", registry, " answered: ", answer));
    case absl::StatusCode::kUnavailable: {
      const bool plain_http = absl::StrContains(answer, "HTTP response to HTTPS client");
      return absl::UnavailableError(absl::StrCat(
          "registry ", registry, " is unavailable to pull ", image, ": ", answer,
          plain_http && !Insecure(registry)
              ? " (a plain-HTTP registry must be one of the agent's insecure registries)"
              : ""));
    }
    default:
      return absl::InternalError(
          absl::StrCat("pulling ", image, " from ", registry, " failed: ", answer));
  }
}

int64_t ImageCache::Downloaded(const PullJob& job) const {
  int64_t bytes = 0;
  if (!job.work.empty()) {
    for (const auto& [name, size] :
         image_fetch_internal::FilesIn(job.work + "/layout", "oci-put-blob")) {
      bytes += size;
    }
  }
  for (const auto& [name, size] : image_fetch_internal::FilesIn(blob_dir_ + "/sha256")) {
    const std::string digest = "sha256:" + name;
    if (job.blobs_before.count(digest) > 0) continue;
    if (!job.expected_blobs.empty() && job.expected_blobs.count(digest) == 0) continue;
    bytes += size;
  }
  return bytes;
}

void ImageCache::Report(PullJob& job, PullProgress::Stage stage, bool now) {
  PullProgress p;
  p.ref = job.request->ref;
  p.stage = stage;
  p.bytes_total = job.total_bytes;
  if (stage == PullProgress::kDownloading) job.downloaded = Downloaded(job);
  p.bytes_done = job.downloaded;
  {
    absl::MutexLock lock(&mu_);
    job.flight->progress = p;
    if (job.digest_flight != nullptr) job.digest_flight->progress = p;
  }
  const absl::Time t = absl::Now();
  if (job.progress && (now || t - job.last_report >= image_fetch_internal::kReportEvery)) {
    job.last_report = t;
    job.progress(p);
  }
}

absl::StatusOr<std::string> ImageCache::Resolve(PullJob& job) {
  if (!job.ref.digest.empty()) return job.ref.digest;
  ToolRequest inspect;
  inspect.argv = {options_.skopeo, "inspect", "--raw"};
  if (Insecure(job.ref.registry)) inspect.argv.push_back("--tls-verify=false");
  if (!job.authfile.empty()) {
    inspect.argv.push_back("--authfile");
    inspect.argv.push_back(job.authfile);
  }
  inspect.argv.push_back(absl::StrCat("docker://", job.ref.repository, ":", job.ref.tag));
  inspect.env = ToolEnv();
  inspect.timeout = std::max(absl::ZeroDuration(), job.deadline - absl::Now());
  inspect.cancelled = &cancelled_;
  inspect.tick = [&] { Report(job, PullProgress::kResolving, false); };
  ToolOutcome outcome = RunTool(inspect);
  if (!outcome.ok()) return PullFailure(job, outcome);
  absl::StatusOr<ManifestInfo> manifest = ParseManifest(outcome.stdout_text);
  if (manifest.ok() && !manifest->is_index) {
    job.expected_blobs.insert(manifest->blobs.begin(), manifest->blobs.end());
    job.total_bytes = manifest->total_bytes;
  }
  return "sha256:" + Sha256Hex(outcome.stdout_text);
}

absl::Status ImageCache::Copy(PullJob& job) {
  for (const auto& [name, size] : image_fetch_internal::FilesIn(blob_dir_ + "/sha256")) {
    job.blobs_before.insert("sha256:" + name);
  }
  ToolRequest copy;
  copy.argv = {options_.skopeo, "copy", "--quiet"};
  if (Insecure(job.ref.registry)) copy.argv.push_back("--src-tls-verify=false");
  if (!job.authfile.empty()) {
    copy.argv.push_back("--src-authfile");
    copy.argv.push_back(job.authfile);
  }
  copy.argv.push_back("--dest-shared-blob-dir");
  copy.argv.push_back(blob_dir_);
  copy.argv.push_back(absl::StrCat("docker://", job.ref.repository, "@", job.digest));
  // Relative to the pull's directory: an oci: reference splits at its first ':'.
  copy.argv.push_back(absl::StrCat("oci:layout:", image_fetch_internal::kLayoutTag));
  copy.working_dir = job.work;
  copy.env = ToolEnv();
  copy.timeout = std::max(absl::ZeroDuration(), job.deadline - absl::Now());
  copy.cancelled = &cancelled_;
  copy.tick = [&] { Report(job, PullProgress::kDownloading, false); };
  Report(job, PullProgress::kDownloading, true);
  ToolOutcome outcome = RunTool(copy);
  if (!outcome.ok()) return PullFailure(job, outcome);
  Report(job, PullProgress::kDownloading, true);
  spdlog::info("image {}: {} copied in {}", job.ref.text, job.digest,
               absl::FormatDuration(outcome.elapsed));
  return absl::OkStatus();
}

absl::Status ImageCache::Unpack(PullJob& job, const std::string& layout,
                                const std::string& bundle) {
  ToolRequest unpack;
  unpack.argv = {options_.umoci, "unpack"};
  if (geteuid() != 0) unpack.argv.push_back("--rootless");
  unpack.argv.push_back("--image");
  unpack.argv.push_back(absl::StrCat(layout, ":", image_fetch_internal::kLayoutTag));
  unpack.argv.push_back(bundle);
  unpack.working_dir = options_.dir;  // `layout` and `bundle` are relative to it.
  unpack.env = ToolEnv();
  unpack.timeout = options_.unpack_timeout;
  unpack.cancelled = &cancelled_;
  unpack.tick = [&] { Report(job, PullProgress::kUnpacking, false); };
  Report(job, PullProgress::kUnpacking, true);
  ToolOutcome outcome = RunTool(unpack);
  if (!outcome.ok()) {
    return absl::InternalError(
        absl::StrCat("unpacking ", job.ref.text, " (", job.digest, ") with ", options_.umoci,
                     " failed: ", outcome.Describe(options_.unpack_timeout)));
  }
  spdlog::info("image {}: {} unpacked in {}", job.ref.text, job.digest,
               absl::FormatDuration(outcome.elapsed));
  return absl::OkStatus();
}

absl::StatusOr<ImageCache::Entry> ImageCache::Fetch(PullJob& job) {
  namespace fetch = image_fetch_internal;
  TC_RETURN_IF_ERROR(Copy(job));
  const std::string layout = job.work + "/layout";
  absl::StatusOr<LayoutImage> read =
      ReadLayoutImage(layout + "/index.json", blob_dir_, fetch::kLayoutTag);
  if (!read.ok()) {
    return absl::InternalError(
        absl::StrCat("pulling ", job.ref.text, ": skopeo's layout: ", read.status().message()));
  }
  // The layout's blobs are the cache's: a relative link, valid once it is in oci/.
  const std::string hex = job.digest.substr(7);
  const std::string link = layout + "/blobs";
  std::error_code ec;
  std::filesystem::remove(link, ec);  // The empty directory skopeo made.
  if (symlink("../../blobs", link.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot link ", link, ": ", ErrnoText(errno)));
  }
  const std::string final_layout = oci_dir_ + "/" + hex;
  const std::string final_rootfs = rootfs_dir_ + "/" + hex;
  // Neither is there (Recover took back or removed leftovers, and one flight pulls a digest).
  TC_RETURN_IF_ERROR(fetch::RemoveTree(final_layout));
  TC_RETURN_IF_ERROR(fetch::RemoveTree(final_rootfs));
  if (rename(layout.c_str(), final_layout.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", layout, " to ", final_layout, ": ", ErrnoText(errno)));
  }
  const std::string bundle = job.work + "/bundle";
  absl::Status unpacked =
      Unpack(job, "oci/" + hex, "tmp/" + job.work.substr(tmp_dir_.size() + 1) + "/bundle");
  if (unpacked.ok() && rename((bundle + "/rootfs").c_str(), final_rootfs.c_str()) != 0) {
    unpacked = absl::InternalError(absl::StrCat("cannot rename ", bundle, "/rootfs to ",
                                                final_rootfs, ": ", ErrnoText(errno)));
  }
  if (!unpacked.ok()) {
    (void)fetch::RemoveTree(final_layout);
    return unpacked;
  }
  Entry entry;
  entry.stored.digest = job.digest;
  entry.stored.blobs = read->blobs;
  entry.stored.config = read->config;
  entry.stored.rootfs_bytes = DiskBytes(final_rootfs);
  entry.stored.last_used = absl::Now();
  return entry;
}

}  // namespace trainctl::agent
