#include "agents/cgroup_fs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/os_error.h"

namespace trainctl::agent {
namespace {

bool Contains(const std::vector<std::string>& names, absl::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// SIGKILLs every process listed in the cgroup's cgroup.procs.
void KillMembers(const std::string& dir) {
  absl::StatusOr<std::string> procs = ReadCgroupFile(dir + "/cgroup.procs");
  if (!procs.ok()) return;
  for (absl::string_view line : absl::StrSplit(*procs, '\n', absl::SkipEmpty())) {
    int pid = 0;
    if (absl::SimpleAtoi(line, &pid) && pid > 0) kill(pid, SIGKILL);
  }
}

}  // namespace

absl::StatusOr<std::string> ReadCgroupFile(const std::string& path) {
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

absl::Status WriteCgroupFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(path, ": ", ErrnoText(errno)));
  ssize_t n = write(fd, text.data(), text.size());
  int error = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return absl::UnavailableError(
        absl::StrCat("write \"", text, "\" to ", path, ": ", n < 0 ? ErrnoText(error) : "short"));
  }
  return absl::OkStatus();
}

absl::Status MakeCgroupDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("mkdir ", path, ": ", ErrnoText(errno)));
}

std::vector<CgroupMount> ParseCgroupMounts(absl::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> halves = absl::StrSplit(line, " - ");
    if (halves.size() != 2) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(halves[0], ' ');
    std::vector<absl::string_view> tail = absl::StrSplit(halves[1], ' ');
    if (fields.size() < 5 || tail.size() < 3) continue;
    CgroupMount mount;
    mount.mount_point = std::string(fields[4]);
    mount.root = std::string(fields[3]);
    if (tail[0] == "cgroup2") {
      mounts.push_back(std::move(mount));
    } else if (tail[0] == "cgroup") {
      mount.version = CgroupVersion::kV1;
      for (absl::string_view option : absl::StrSplit(tail[2], ',')) {
        static constexpr absl::string_view kNotControllers[] = {"rw", "ro", "clone_children",
                                                                "noprefix", "xattr"};
        if (absl::StrContains(option, '=') ||
            std::find(std::begin(kNotControllers), std::end(kNotControllers), option) !=
                std::end(kNotControllers)) {
          continue;
        }
        mount.controllers.emplace_back(option);
      }
      mounts.push_back(std::move(mount));
    }
  }
  return mounts;
}

std::string OwnCgroup(absl::string_view self_cgroup, const CgroupMount& mount) {
  for (absl::string_view line : absl::StrSplit(self_cgroup, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    bool match = false;
    if (mount.version == CgroupVersion::kV2) {
      match = parts[0] == "0" && parts[1].empty();
    } else {
      for (absl::string_view controller : absl::StrSplit(parts[1], ',')) {
        match = match || Contains(mount.controllers, controller);
      }
    }
    if (match) return std::string(parts[2]);
  }
  return "";
}

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

bool ListsWord(absl::string_view list, absl::string_view name) {
  for (absl::string_view word : absl::StrSplit(list, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    if (word == name) return true;
  }
  return false;
}

absl::Status RemoveCgroupDir(const std::string& dir, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return absl::OkStatus();
    const int error = errno;
    if (error != EBUSY || absl::Now() >= deadline) {
      return absl::UnavailableError(absl::StrCat("rmdir ", dir, ": ", ErrnoText(error)));
    }
    // Processes that left the run's process group are still the run's.
    KillMembers(dir);
    absl::SleepFor(absl::Milliseconds(10));
  }
}

}  // namespace trainctl::agent
