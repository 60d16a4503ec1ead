// RunCgroups: creating, limiting and removing a run's cgroups. Detect() lives in
// run_cgroup_detect.cc. See run_cgroup.h.
#include "agents/run_cgroup.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/cgroup_text.h"
#include "agents/run_cgroup_settings.h"

namespace trainctl::agent {
namespace {

// How long Remove() waits for exiting tasks to leave a cgroup.
constexpr absl::Duration kRemoveTimeout = absl::Seconds(2);

// The directory name of a run: its id with '/' replaced by '_'.
std::string RunDirName(const std::string& run_id) {
  std::string name = run_id;
  std::replace(name.begin(), name.end(), '/', '_');
  if (name.empty() || name == "." || name == "..") name = absl::StrCat("run", name);
  return name;
}

}  // namespace

absl::string_view ControllerName(CgroupController controller) {
  switch (controller) {
    case CgroupController::kMemory:
      return "memory";
    case CgroupController::kCpu:
      return "cpu";
    case CgroupController::kPids:
      return "pids";
    case CgroupController::kCpuset:
      return "cpuset";
    case CgroupController::kDevices:
      return "devices";
  }
  return "unknown";
}

const RunCgroups::Hierarchy* RunCgroups::Find(CgroupController controller) const {
  for (const Hierarchy& hierarchy : hierarchies_) {
    const std::vector<CgroupController>& used = hierarchy.controllers;
    if (std::find(used.begin(), used.end(), controller) != used.end()) return &hierarchy;
  }
  return nullptr;
}

void RunCgroups::Add(CgroupVersion version, const std::string& agent_dir,
                     CgroupController controller) {
  for (Hierarchy& hierarchy : hierarchies_) {
    if (hierarchy.agent_dir == agent_dir) {
      hierarchy.controllers.push_back(controller);
      return;
    }
  }
  hierarchies_.push_back({version, agent_dir, {controller}});
}

RunCgroups::~RunCgroups() {
  // rmdir fails (EBUSY, ENOTEMPTY) for a directory that still holds a run: that one stays.
  for (const std::string& dir : AgentDirs()) rmdir(dir.c_str());
}

bool RunCgroups::Has(CgroupController controller) const { return Find(controller) != nullptr; }

CgroupVersion RunCgroups::VersionOf(CgroupController controller) const {
  return Find(controller)->version;
}

std::string RunCgroups::Describe() const {
  std::vector<std::string> parts;
  for (const Hierarchy& hierarchy : hierarchies_) {
    std::vector<std::string> names;
    for (CgroupController controller : hierarchy.controllers) {
      names.emplace_back(ControllerName(controller));
      if (controller == CgroupController::kDevices && hierarchy.version == CgroupVersion::kV2) {
        names.back() += " (BPF)";
      }
    }
    parts.push_back(absl::StrCat(absl::StrJoin(names, ", "), ": cgroup ",
                                 hierarchy.version == CgroupVersion::kV2 ? "v2" : "v1", " at ",
                                 hierarchy.agent_dir));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, "; ");
}

std::string RunCgroups::Unavailable() const {
  std::vector<std::string> parts;
  for (const auto& [controller, reason] : unavailable_) {
    parts.push_back(absl::StrCat(ControllerName(controller), " (", reason, ")"));
  }
  return absl::StrJoin(parts, "; ");
}

std::string RunCgroups::UnavailableReason(CgroupController controller) const {
  auto it = unavailable_.find(controller);
  return it == unavailable_.end() ? "" : it->second;
}

std::vector<std::string> RunCgroups::AgentDirs() const {
  std::vector<std::string> dirs;
  for (const Hierarchy& hierarchy : hierarchies_) dirs.push_back(hierarchy.agent_dir);
  return dirs;
}

std::string RunCgroups::RunDir(CgroupController controller, const std::string& run_id) const {
  const Hierarchy* hierarchy = Find(controller);
  if (hierarchy == nullptr) return "";
  return absl::StrCat(hierarchy->agent_dir, "/", RunDirName(run_id));
}

RunCgroups::Created RunCgroups::Create(const std::string& run_id, const RunCgroupSpec& spec) const {
  Created created;
  for (const Hierarchy& hierarchy : hierarchies_) {
    const bool only_cpuset =
        hierarchy.controllers.size() == 1 && hierarchy.controllers[0] == CgroupController::kCpuset;
    if (hierarchy.version == CgroupVersion::kV1 && only_cpuset && spec.cpus.empty()) continue;
    // A hierarchy that is only there to deny GPUs has nothing to do for a run that may open
    // every device node: a cgroup less to create, join and remove per run.
    const bool only_devices =
        hierarchy.controllers.size() == 1 && hierarchy.controllers[0] == CgroupController::kDevices;
    if (only_devices && spec.denied_gpu_minors.empty()) continue;
    const std::string dir = absl::StrCat(hierarchy.agent_dir, "/", RunDirName(run_id));
    if (CreateIn(hierarchy, dir, spec, &created.problems)) {
      const bool v1 = hierarchy.version == CgroupVersion::kV1;
      created.join_paths.push_back(dir + (v1 ? "/tasks" : "/cgroup.procs"));
    }
  }
  return created;
}

bool RunCgroups::CreateIn(const Hierarchy& hierarchy, const std::string& dir,
                          const RunCgroupSpec& spec, std::vector<std::string>* problems) const {
  rmdir(dir.c_str());  // A leftover from an earlier agent would carry its counters.
  if (absl::Status status = MakeCgroupDir(dir); !status.ok()) {
    for (CgroupController controller : hierarchy.controllers) {
      problems->push_back(absl::StrCat(ControllerName(controller), ": ", status.message()));
    }
    return false;
  }
  for (CgroupController controller : hierarchy.controllers) {
    absl::Status status =
        ApplyRunSetting(hierarchy.version, controller, hierarchy.agent_dir, dir, spec);
    if (status.ok()) continue;
    problems->push_back(absl::StrCat(ControllerName(controller), ": ", status.message()));
    if (controller == CgroupController::kCpuset && hierarchy.version == CgroupVersion::kV1) {
      rmdir(dir.c_str());
      return false;
    }
  }
  return true;
}

absl::Status RunCgroups::SetCpus(const std::string& run_id, const std::string& cpus) const {
  const std::string dir = RunDir(CgroupController::kCpuset, run_id);
  if (dir.empty()) return absl::FailedPreconditionError("no cpuset cgroup controller in use");
  return WriteCgroupFile(dir + "/cpuset.cpus", cpus);
}

bool RunCgroups::SawOomKill(const std::string& run_id, bool died_by_sigkill) const {
  const Hierarchy* hierarchy = Find(CgroupController::kMemory);
  if (hierarchy == nullptr) return false;
  const bool v2 = hierarchy->version == CgroupVersion::kV2;
  const std::string dir = RunDir(CgroupController::kMemory, run_id);
  absl::StatusOr<std::string> text =
      ReadCgroupFile(dir + (v2 ? "/memory.events" : "/memory.oom_control"));
  if (text.ok()) {
    if (std::optional<int64_t> count = ParseOomKillCount(*text)) return *count > 0;
  }
  if (v2 || !died_by_sigkill) return false;
  absl::StatusOr<std::string> failcnt = ReadCgroupFile(dir + "/memory.failcnt");
  int64_t count = 0;
  return failcnt.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*failcnt), &count) &&
         count > 0;
}

absl::Status RunCgroups::Remove(const std::string& run_id) const {
  std::vector<std::string> errors;
  for (const Hierarchy& hierarchy : hierarchies_) {
    const std::string dir = absl::StrCat(hierarchy.agent_dir, "/", RunDirName(run_id));
    if (absl::Status status = RemoveCgroupDir(dir, kRemoveTimeout); !status.ok()) {
      errors.emplace_back(status.message());
    }
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(errors, "; "));
}

}  // namespace trainctl::agent
