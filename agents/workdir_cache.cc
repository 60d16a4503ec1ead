#include "agents/workdir_cache.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/run_files.h"
#include "agents/workdir_unpack.h"
#include "common/sha256.h"

namespace trainctl::agent {
namespace {

std::string ReadMarker(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::Status WorkdirCache::FetchArchive(const std::string& job_id, const std::string& digest,
                                        const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", strerror(errno)));
  }
  Sha256 hash;
  absl::Status fetched = fetch_(job_id, digest, [&](absl::string_view bytes) {
    hash.Update(bytes);
    while (!bytes.empty()) {
      const ssize_t n = write(fd, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return absl::InternalError(absl::StrCat("writing ", path, ": ", strerror(errno)));
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  });
  if (close(fd) != 0 && fetched.ok()) {
    fetched = absl::InternalError(absl::StrCat("writing ", path, ": ", strerror(errno)));
  }
  if (!fetched.ok()) return fetched;
  if (const std::string got = absl::StrCat("sha256:", hash.HexDigest()); got != digest) {
    return absl::InternalError(absl::StrCat("the working directory fetched for job ", job_id,
                                            " hashes to ", got, ", not ", digest,
                                            " (damaged on the way or in the store)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> WorkdirCache::Prepare(const std::string& job_id,
                                                  const std::string& digest,
                                                  std::optional<gid_t> group) {
  if (absl::Status safe = CheckPathComponent("job id", job_id); !safe.ok()) return safe;
  absl::MutexLock lock(&mu_);
  const std::string tree = absl::StrCat(root_, "/", job_id);
  const std::string marker = tree + ".digest";
  if (ReadMarker(marker) == digest) return tree;
  if (mkdir(root_.c_str(), 0711) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", root_, ": ", strerror(errno)));
  }
  if (!swept_) {
    RemoveLeftovers();
    swept_ = true;
  }
  // What an earlier digest or an interrupted unpack left.
  unlink(marker.c_str());
  if (absl::Status gone = RemoveWorkdirTree(tree); !gone.ok()) return gone;
  const std::string archive = tree + ".tar.tmp";
  absl::Status fetched = FetchArchive(job_id, digest, archive);
  absl::StatusOr<UnpackedWorkdir> unpacked =
      fetched.ok() ? UnpackWorkdir(archive, tree, group) : absl::StatusOr<UnpackedWorkdir>(fetched);
  unlink(archive.c_str());
  if (!unpacked.ok()) {
    if (unpacked.status().code() == absl::StatusCode::kInvalidArgument) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the working directory ", digest, " cannot be unpacked: ", unpacked.status().message()));
    }
    return unpacked.status();
  }
  {
    std::ofstream out(marker, std::ios::trunc);
    out << digest;
    if (!out.flush()) {
      return absl::InternalError(absl::StrCat("cannot write ", marker, ": ", strerror(errno)));
    }
  }
  spdlog::info("job {}: working directory {} unpacked into {} ({} files, {} bytes)", job_id, digest,
               tree, unpacked->files, unpacked->bytes);
  return tree;
}

void WorkdirCache::RemoveLeftovers() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp-") == std::string::npos && !absl::EndsWith(name, ".tar.tmp")) continue;
    absl::Status gone = entry.is_directory(ec) && !entry.is_symlink(ec)
                            ? RemoveWorkdirTree(entry.path().string())
                            : (unlink(entry.path().c_str()) == 0 || errno == ENOENT
                                   ? absl::OkStatus()
                                   : absl::InternalError(strerror(errno)));
    if (!gone.ok()) spdlog::warn("cannot remove {}: {}", entry.path().string(), gone.ToString());
  }
}

absl::Status WorkdirCache::Forget(const std::string& job_id) {
  if (absl::Status safe = CheckPathComponent("job id", job_id); !safe.ok()) return safe;
  absl::MutexLock lock(&mu_);
  const std::string tree = absl::StrCat(root_, "/", job_id);
  unlink((tree + ".digest").c_str());
  unlink((tree + ".tar.tmp").c_str());
  return RemoveWorkdirTree(tree);
}

}  // namespace trainctl::agent
