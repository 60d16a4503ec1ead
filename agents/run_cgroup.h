// Per-run cgroups: where the host lets the agent use cgroup controllers, every run gets a cgroup
// of its own in each hierarchy that has one of them, and its process joins all of them before
// exec (SpawnRequest::cgroup_join_paths). What the kernel then enforces (RunCgroupSpec):
//
//   memory   memory.max and memory.swap.max = 0 (v1: memory.limit_in_bytes and
//            memory.memsw.limit_in_bytes) for a run with a memory limit; the kernel's OOM kills
//            in the cgroup are reported as the run's (SawOomKill)
//   cpu      a CFS quota for a run that asks for CPU: v2 cpu.max "<cpu*100000> 100000", v1
//            cpu.cfs_period_us = 100000 and cpu.cfs_quota_us = cpu*100000
//   pids     pids.max, the number of tasks (processes and threads) of the run
//   cpuset   cpuset.cpus as the CPU manager placed the run (cpu_manager.h); v1 also needs
//            cpuset.mems, copied from the agent's directory. A run without cpus joins no v1
//            cpuset hierarchy.
//   devices  the run may not open the character devices 195:<minor> of GPUs that are not its
//            own: v1 writes "c 195:<minor> rwm" to devices.deny; v2 has no such file and gets a
//            BPF device program instead (device_filter.h)
//
// Layout: <parent>/trainctl-agent-<name>/<run id with '/' replaced by '_'> in every hierarchy,
// where <name> is the agent's node and a hash of its work dir (two agents on one host never share
// a directory; a restarted agent finds its own), and <parent> is the agent's own cgroup there when
// it can be written (for v2: when it can also enable the controllers for its children), else the
// hierarchy's root. The (empty) trainctl-agent-<name> directories are kept when the agent ends, for
// its next start.
//
// Detect() takes each controller from cgroup v2 where the v2 hierarchy offers it, else from v1.
// On a hybrid host (v1 controllers and a cgroup2 mount with none) that means devices through v2's
// BPF program and the rest through v1. Detection never fails: a controller that cannot be used
// (not mounted, not root, no BPF, ...) is listed by Unavailable() with the reason, and runs go
// without it. Create() is best effort in the same way: what it could not set up is returned as
// problems, never as a failed launch.
//
//   std::unique_ptr<RunCgroups> cgroups = RunCgroups::Detect("node-1");
//   spdlog::info("run cgroups: {}; not isolated: {}", cgroups->Describe(),
//                cgroups->Unavailable());
//   RunCgroups::Created created = cgroups->Create(run_id, {.memory_limit_bytes = 64 << 20,
//                                                          .cpu = 2, .pids_max = 32768});
//   // The child writes "0" to each of created.join_paths before exec.
//   ...  // after the run was reaped:
//   bool oom = cgroups->SawOomKill(run_id, /*died_by_sigkill=*/true);
//   cgroups->Remove(run_id).IgnoreError();
//
// Thread-safe: constant after Detect(); the methods touch only the run's own directories.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agents/cgroup_fs.h"
#include "agents/run_cgroup_spec.h"

namespace trainctl::agent {

// --pids-max's default: far above what a training process needs, far below the kernel's
// pid_max, so that a fork bomb in one run does not take the node down.
constexpr int64_t kDefaultPidsMax = 32768;

// "memory", "cpu", "pids", "cpuset", "devices".
absl::string_view ControllerName(CgroupController controller);

class RunCgroups {
 public:
  struct Options {
    // Where Detect() looks; tests may point these elsewhere.
    std::string mountinfo = "/proc/self/mountinfo";
    std::string self_cgroup = "/proc/self/cgroup";
    // For tests of one version's code on a hybrid host: use only that version's hierarchies.
    std::optional<CgroupVersion> only_version;
  };

  // Finds a usable hierarchy for each controller, creates the agent's directories for node
  // `node` there and checks that a child of each takes the controller's settings (and, for v2
  // devices, a BPF program). Leaves nothing behind for a controller it cannot use.
  static std::unique_ptr<RunCgroups> Detect(const std::string& node, const Options& options);
  static std::unique_ptr<RunCgroups> Detect(const std::string& node) {
    return Detect(node, Options());
  }

  RunCgroups(const RunCgroups&) = delete;
  RunCgroups& operator=(const RunCgroups&) = delete;
  // Removes the agent's directories that hold no run any more.
  ~RunCgroups();

  bool Has(CgroupController controller) const;
  // The version of the hierarchy `controller` is used in. REQUIRES: Has(controller).
  CgroupVersion VersionOf(CgroupController controller) const;
  // One line for the agent's log: each hierarchy's version, directory and controllers; "none"
  // when no controller is usable.
  std::string Describe() const;
  // The controllers that cannot be used, each with its reason ("pids (...); devices (...)");
  // "" when every one can.
  std::string Unavailable() const;
  // Why `controller` cannot be used; "" when it can.
  std::string UnavailableReason(CgroupController controller) const;
  // The trainctl-agent-<node> directory of every hierarchy in use; each exists.
  std::vector<std::string> AgentDirs() const;

  // The run's directory in `controller`'s hierarchy (which need not exist); "" without it.
  std::string RunDir(CgroupController controller, const std::string& run_id) const;

  struct Created {
    // The file of each directory the run's process writes "0" to, to join it: `tasks` on v1,
    // where the process (single-threaded then) moves its one thread, which spares it the
    // kernel's global threadgroup lock and the RCU grace period that lock waits for when no
    // migration happened in the last moments (8-14 ms); `cgroup.procs` on v2, whose
    // cgroup.threads cannot cross domains.
    std::vector<std::string> join_paths;
    // What could not be set up, one entry each, naming the controller.
    std::vector<std::string> problems;
  };
  // Creates the run's cgroups (replacing empty ones left from before) with `spec`. A directory
  // whose settings failed is still joined, except a v1 cpuset that could not be given CPUs
  // (the kernel refuses tasks there), which is removed again.
  Created Create(const std::string& run_id, const RunCgroupSpec& spec) const;

  // Replaces the cpuset.cpus of the run's cgroup (the kernel moves its tasks). FAILED_PRECONDITION
  // without a cpuset controller; UNAVAILABLE when the write fails.
  absl::Status SetCpus(const std::string& run_id, const std::string& cpus) const;

  // Whether the kernel OOM-killed a process of the run's cgroup. Where the kernel does not count
  // OOM kills (v1 before Linux 4.13), a hit limit (memory.failcnt > 0) together with a run that
  // died by SIGKILL counts as one.
  bool SawOomKill(const std::string& run_id, bool died_by_sigkill) const;

  // Removes the run's cgroups, first SIGKILLing any process still in them; retries for a short
  // while, since exiting tasks hold them. OK when they do not exist.
  absl::Status Remove(const std::string& run_id) const;

 private:
  // One hierarchy in use: its version, the agent's directory in it, and the controllers used.
  struct Hierarchy {
    CgroupVersion version;
    std::string agent_dir;
    std::vector<CgroupController> controllers;
  };

  RunCgroups() = default;
  // The hierarchy `controller` is used in, or null.
  const Hierarchy* Find(CgroupController controller) const;
  // Adds `controller` in `version`'s directory `agent_dir`, sharing a hierarchy already listed.
  void Add(CgroupVersion version, const std::string& agent_dir, CgroupController controller);
  // Creates the run's directory in `hierarchy` and applies `spec` there; false when it is not to
  // be joined.
  bool CreateIn(const Hierarchy& hierarchy, const std::string& dir, const RunCgroupSpec& spec,
                std::vector<std::string>* problems) const;

  // Constant after Detect().
  std::vector<Hierarchy> hierarchies_;
  std::map<CgroupController, std::string> unavailable_;
};

}  // namespace trainctl::agent
