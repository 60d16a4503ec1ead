#include "agents/progress_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

namespace trainctl::agent {
namespace {

// Bounds the work of one scan of a large checkpoint tree.
constexpr int kMaxEntries = 4096;

int64_t MtimeMs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

int64_t FileMtimeMs(const std::string& path) {
  struct stat st;
  // A replica owns the file's directory: a link it put there is not followed (its own mtime
  // counts).
  return lstat(path.c_str(), &st) == 0 ? MtimeMs(st) : 0;
}

// Adds the entries of directory `fd` (which it closes) to `newest`, recursing `depth` levels.
void ScanDir(int fd, int depth, int* budget, int64_t* newest) {
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    close(fd);
    return;
  }
  while (struct dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || --*budget < 0) continue;
    struct stat st;
    if (fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    *newest = std::max(*newest, MtimeMs(st));
    if (S_ISDIR(st.st_mode) && depth > 0) {
      int child =
          openat(dirfd(dir), entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child >= 0) ScanDir(child, depth - 1, budget, newest);
    }
  }
  closedir(dir);
}

}  // namespace

int64_t NewestMtimeMs(const std::string& dir, int depth) {
  // Replicas may write where these directories lie: a link there is not followed.
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  int64_t newest = fstat(fd, &st) == 0 ? MtimeMs(st) : 0;
  int budget = kMaxEntries;
  ScanDir(fd, depth - 1, &budget, &newest);
  return newest;
}

std::vector<trainctl::v1::ReplicaProgress> CheckProgress(
    const std::vector<ProgressTarget>& targets) {
  std::map<std::string, int64_t> checkpoint_mtimes;
  std::vector<trainctl::v1::ReplicaProgress> out;
  for (const ProgressTarget& target : targets) {
    int64_t file_ms = FileMtimeMs(target.progress_file);
    int64_t checkpoint_ms = 0;
    if (!target.checkpoint_dir.empty()) {
      auto [it, inserted] = checkpoint_mtimes.emplace(target.checkpoint_dir, 0);
      if (inserted) it->second = NewestMtimeMs(target.checkpoint_dir, 2);
      checkpoint_ms = it->second;
    }
    if (std::max(file_ms, checkpoint_ms) <= target.since_ms) continue;
    trainctl::v1::ReplicaProgress& progress = out.emplace_back();
    progress.set_run_id(target.run_id);
    progress.set_time_ms(std::max(file_ms, checkpoint_ms));
    progress.set_source(file_ms >= checkpoint_ms ? "progress-file" : "checkpoint");
  }
  return out;
}

}  // namespace trainctl::agent
