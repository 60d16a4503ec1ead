#include "agents/job_scratch.h"

#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/flag_values.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

// How many times a directory is unmounted before it is given up on (mounts stacked on it).
constexpr int kMaxStackedMounts = 16;

std::string MountErrno() { return std::strerror(errno); }

// Whether `path` is the root of a mount: its device differs from its parent's.
bool IsMountPoint(const std::string& path) {
  struct stat st, parent;
  return stat(path.c_str(), &st) == 0 && stat((path + "/..").c_str(), &parent) == 0 &&
         (st.st_dev != parent.st_dev || st.st_ino == parent.st_ino);
}

// Unmounts whatever is mounted on `path` (lazily: what still holds a file there keeps it).
void UnmountAll(const std::string& path) {
  for (int i = 0; i < kMaxStackedMounts && umount2(path.c_str(), MNT_DETACH) == 0; ++i) {
  }
}

// The names in `dir` but "." and ".."; empty when it cannot be read.
std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

// Creates `path` with exactly `mode` (whatever the umask); EEXIST is fine.
absl::Status MakeDirWithMode(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("mkdir ", path, ": ", MountErrno()));
  }
  if (chmod(path.c_str(), mode) != 0) {
    return absl::InternalError(absl::StrCat("chmod ", path, ": ", MountErrno()));
  }
  return absl::OkStatus();
}

absl::Status MountTmpfs(const std::string& source, const std::string& dir,
                        const std::string& options) {
  if (mount(source.c_str(), dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot mount a tmpfs (", options, ") at ", dir, ": ", MountErrno()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ParseJobTmpfsSize(absl::string_view flag, absl::string_view text) {
  auto bad = [&] {
    return BadFlagValue(flag,
                        "0 (the host's /tmp and /dev/shm), a percentage of the host's memory "
                        "such as 50%, or a size such as 64g",
                        text);
  };
  if (text == "0") return std::string();
  if (!text.empty() && text.back() == '%') {
    int percent;
    if (!absl::SimpleAtoi(text.substr(0, text.size() - 1), &percent) || percent < 1 ||
        percent > 100) {
      return bad();
    }
    return absl::StrCat(percent, "%");
  }
  uint64_t multiplier = 1;
  absl::string_view digits = text;
  if (!text.empty() && absl::ascii_isalpha(text.back())) {
    const std::string units = "kmgt";
    const size_t unit = units.find(absl::ascii_tolower(text.back()));
    if (unit == std::string::npos) return bad();
    multiplier = uint64_t{1} << (10 * (unit + 1));
    digits.remove_suffix(1);
  }
  uint64_t number;
  if (digits.empty() || !absl::ascii_isdigit(digits[0]) || !absl::SimpleAtoi(digits, &number) ||
      number == 0 || number > (uint64_t{1} << 62) / multiplier) {
    return bad();
  }
  return absl::StrCat(number * multiplier);
}

std::string UnderPrivateDir(const std::string& path) {
  std::error_code error;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
  if (error) return "";
  for (const char* dir : {"/tmp", "/dev/shm"}) {
    std::filesystem::path private_dir = std::filesystem::weakly_canonical(dir, error);
    if (error) private_dir = dir;
    if (std::mismatch(private_dir.begin(), private_dir.end(), resolved.begin(), resolved.end())
            .first == private_dir.end()) {
      return dir;
    }
  }
  return "";
}

JobScratch::JobScratch(Options options) : options_(std::move(options)) {
  if (options_.size.empty()) {
    off_reason_ = "--job-tmpfs-size is 0";
  } else if (geteuid() != 0) {
    off_reason_ = "the agent is not root, so it cannot mount them";
  } else if (const std::string dir = UnderPrivateDir(options_.work_dir); !dir.empty()) {
    off_reason_ = absl::StrCat("--work-dir ", options_.work_dir, " lies under ", dir);
  } else {
    std::error_code error;
    std::filesystem::create_directories(options_.root, error);
    absl::Status made =
        error ? absl::InternalError(error.message()) : MakeDirWithMode(options_.root, 0700);
    if (made.ok() && !IsMountPoint(options_.root)) {
      // The probe: the mount each job's first run needs.
      absl::MutexLock lock(&mu_);
      made = MountRootLocked();
      if (made.ok()) UnmountAll(options_.root);
    }
    if (!made.ok()) off_reason_ = std::string(made.message());
  }
  if (off_reason_.empty()) {
    spdlog::info(
        "replicas get a private /tmp and /dev/shm per job: a tmpfs (size={}) under {}, shared by "
        "the job's replicas on this host",
        options_.size, options_.root);
  } else if (options_.size.empty()) {
    spdlog::info("replicas share the host's /tmp and /dev/shm ({})", off_reason_);
  } else {
    spdlog::warn(
        "replicas share the host's /tmp and /dev/shm, where replicas of other jobs can read and "
        "replace what a job leaves: {}",
        off_reason_);
  }
}

absl::Status JobScratch::MountRootLocked() {
  if (IsMountPoint(options_.root)) return absl::OkStatus();
  absl::Status mounted = MountTmpfs("trainctl-scratch", options_.root, "mode=0700,size=1m");
  if (mounted.ok() && mount(nullptr, options_.root.c_str(), nullptr, MS_PRIVATE, nullptr) != 0) {
    mounted = absl::InternalError(
        absl::StrCat("cannot make ", options_.root, " private: ", MountErrno()));
    UnmountAll(options_.root);
  }
  return mounted;
}

absl::StatusOr<std::string> JobScratch::Acquire(const std::string& job_id,
                                                const std::string& run_id) {
  if (!off_reason_.empty()) return std::string();
  const std::string dir = absl::StrCat(options_.root, "/", job_id);
  absl::MutexLock lock(&mu_);
  Job& job = jobs_[job_id];
  if (!job.mounted) {
    absl::Status status = MountRootLocked();
    if (status.ok()) status = MakeDirWithMode(dir, 0700);
    if (status.ok()) status = MountTmpfs("trainctl-job", dir, "mode=0700,size=" + options_.size);
    if (status.ok()) status = MakeDirWithMode(dir + "/tmp", 01777);
    if (status.ok()) status = MakeDirWithMode(dir + "/shm", 01777);
    if (!status.ok()) {
      UnmountAll(dir);
      if (job.runs.empty()) RemoveJobLocked(job_id);
      return absl::InternalError(
          absl::StrCat("cannot set up the job's private /tmp and /dev/shm: ", status.message()));
    }
    job.mounted = true;
  }
  job.runs.insert(run_id);
  run_jobs_[run_id] = job_id;
  return dir;
}

absl::Status JobScratch::CheckCheckpointDir(const std::string& checkpoint_dir) const {
  if (!off_reason_.empty() || checkpoint_dir.empty()) return absl::OkStatus();
  const std::string dir = UnderPrivateDir(checkpoint_dir);
  if (dir.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "checkpoint dir ", checkpoint_dir, " lies under ", dir,
      ", which each job has to itself on this node and loses when it ends here "
      "(trainctl-agent --job-tmpfs-size): choose a checkpoint directory outside /tmp and "
      "/dev/shm"));
}

void JobScratch::Adopt(const std::string& job_id, const std::string& run_id) {
  if (!off_reason_.empty()) return;
  const std::string dir = absl::StrCat(options_.root, "/", job_id);
  absl::MutexLock lock(&mu_);
  Job& job = jobs_[job_id];
  if (!job.mounted) {
    job.mounted = IsMountPoint(dir);
    if (!job.mounted) {
      spdlog::warn(
          "run {}: its job's private /tmp and /dev/shm are no longer mounted at {}; the job's next "
          "replicas here get new ones",
          run_id, dir);
    }
  }
  job.runs.insert(run_id);
  run_jobs_[run_id] = job_id;
}

void JobScratch::Release(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  auto it = run_jobs_.find(run_id);
  if (it == run_jobs_.end()) return;
  const std::string job_id = it->second;
  run_jobs_.erase(it);
  Job& job = jobs_[job_id];
  job.runs.erase(run_id);
  if (job.runs.empty()) RemoveJobLocked(job_id);
}

void JobScratch::RemoveJobLocked(const std::string& job_id) {
  const std::string dir = absl::StrCat(options_.root, "/", job_id);
  UnmountAll(dir);
  if (rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    spdlog::warn("cannot remove the job directory {}: {}", dir, MountErrno());
  }
  jobs_.erase(job_id);
  UnmountRootIfIdleLocked();
}

void JobScratch::UnmountRootIfIdleLocked() {
  if (jobs_.empty() && DirEntries(options_.root).empty() && IsMountPoint(options_.root)) {
    UnmountAll(options_.root);
  }
}

void JobScratch::RemoveUnused() {
  if (!off_reason_.empty()) return;
  absl::MutexLock lock(&mu_);
  for (const std::string& name : DirEntries(options_.root)) {
    if (jobs_.count(name) > 0) continue;
    spdlog::info("removing the private /tmp and /dev/shm of job {}: no replica of it runs here",
                 name);
    RemoveJobLocked(name);
  }
  UnmountRootIfIdleLocked();
}

std::vector<std::string> JobScratch::Jobs() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& entry : jobs_) out.push_back(entry.first);
  return out;
}

}  // namespace trainctl::agent
