// What RunCgroups writes into one controller's files of one cgroup directory, shared by
// RunCgroups::Create() and Detect()'s probes, which prove a controller usable by applying the
// same settings to a throwaway child. Internal to run_cgroup*.cc; see run_cgroup.h, which uses
// these (the types both speak of are in run_cgroup_spec.h, so nothing here needs run_cgroup.h).
//
//   TC_RETURN_IF_ERROR(ApplyRunSetting(CgroupVersion::kV1, CgroupController::kCpu, agent_dir,
//                                      run_dir, spec));
//
// Thread-safe: the functions keep no state.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agents/cgroup_fs.h"
#include "agents/run_cgroup_spec.h"
#include "common/status_macros.h"

namespace trainctl::agent {

// Writes the part of `spec` that belongs to `controller` into the run's directory `dir`, a child
// of `agent_dir`. A zero or empty field writes nothing, except that a v1 cpuset always gets
// cpuset.mems and cpuset.cpus (the agent's, when spec.cpus is empty), without which it takes no
// tasks. UNAVAILABLE naming the file on failure.
absl::Status ApplyRunSetting(CgroupVersion version, CgroupController controller,
                             const std::string& agent_dir, const std::string& dir,
                             const RunCgroupSpec& spec);

// The settings a probe child of `agent_dir` gets: a value for every controller.
RunCgroupSpec ProbeSpec(CgroupVersion version, const std::string& agent_dir);

// v1 cpuset: gives `dir` the cpuset.cpus and cpuset.mems of its parent `parent` where it has
// none yet (a new v1 cpuset starts empty and takes no tasks).
absl::Status InheritV1Cpuset(const std::string& parent, const std::string& dir);

// v2: lets the children of `dir` use `controller` (cgroup.subtree_control). Fails (EBUSY) for a
// cgroup other than the root that has processes of its own.
absl::Status EnableForChildren(const std::string& dir, absl::string_view controller);

}  // namespace trainctl::agent
