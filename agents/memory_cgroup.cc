#include "agents/memory_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace trainctl::agent {
namespace {

// How long Remove() waits for exiting tasks to leave a cgroup.
constexpr absl::Duration kRemoveTimeout = absl::Seconds(2);
// The limit Detect() tries on its probe cgroup.
constexpr int64_t kProbeLimitBytes = 64 << 20;

// One mount of a cgroup file system.
struct CgroupMount {
  MemoryCgroups::Version version;
  // Where it is mounted, and which cgroup that directory is ("/" unless bind-mounted).
  std::string mount_point;
  std::string root;
};

std::string ErrnoText(int error) { return std::strerror(error); }

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(path, ": ", ErrnoText(errno)));
  std::string text;
  char buffer[4096];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      return absl::UnavailableError(absl::StrCat(path, ": ", ErrnoText(error)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

// cgroup files take one value per write(), and report a rejected value as its error.
absl::Status WriteSmallFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(path, ": ", ErrnoText(errno)));
  ssize_t n = write(fd, text.data(), text.size());
  int error = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return absl::UnavailableError(
        absl::StrCat("write ", text, " to ", path, ": ", n < 0 ? ErrnoText(error) : "short"));
  }
  return absl::OkStatus();
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// mkdir that accepts an existing directory.
absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("mkdir ", path, ": ", ErrnoText(errno)));
}

// The cgroup mounts of /proc/self/mountinfo: "id parent dev root mount-point options... -
// fstype source super-options". v1 mounts count only with the memory controller.
std::vector<CgroupMount> FindMounts(const std::string& mountinfo) {
  std::vector<CgroupMount> mounts;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> halves = absl::StrSplit(line, " - ");
    if (halves.size() != 2) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(halves[0], ' ');
    std::vector<absl::string_view> tail = absl::StrSplit(halves[1], ' ');
    if (fields.size() < 5 || tail.size() < 3) continue;
    CgroupMount mount{MemoryCgroups::Version::kV2, std::string(fields[4]), std::string(fields[3])};
    if (tail[0] == "cgroup2") {
      mounts.push_back(std::move(mount));
    } else if (tail[0] == "cgroup") {
      std::vector<absl::string_view> options = absl::StrSplit(tail[2], ',');
      if (std::find(options.begin(), options.end(), "memory") == options.end()) continue;
      mount.version = MemoryCgroups::Version::kV1;
      mounts.push_back(std::move(mount));
    }
  }
  return mounts;
}

// The agent's own cgroup in `version`'s hierarchy, from /proc/self/cgroup
// ("hierarchy-id:controllers:path"; v2's line is "0::path"); "" when not listed.
std::string OwnCgroup(const std::string& self_cgroup, MemoryCgroups::Version version) {
  for (absl::string_view line : absl::StrSplit(self_cgroup, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    std::vector<absl::string_view> controllers = absl::StrSplit(parts[1], ',');
    bool match =
        version == MemoryCgroups::Version::kV2
            ? parts[0] == "0" && parts[1].empty()
            : std::find(controllers.begin(), controllers.end(), "memory") != controllers.end();
    if (match) return std::string(parts[2]);
  }
  return "";
}

// Candidate parents under `mount`, best first: the agent's own cgroup, then the mount's root.
std::vector<std::string> CandidateParents(const CgroupMount& mount, const std::string& own) {
  std::vector<std::string> out;
  std::string relative;
  if (mount.root == "/") {
    relative = own;
  } else if (own == mount.root || absl::StartsWith(own, mount.root + "/")) {
    relative = own.substr(mount.root.size());
  }
  while (!relative.empty() && relative.back() == '/') relative.pop_back();
  if (!relative.empty()) out.push_back(mount.mount_point + relative);
  out.push_back(mount.mount_point);
  return out;
}

bool ListsMemory(const std::string& controllers_file) {
  absl::StatusOr<std::string> text = ReadSmallFile(controllers_file);
  if (!text.ok()) return false;
  std::vector<absl::string_view> names = absl::StrSplit(*text, absl::ByAnyChar(" \n"));
  return std::find(names.begin(), names.end(), "memory") != names.end();
}

// Lets the children of `dir` have the memory controller (v2).
absl::Status EnableMemoryForChildren(const std::string& dir) {
  absl::StatusOr<std::string> enabled = ReadSmallFile(dir + "/cgroup.subtree_control");
  if (enabled.ok()) {
    std::vector<absl::string_view> names = absl::StrSplit(*enabled, absl::ByAnyChar(" \n"));
    if (std::find(names.begin(), names.end(), "memory") != names.end()) return absl::OkStatus();
  }
  return WriteSmallFile(dir + "/cgroup.subtree_control", "+memory");
}

// Writes the limit files of a run's cgroup `dir`.
absl::Status WriteLimit(MemoryCgroups::Version version, const std::string& dir,
                        int64_t limit_bytes) {
  const std::string limit = absl::StrCat(limit_bytes);
  if (version == MemoryCgroups::Version::kV2) {
    if (absl::Status status = WriteSmallFile(dir + "/memory.max", limit); !status.ok()) {
      return status;
    }
    if (Exists(dir + "/memory.swap.max")) return WriteSmallFile(dir + "/memory.swap.max", "0");
    return absl::OkStatus();
  }
  // memsw (memory + swap) must not go below the memory limit, so it is written second; a
  // leftover larger memsw limit of the parent is no obstacle.
  if (absl::Status status = WriteSmallFile(dir + "/memory.limit_in_bytes", limit); !status.ok()) {
    return status;
  }
  if (Exists(dir + "/memory.memsw.limit_in_bytes")) {
    return WriteSmallFile(dir + "/memory.memsw.limit_in_bytes", limit);
  }
  return absl::OkStatus();
}

// Sets up trainctl-agent-<node> under `parent` and proves a child of it takes a limit. Returns
// the directory.
absl::StatusOr<std::string> TryParent(MemoryCgroups::Version version, const std::string& parent,
                                      const std::string& node) {
  const bool v2 = version == MemoryCgroups::Version::kV2;
  if (v2 && !ListsMemory(parent + "/cgroup.controllers")) {
    return absl::UnavailableError(absl::StrCat(parent, " has no memory controller"));
  }
  const std::string dir = absl::StrCat(parent, "/trainctl-agent-", node);
  const bool existed = Exists(dir);
  if (absl::Status status = MakeDir(dir); !status.ok()) return status;
  absl::Status status = absl::OkStatus();
  if (v2) {
    // A v2 cgroup with processes cannot enable controllers for its children (EBUSY), so the
    // agent's own cgroup often fails here and the mount's root is tried next.
    status = EnableMemoryForChildren(parent);
    if (status.ok()) status = EnableMemoryForChildren(dir);
  }
  if (status.ok()) {
    const std::string probe = dir + "/probe";
    rmdir(probe.c_str());
    status = MakeDir(probe);
    if (status.ok()) {
      status = WriteLimit(version, probe, kProbeLimitBytes);
      rmdir(probe.c_str());
    }
  }
  if (!status.ok()) {
    if (!existed) rmdir(dir.c_str());
    return status;
  }
  return dir;
}

}  // namespace

std::optional<int64_t> ParseOomKillCount(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(absl::StripAsciiWhitespace(line), ' ', absl::SkipEmpty());
    if (fields.size() != 2 || fields[0] != "oom_kill") continue;
    int64_t count = 0;
    if (!absl::SimpleAtoi(fields[1], &count) || count < 0) return std::nullopt;
    return count;
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<MemoryCgroups>> MemoryCgroups::Detect(const std::string& node,
                                                                     const ProcFiles& files) {
  if (node.empty() || node.find('/') != std::string::npos || node == "." || node == "..") {
    return absl::UnavailableError(absl::StrCat("node name '", node, "' is no directory name"));
  }
  absl::StatusOr<std::string> mountinfo = ReadSmallFile(files.mountinfo);
  if (!mountinfo.ok()) return mountinfo.status();
  absl::StatusOr<std::string> self_cgroup = ReadSmallFile(files.self_cgroup);
  if (!self_cgroup.ok()) return self_cgroup.status();
  std::vector<CgroupMount> mounts = FindMounts(*mountinfo);
  std::stable_partition(mounts.begin(), mounts.end(),
                        [](const CgroupMount& m) { return m.version == Version::kV2; });
  std::vector<std::string> reasons;
  for (const CgroupMount& mount : mounts) {
    for (const std::string& parent :
         CandidateParents(mount, OwnCgroup(*self_cgroup, mount.version))) {
      absl::StatusOr<std::string> dir = TryParent(mount.version, parent, node);
      if (dir.ok()) return std::unique_ptr<MemoryCgroups>(new MemoryCgroups(mount.version, *dir));
      reasons.emplace_back(dir.status().message());
    }
  }
  if (reasons.empty()) return absl::UnavailableError("no memory cgroup controller is mounted");
  return absl::UnavailableError(absl::StrJoin(reasons, "; "));
}

std::string MemoryCgroups::Describe() const {
  return absl::StrCat("cgroup ", version_ == Version::kV2 ? "v2" : "v1", " at ", parent_dir_);
}

std::string MemoryCgroups::RunDir(const std::string& run_id) const {
  std::string name = run_id;
  std::replace(name.begin(), name.end(), '/', '_');
  if (name.empty() || name == "." || name == "..") name = absl::StrCat("run", name);
  return absl::StrCat(parent_dir_, "/", name);
}

absl::StatusOr<std::string> MemoryCgroups::Create(const std::string& run_id,
                                                  int64_t limit_bytes) const {
  const std::string dir = RunDir(run_id);
  rmdir(dir.c_str());  // A leftover from an earlier agent would carry its OOM count.
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("mkdir ", dir, ": ", ErrnoText(errno)));
  }
  if (absl::Status status = WriteLimit(version_, dir, limit_bytes); !status.ok()) {
    rmdir(dir.c_str());
    return status;
  }
  return dir + "/cgroup.procs";
}

bool MemoryCgroups::SawOomKill(const std::string& run_id, bool died_by_sigkill) const {
  const std::string dir = RunDir(run_id);
  absl::StatusOr<std::string> text =
      ReadSmallFile(dir + (version_ == Version::kV2 ? "/memory.events" : "/memory.oom_control"));
  if (text.ok()) {
    if (std::optional<int64_t> count = ParseOomKillCount(*text)) return *count > 0;
  }
  if (version_ == Version::kV2 || !died_by_sigkill) return false;
  absl::StatusOr<std::string> failcnt = ReadSmallFile(dir + "/memory.failcnt");
  int64_t count = 0;
  return failcnt.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*failcnt), &count) &&
         count > 0;
}

absl::Status MemoryCgroups::Remove(const std::string& run_id) const {
  const std::string dir = RunDir(run_id);
  const absl::Time deadline = absl::Now() + kRemoveTimeout;
  while (true) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return absl::OkStatus();
    const int error = errno;
    if (error != EBUSY || absl::Now() >= deadline) {
      return absl::UnavailableError(absl::StrCat("rmdir ", dir, ": ", ErrnoText(error)));
    }
    // Processes that left the run's process group are still the run's.
    if (absl::StatusOr<std::string> procs = ReadSmallFile(dir + "/cgroup.procs"); procs.ok()) {
      for (absl::string_view line : absl::StrSplit(*procs, '\n', absl::SkipEmpty())) {
        int pid = 0;
        if (absl::SimpleAtoi(line, &pid) && pid > 0) kill(pid, SIGKILL);
      }
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

}  // namespace trainctl::agent
