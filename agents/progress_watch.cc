#include "agents/progress_watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

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

ProgressFileContent ParseProgressFile(const std::string& text) {
  ProgressFileContent out;
  google::protobuf::Struct doc;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos ||
      !google::protobuf::util::JsonStringToMessage(text, &doc).ok()) {
    return out;
  }
  const auto& fields = doc.fields();
  if (auto it = fields.find("step"); it != fields.end() && it->second.has_number_value()) {
    const double step = it->second.number_value();
    if (step >= 0 && step < 9e18 && std::floor(step) == step) out.step = static_cast<int64_t>(step);
  }
  if (auto it = fields.find("checkpoint"); it != fields.end() && it->second.has_bool_value()) {
    out.checkpoint = it->second.bool_value();
  }
  return out;
}

std::string ReadProgressFile(const std::string& path) {
  // The replica owns the file's directory: no link is followed, and a FIFO there does not block.
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st;
  std::string text;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char buf[kMaxProgressFileBytes];
    size_t got = 0;
    while (got < sizeof(buf)) {
      ssize_t n = read(fd, buf + got, sizeof(buf) - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.assign(buf, got);
  }
  close(fd);
  return text;
}

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
    if (file_ms > target.since_ms) {
      // A write after the last sign: what it says counts once.
      const ProgressFileContent content = ParseProgressFile(ReadProgressFile(target.progress_file));
      progress.set_step(content.step);
      progress.set_checkpoint(content.checkpoint);
    }
  }
  return out;
}

}  // namespace trainctl::agent
