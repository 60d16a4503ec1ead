// Memory cgroups for runs with a memory limit: where the host lets the agent use a memory
// controller, each such run gets its own cgroup whose hard limit the kernel enforces, and the
// kernel's OOM kills in it are reported as the run's. Elsewhere the launcher's RSS watch is all
// there is (see launcher.h); it stays on as a backstop in both cases.
//
// Layout: <parent>/trainctl-agent-<node>/<run id with '/' replaced by '_'>, where <parent> is
// the agent's own cgroup when it can be written, else the root of the controller's mount. The
// (empty) trainctl-agent-<node> directory is kept when the agent ends, for its next start.
// cgroup v2 (memory.max, memory.swap.max, memory.events) is preferred over v1
// (memory.limit_in_bytes, memory.memsw.limit_in_bytes, memory.oom_control).
//
//   absl::StatusOr<std::unique_ptr<MemoryCgroups>> cgroups = MemoryCgroups::Detect("node-1");
//   if (cgroups.ok()) {
//     absl::StatusOr<std::string> procs = (*cgroups)->Create(run_id, 64 << 20);
//     // The child writes "0" to *procs before exec (SpawnRequest::cgroup_procs_path).
//     ...  // after the run was reaped:
//     bool oom = (*cgroups)->SawOomKill(run_id, /*died_by_sigkill=*/true);
//     (*cgroups)->Remove(run_id).IgnoreError();
//   }
//
// Thread-safe: constant after Detect(); the methods touch only the run's own directory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl::agent {

// The N of an "oom_kill N" line, as in cgroup v2 memory.events and cgroup v1
// memory.oom_control; nullopt when there is no such line or N is not a number.
std::optional<int64_t> ParseOomKillCount(absl::string_view text);

class MemoryCgroups {
 public:
  enum class Version { kV1, kV2 };

  // Where Detect() looks; tests may point these elsewhere.
  struct ProcFiles {
    std::string mountinfo = "/proc/self/mountinfo";
    std::string self_cgroup = "/proc/self/cgroup";
  };

  // Finds a usable memory controller (v2 first, then v1), creates the agent's parent directory
  // for node `node` under it and checks that a child of it takes a memory limit. Returns
  // UNAVAILABLE with the reason when none can be used.
  static absl::StatusOr<std::unique_ptr<MemoryCgroups>> Detect(const std::string& node,
                                                               const ProcFiles& files);
  static absl::StatusOr<std::unique_ptr<MemoryCgroups>> Detect(const std::string& node) {
    return Detect(node, ProcFiles());
  }

  Version version() const { return version_; }
  // trainctl-agent-<node> under the chosen parent; exists.
  const std::string& parent_dir() const { return parent_dir_; }
  // One line for the agent's log: the version and parent_dir().
  std::string Describe() const;

  // The cgroup directory of `run_id` (which need not exist).
  std::string RunDir(const std::string& run_id) const;

  // Creates the run's cgroup (replacing an empty one left from before) with a hard limit of
  // `limit_bytes` and no swap, and returns the path of its cgroup.procs. On failure nothing
  // is left behind.
  absl::StatusOr<std::string> Create(const std::string& run_id, int64_t limit_bytes) const;

  // Whether the kernel OOM-killed a process of the run's cgroup. Where the kernel does not count
  // OOM kills (v1 before Linux 4.13), a hit limit (memory.failcnt > 0) together with a run that
  // died by SIGKILL counts as one.
  bool SawOomKill(const std::string& run_id, bool died_by_sigkill) const;

  // Removes the run's cgroup, first SIGKILLing any process still in it; retries for a short
  // while, since exiting tasks hold it. OK when it does not exist.
  absl::Status Remove(const std::string& run_id) const;

 private:
  MemoryCgroups(Version version, std::string parent_dir)
      : version_(version), parent_dir_(std::move(parent_dir)) {}

  const Version version_;
  const std::string parent_dir_;
};

}  // namespace trainctl::agent
