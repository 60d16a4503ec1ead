#include "agents/run_isolation.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/cgroup_text.h"
#include "common/run_id.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

bool HasGpuNodes(const std::vector<trainctl::v1::GpuDevice>& inventory) {
  return std::any_of(inventory.begin(), inventory.end(),
                     [](const trainctl::v1::GpuDevice& gpu) { return gpu.minor() >= 0; });
}

// The controllers whose absence matters under `options`, with why they are missing.
// REQUIRES: options.cgroups is set.
std::vector<std::string> MissingControllers(const RunIsolation::Options& options) {
  std::vector<std::string> missing;
  for (CgroupController controller :
       {CgroupController::kMemory, CgroupController::kCpu, CgroupController::kPids,
        CgroupController::kCpuset, CgroupController::kDevices}) {
    if (controller == CgroupController::kPids && options.pids_max <= 0) continue;
    if (controller == CgroupController::kCpuset && options.cpu_policy != CpuPolicy::kStatic) {
      continue;
    }
    if (controller == CgroupController::kDevices && !HasGpuNodes(options.gpu_inventory)) continue;
    const std::string reason = options.cgroups->UnavailableReason(controller);
    if (!reason.empty())
      missing.push_back(absl::StrCat(ControllerName(controller), " (", reason, ")"));
  }
  return missing;
}

}  // namespace

std::vector<int> DeniedGpuMinors(const std::vector<trainctl::v1::GpuDevice>& inventory,
                                 const google::protobuf::RepeatedField<int32_t>& owned) {
  std::set<int> denied;
  for (const trainctl::v1::GpuDevice& gpu : inventory) {
    if (gpu.minor() < 0) continue;
    if (std::find(owned.begin(), owned.end(), gpu.index()) != owned.end()) continue;
    denied.insert(gpu.minor());
  }
  return std::vector<int>(denied.begin(), denied.end());
}

std::set<int> AffinityCpus() {
  std::set<int> cpus;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mask)) cpus.insert(cpu);
  }
  return cpus;
}

RunIsolation::RunIsolation(Options options)
    : options_(std::move(options)), scratch_(options_.scratch) {
  if (options_.cgroups == nullptr) {
    spdlog::debug("run isolation: off; memory limits are watched through resident memory only");
    return;
  }
  spdlog::info("run isolation: per-run cgroups with {}", options_.cgroups->Describe());
  if (options_.cpu_policy == CpuPolicy::kStatic &&
      options_.cgroups->Has(CgroupController::kCpuset)) {
    std::set<int> cpus = options_.cpus.empty() ? AffinityCpus() : options_.cpus;
    if (!cpus.empty()) {
      absl::MutexLock lock(&mu_);
      cpu_manager_.emplace(std::move(cpus), options_.min_shared_cpus);
      spdlog::info(
          "cpu policy static: exclusive CPUs for whole-CPU runs out of {}, {} always shared",
          FormatCpuList(cpu_manager_->cpus()), std::max(options_.min_shared_cpus, 1));
    }
  }
  if (std::string missing = NotIsolated(); !missing.empty()) {
    spdlog::warn("runs are not isolated by: {}", missing);
  }
}

std::string RunIsolation::NotIsolated() const {
  if (options_.cgroups == nullptr) return "anything (no cgroups)";
  std::vector<std::string> missing = MissingControllers(options_);
  bool manager = false;
  {
    absl::MutexLock lock(&mu_);
    manager = cpu_manager_.has_value();
  }
  if (options_.cpu_policy == CpuPolicy::kStatic && !manager &&
      options_.cgroups->Has(CgroupController::kCpuset)) {
    missing.push_back("exclusive CPUs (the agent's CPU affinity cannot be read)");
  }
  return absl::StrJoin(missing, "; ");
}

RunIsolation::Prepared RunIsolation::Prepare(const trainctl::v1::LaunchReplica& launch) {
  Prepared prepared;
  const std::string& run_id = launch.run_id();
  prepared.error = scratch_.CheckCheckpointDir(launch.checkpoint_dir());
  if (!prepared.error.ok()) return prepared;
  absl::StatusOr<std::string> private_tmp = scratch_.Acquire(launch.job_id(), run_id);
  if (!private_tmp.ok()) {
    prepared.error = private_tmp.status();
    return prepared;
  }
  prepared.private_tmp = *std::move(private_tmp);
  if (options_.cgroups == nullptr) return prepared;
  RunCgroupSpec spec;
  spec.memory_limit_bytes = std::max<int64_t>(launch.resources().memory_mb(), 0) << 20;
  spec.cpu = std::max(launch.resources().cpu(), 0.0);
  spec.pids_max = options_.pids_max;
  spec.denied_gpu_minors = DeniedGpuMinors(options_.gpu_inventory, launch.gpu_devices());
  RunCgroups::Created created;
  {
    // Held while the cgroups are made, so that no change of the shared pool can miss them.
    absl::MutexLock lock(&mu_);
    bool exclusive = false;
    spec.cpus = PlaceCpusLocked(run_id, spec.cpu, &exclusive);
    if (exclusive) {
      spec.cpu = 0;
      prepared.exclusive_cpus = spec.cpus;
    }
    created = options_.cgroups->Create(run_id, spec);
    if (cpu_manager_ && !exclusive) shared_runs_.insert(run_id);
  }
  for (const std::string& problem : created.problems) {
    spdlog::warn("run {}: not isolated as asked: {}", run_id, problem);
  }
  prepared.join_paths = std::move(created.join_paths);
  if (options_.cgroups->Has(CgroupController::kMemory)) {
    prepared.memory_events =
        options_.cgroups->RunDir(CgroupController::kMemory, run_id) +
        (options_.cgroups->VersionOf(CgroupController::kMemory) == CgroupVersion::kV2
             ? "/memory.events"
             : "/memory.oom_control");
  }
  return prepared;
}

std::string RunIsolation::PlaceCpusLocked(const std::string& run_id, double cpu, bool* exclusive) {
  *exclusive = false;
  if (!cpu_manager_) return "";
  if (const int count = ExclusiveCpuCount(cpu); count > 0) {
    if (std::optional<std::set<int>> cpus = cpu_manager_->Allocate(run_id, count)) {
      *exclusive = true;
      UpdateSharedRunsLocked();
      return FormatCpuList(*cpus);
    }
    spdlog::warn(
        "run {}: asks for {} exclusive CPUs, but the static CPU policy cannot give it that many "
        "(shared pool {}); it runs in the shared pool",
        run_id, count, FormatCpuList(cpu_manager_->SharedPool()));
  }
  return FormatCpuList(cpu_manager_->SharedPool());
}

void RunIsolation::UpdateSharedRunsLocked() {
  const std::string pool = FormatCpuList(cpu_manager_->SharedPool());
  for (const std::string& run_id : shared_runs_) {
    if (absl::Status status = options_.cgroups->SetCpus(run_id, pool); !status.ok()) {
      spdlog::warn("run {}: cannot move it to the shared CPU pool {}: {}", run_id, pool,
                   std::string(status.message()));
    }
  }
}

void RunIsolation::Adopt(const std::string& run_id, const std::string& exclusive_cpus) {
  absl::MutexLock lock(&mu_);
  if (!cpu_manager_) return;
  absl::StatusOr<std::set<int>> cpus = ParseCpuList(exclusive_cpus);
  if (cpus.ok() && !cpus->empty() && cpu_manager_->Restore(run_id, *cpus)) {
    UpdateSharedRunsLocked();
    return;
  }
  if (!exclusive_cpus.empty()) {
    spdlog::warn("run {}: its exclusive CPUs {} cannot be given back; it joins the shared pool",
                 run_id, exclusive_cpus);
  }
  if (options_.cgroups->VersionOf(CgroupController::kCpuset) == CgroupVersion::kV2 ||
      access(options_.cgroups->RunDir(CgroupController::kCpuset, run_id).c_str(), F_OK) == 0) {
    shared_runs_.insert(run_id);
    UpdateSharedRunsLocked();
  }
}

bool RunIsolation::SawOomKill(const std::string& run_id, bool died_by_sigkill) const {
  return options_.cgroups != nullptr && options_.cgroups->SawOomKill(run_id, died_by_sigkill);
}

void RunIsolation::AdoptRunning(const std::string& run_id) {
  if (std::optional<RunIdParts> parts = SplitRunId(run_id)) scratch_.Adopt(parts->job_id, run_id);
}

void RunIsolation::Release(const std::string& run_id) {
  ReleaseCgroups(run_id);
  // After the cgroups: what was left of the run went with them.
  scratch_.Release(run_id);
}

void RunIsolation::ReleaseCgroups(const std::string& run_id) {
  if (options_.cgroups == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    shared_runs_.erase(run_id);  // Its cpuset is going away: no more updates.
  }
  if (absl::Status status = options_.cgroups->Remove(run_id); !status.ok()) {
    spdlog::warn("run {}: cannot remove its cgroups: {}", run_id, std::string(status.message()));
  }
  // Its CPUs are freed only once its processes are gone.
  absl::MutexLock lock(&mu_);
  if (cpu_manager_ && cpu_manager_->Release(run_id)) UpdateSharedRunsLocked();
}

}  // namespace trainctl::agent
