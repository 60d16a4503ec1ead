// RunIsolation is what the launcher asks to fence a run in: it turns a LaunchReplica into the
// run's cgroups (run_cgroup.h), places it on CPUs under --cpu-policy static (cpu_manager.h) and
// keeps the CPU placement of all running runs consistent as runs come and go.
//
// For each run, where the host offers the controller:
//   - memory.max = resources.memory_mb when > 0 (the launcher also watches RSS as a backstop);
//   - a CFS quota of resources.cpu cores when > 0, except for a run with exclusive CPUs, which
//     its cpuset already bounds (a quota on top would only throttle its bursts);
//   - pids.max = Options::pids_max (--pids-max) unless 0;
//   - with CpuPolicy::kStatic: cpuset.cpus = its exclusive CPUs when its cpu request is a whole
//     number that can be granted, else the shared pool. When exclusive CPUs are taken or freed,
//     the cpuset of every shared run is rewritten to the new pool (shrunk before the new
//     exclusive run is created, grown after an exclusive run ended);
//   - the NVIDIA device nodes (char 195:<minor>) of every GPU of Options::gpu_inventory that is
//     not in LaunchReplica.gpu_devices are denied; GPUs with minor < 0 (synthetic) have no node.
//     nvidiactl, nvidia-uvm and the like stay allowed.
// And where Options::scratch allows it (job_scratch.h), its job's private /tmp and /dev/shm.
// Of all this only the private /tmp fails a launch (Prepared::error), since a replica must never
// run on the host's /tmp instead; what else cannot be set up is logged, once per agent start for
// what the host lacks (the constructor) and per run for what failed on it (Prepare()).
//
// After an agent restart, Adopt() recovers each adopted run's exclusive CPUs from its run record
// (RunRecord::exclusive_cpus); its cgroups are still in place and are removed at its end. A run
// that still runs also holds its job's private /tmp again (AdoptRunning()), and
// RemoveUnusedPrivateTmp() then removes those of jobs without one.
//
//   RunIsolation isolation({.cgroups = RunCgroups::Detect(node), .pids_max = 32768,
//                           .cpu_policy = CpuPolicy::kStatic, .gpu_inventory = gpus});
//   RunIsolation::Prepared prepared = isolation.Prepare(launch);
//   request.cgroup_join_paths = prepared.join_paths;  // spawn.h
//   ...  // once it ended:
//   bool oom = isolation.SawOomKill(run_id, died_by_sigkill);
//   isolation.Release(run_id);
//
// Thread-safe: all methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agents/cpu_manager.h"
#include "agents/job_scratch.h"
#include "agents/run_cgroup.h"
#include "google/protobuf/repeated_field.h"
#include "trainctl/v1/agent.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::agent {

// The minors of the GPUs of `inventory` that a run owning the GPU indices `owned` must not open:
// every GPU with a device node (minor >= 0) whose index is not owned. Sorted, without repeats.
std::vector<int> DeniedGpuMinors(const std::vector<trainctl::v1::GpuDevice>& inventory,
                                 const google::protobuf::RepeatedField<int32_t>& owned);

// The CPUs this process may run on (sched_getaffinity); empty where that fails.
std::set<int> AffinityCpus();

class RunIsolation {
 public:
  struct Options {
    // Null: no run gets a cgroup (memory limits are then watched through RSS only).
    std::shared_ptr<const RunCgroups> cgroups;
    // pids.max of every run; 0: no limit.
    int64_t pids_max = kDefaultPidsMax;
    CpuPolicy cpu_policy = CpuPolicy::kNone;
    // kStatic: the CPUs runs are placed on; empty: AffinityCpus().
    std::set<int> cpus;
    // kStatic: how many of the lowest-numbered CPUs are never exclusive (at least 1).
    int min_shared_cpus = 1;
    // The node's GPUs; empty: no device is denied.
    std::vector<trainctl::v1::GpuDevice> gpu_inventory;
    // The jobs' private /tmp and /dev/shm; size "": none.
    JobScratch::Options scratch;
  };

  // Logs what runs will be isolated by and, in one warning, what not.
  explicit RunIsolation(Options options);
  RunIsolation(const RunIsolation&) = delete;
  RunIsolation& operator=(const RunIsolation&) = delete;

  // What the host does not let the agent isolate, with reasons ("" when nothing is missing):
  // only what matters under these options (cpuset only with kStatic, devices only with GPUs
  // that have device nodes, pids only with a limit). Without cgroups: "anything (no cgroups)".
  std::string NotIsolated() const;

  struct Prepared {
    // The join files of the cgroups the run's process is to join before exec (spawn.h).
    std::vector<std::string> join_paths;
    // Its exclusive CPUs as a CPU list ("2-3"); "" when it has none. For its run record.
    std::string exclusive_cpus;
    // Where the kernel counts OOM kills in its memory cgroup (v2 memory.events, v1
    // memory.oom_control: an "oom_kill N" line in both); "" without a memory cgroup.
    std::string memory_events;
    // Its job's directory, whose tmp/ and shm/ are to be its /tmp and /dev/shm (shim_spawn.h);
    // "" for the host's.
    std::string private_tmp;
    // Why the run must not start: its job's private /tmp could not be set up (INTERNAL), or its
    // checkpoint dir lies under /tmp or /dev/shm (INVALID_ARGUMENT). Nothing else is set then;
    // call Release() all the same.
    absl::Status error;
  };
  // Creates the run's cgroups for `launch` (see the file comment). Problems are logged.
  Prepared Prepare(const trainctl::v1::LaunchReplica& launch) ABSL_LOCKS_EXCLUDED(mu_);

  // Takes over a run an earlier agent started, with the exclusive CPUs its record names
  // (`exclusive_cpus`, a CPU list; "" for none). CPUs that cannot be given back (no longer the
  // agent's, or taken) are logged and the run joins the shared pool.
  void Adopt(const std::string& run_id, const std::string& exclusive_cpus) ABSL_LOCKS_EXCLUDED(mu_);
  // An adopted run that still runs holds its job's private /tmp again (JobScratch::Adopt).
  void AdoptRunning(const std::string& run_id);
  // Once every run was adopted: removes the private /tmp of jobs no run holds.
  void RemoveUnusedPrivateTmp() { scratch_.RemoveUnused(); }

  // Whether the kernel OOM-killed a process of the run's memory cgroup (RunCgroups::SawOomKill).
  // REQUIRES: before Release(run_id).
  bool SawOomKill(const std::string& run_id, bool died_by_sigkill) const;

  // The run ended (or never started): removes its cgroups, frees its exclusive CPUs and gives
  // them back to the shared runs, then lets go of its job's private /tmp. A run it does not know
  // is only cleaned up after.
  void Release(const std::string& run_id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The CPU list of the run's cpuset (its exclusive CPUs or the shared pool), "" without a CPU
  // manager; allocates exclusive CPUs for `cpu` when it asks for them.
  std::string PlaceCpusLocked(const std::string& run_id, double cpu, bool* exclusive)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Release()'s cgroups and CPUs.
  void ReleaseCgroups(const std::string& run_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Rewrites the cpuset of every shared run to the current pool.
  void UpdateSharedRunsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const Options options_;
  // Thread-safe itself.
  JobScratch scratch_;

  mutable absl::Mutex mu_;
  // State below is protected by mu_.
  // Set with kStatic where the cpuset controller can be used and the agent has CPUs.
  std::optional<StaticCpuManager> cpu_manager_ ABSL_GUARDED_BY(mu_);
  // Runs in the shared pool whose cpuset follows it.
  std::set<std::string> shared_runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::agent
