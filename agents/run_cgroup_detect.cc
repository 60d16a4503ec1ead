// RunCgroups::Detect(): which hierarchy each controller is used in, proved by a probe child that
// takes the controller's settings. See run_cgroup.h.
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/cgroup_fs.h"
#include "agents/run_cgroup.h"
#include "agents/run_cgroup_settings.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace {

constexpr CgroupController kControllers[] = {CgroupController::kMemory, CgroupController::kCpu,
                                             CgroupController::kPids, CgroupController::kCpuset,
                                             CgroupController::kDevices};

// Why each controller could not be used where it was tried, in the order tried.
using Reasons = std::map<CgroupController, std::vector<std::string>>;

// What one candidate parent directory of the v2 hierarchy offers.
struct V2Candidate {
  std::string agent_dir;
  bool existed = false;
  std::vector<CgroupController> usable;
};

bool PathExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string AgentDirName(const std::string& node) { return "trainctl-agent-" + node; }

// Proves `controller` usable under `agent_dir` on a throwaway child, which it removes again.
absl::Status Probe(CgroupVersion version, CgroupController controller,
                   const std::string& agent_dir) {
  const std::string probe = agent_dir + "/probe";
  rmdir(probe.c_str());
  TC_RETURN_IF_ERROR(MakeCgroupDir(probe));
  absl::Status status =
      ApplyRunSetting(version, controller, agent_dir, probe, ProbeSpec(version, agent_dir));
  rmdir(probe.c_str());
  return status;
}

// What the v2 hierarchy offers under `parent`: the file controllers it lists and can enable for
// the agent's children, and devices when a BPF device program can be attached.
V2Candidate TryV2Parent(const std::string& parent, const std::string& node, Reasons* reasons) {
  V2Candidate candidate;
  candidate.agent_dir = absl::StrCat(parent, "/", AgentDirName(node));
  auto note = [&](CgroupController controller, absl::string_view why) {
    (*reasons)[controller].push_back(absl::StrCat("cgroup v2 at ", parent, ": ", why));
  };
  absl::StatusOr<std::string> offered = ReadCgroupFile(parent + "/cgroup.controllers");
  candidate.existed = PathExists(candidate.agent_dir);
  absl::Status made = offered.ok() ? MakeCgroupDir(candidate.agent_dir) : offered.status();
  if (!made.ok()) {
    for (CgroupController controller : kControllers) note(controller, made.message());
    return candidate;
  }
  for (CgroupController controller : kControllers) {
    const absl::string_view name = ControllerName(controller);
    absl::Status status = absl::OkStatus();
    if (controller != CgroupController::kDevices) {
      if (!ListsWord(*offered, name)) {
        note(controller, "not offered in cgroup.controllers");
        continue;
      }
      status = EnableForChildren(parent, name);
      if (status.ok()) status = EnableForChildren(candidate.agent_dir, name);
    }
    if (status.ok()) status = Probe(CgroupVersion::kV2, controller, candidate.agent_dir);
    if (status.ok()) {
      candidate.usable.push_back(controller);
    } else {
      note(controller, status.message());
    }
  }
  if (candidate.usable.empty() && !candidate.existed) rmdir(candidate.agent_dir.c_str());
  return candidate;
}

// The best parent of the v2 `mount`: the one where most controllers can be used (the agent's
// own cgroup first on a tie). The agent directories made under the others are removed.
V2Candidate TryV2(const CgroupMount& mount, const std::string& self_cgroup, const std::string& node,
                  Reasons* reasons) {
  std::vector<V2Candidate> candidates;
  for (const std::string& parent : CandidateParents(mount, OwnCgroup(self_cgroup, mount))) {
    candidates.push_back(TryV2Parent(parent, node, reasons));
  }
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (candidates[i].usable.size() > candidates[best].usable.size()) best = i;
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i != best && !candidates[i].existed) rmdir(candidates[i].agent_dir.c_str());
  }
  return candidates[best];
}

// The agent directory for `controller` in the v1 hierarchy `mount`, or "" with the reasons
// noted.
std::string TryV1(const CgroupMount& mount, CgroupController controller,
                  const std::string& self_cgroup, const std::string& node, Reasons* reasons) {
  for (const std::string& parent : CandidateParents(mount, OwnCgroup(self_cgroup, mount))) {
    const std::string agent_dir = absl::StrCat(parent, "/", AgentDirName(node));
    const bool existed = PathExists(agent_dir);
    absl::Status status = MakeCgroupDir(agent_dir);
    if (status.ok() && controller == CgroupController::kCpuset) {
      status = InheritV1Cpuset(parent, agent_dir);
    }
    if (status.ok()) status = Probe(CgroupVersion::kV1, controller, agent_dir);
    if (status.ok()) return agent_dir;
    (*reasons)[controller].push_back(absl::StrCat("cgroup v1: ", status.message()));
    if (!existed) rmdir(agent_dir.c_str());
  }
  return "";
}

bool HasController(const CgroupMount& mount, CgroupController controller) {
  for (const std::string& name : mount.controllers) {
    if (name == ControllerName(controller)) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<RunCgroups> RunCgroups::Detect(const std::string& node, const Options& options) {
  std::unique_ptr<RunCgroups> cgroups(new RunCgroups());
  auto give_up = [&](absl::string_view why) {
    for (CgroupController controller : kControllers) {
      cgroups->unavailable_[controller] = std::string(why);
    }
    return std::move(cgroups);
  };
  if (node.empty() || node.find('/') != std::string::npos || node == "." || node == "..") {
    return give_up(absl::StrCat("node name '", node, "' is no directory name"));
  }
  absl::StatusOr<std::string> mountinfo = ReadCgroupFile(options.mountinfo);
  if (!mountinfo.ok()) return give_up(mountinfo.status().message());
  absl::StatusOr<std::string> self_cgroup = ReadCgroupFile(options.self_cgroup);
  if (!self_cgroup.ok()) return give_up(self_cgroup.status().message());
  const std::vector<CgroupMount> mounts = ParseCgroupMounts(*mountinfo);
  Reasons reasons;
  for (const CgroupMount& mount : mounts) {
    if (mount.version != CgroupVersion::kV2 || options.only_version == CgroupVersion::kV1) continue;
    V2Candidate best = TryV2(mount, *self_cgroup, node, &reasons);
    for (CgroupController controller : best.usable) {
      cgroups->Add(CgroupVersion::kV2, best.agent_dir, controller);
    }
    break;  // There is one v2 hierarchy; a second mount of it is the same.
  }
  for (CgroupController controller : kControllers) {
    for (const CgroupMount& mount : mounts) {
      if (cgroups->Has(controller) || mount.version != CgroupVersion::kV1 ||
          options.only_version == CgroupVersion::kV2 || !HasController(mount, controller)) {
        continue;
      }
      std::string agent_dir = TryV1(mount, controller, *self_cgroup, node, &reasons);
      if (!agent_dir.empty()) cgroups->Add(CgroupVersion::kV1, agent_dir, controller);
    }
  }
  for (CgroupController controller : kControllers) {
    if (cgroups->Has(controller)) continue;
    cgroups->unavailable_[controller] = reasons[controller].empty()
                                            ? "no cgroup hierarchy offers it"
                                            : absl::StrJoin(reasons[controller], "; ");
  }
  return cgroups;
}

}  // namespace trainctl::agent
