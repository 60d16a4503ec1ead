// The cgroup file system as the agent's cgroup parts (run_cgroup.h) see it: reading and writing
// control files, finding the mounted hierarchies (/proc/self/mountinfo) and this process's place
// in each (/proc/self/cgroup), and removing a cgroup whose tasks are still exiting.
//
// cgroup v1 mounts each controller (or a few together, "cpu,cpuacct") as a hierarchy of its own;
// cgroup v2 has one hierarchy whose controllers are listed in each directory's
// cgroup.controllers. Both may be mounted at once ("hybrid"), v2 then often with no controllers.
//
//   for (const CgroupMount& mount : ParseCgroupMounts(mountinfo)) {
//     for (const std::string& parent : CandidateParents(mount, OwnCgroup(self_cgroup, mount))) ...
//   }
//
// Thread-safe: the functions keep no state.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace trainctl::agent {

enum class CgroupVersion { kV1, kV2 };

// One mount of a cgroup file system.
struct CgroupMount {
  CgroupVersion version = CgroupVersion::kV2;
  // Where it is mounted, and which cgroup that directory is ("/" unless bind-mounted).
  std::string mount_point;
  std::string root;
  // v1: the hierarchy's controllers, from the mount options ("cpu", "cpuacct"); named
  // hierarchies ("name=systemd") have none. v2: empty (see cgroup.controllers).
  std::vector<std::string> controllers;
};

// The whole of a control file. UNAVAILABLE naming the path and errno text on failure.
absl::StatusOr<std::string> ReadCgroupFile(const std::string& path);

// Writes `text` with one write(), as cgroup files take one value per write and report a rejected
// value as its error. UNAVAILABLE naming the value, the path and errno text on failure.
absl::Status WriteCgroupFile(const std::string& path, const std::string& text);

// mkdir that accepts an existing directory.
absl::Status MakeCgroupDir(const std::string& path);

// The cgroup mounts of a /proc/self/mountinfo text ("id parent dev root mount-point options... -
// fstype source super-options"), in file order.
std::vector<CgroupMount> ParseCgroupMounts(absl::string_view mountinfo);

// This process's cgroup in `mount`'s hierarchy, from a /proc/self/cgroup text
// ("hierarchy-id:controllers:path"; v2's line is "0::path"); "" when not listed.
std::string OwnCgroup(absl::string_view self_cgroup, const CgroupMount& mount);

// Directories under `mount` to create the agent's cgroups in, best first: the agent's own cgroup
// `own` (a path within the hierarchy), then the mount's root.
std::vector<std::string> CandidateParents(const CgroupMount& mount, const std::string& own);

// Whether `name` is one of the space-separated words of `list` (cgroup.controllers,
// cgroup.subtree_control).
bool ListsWord(absl::string_view list, absl::string_view name);

// Removes the cgroup `dir`, SIGKILLing whatever still runs in it and retrying until `timeout`
// while exiting tasks keep it busy. OK when it does not exist.
absl::Status RemoveCgroupDir(const std::string& dir, absl::Duration timeout);

}  // namespace trainctl::agent
