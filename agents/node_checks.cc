#include "agents/node_checks.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/check_program.h"
#include "common/index_list.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

std::string Disk(const DiskThreshold& disk) {
  return absl::StrCat(disk.path, " > ", disk.min_free_gb, " GB");
}

std::string OrNone(const std::string& path) { return path.empty() ? "none" : path; }

std::string OrOff(absl::Duration d) {
  return d == absl::ZeroDuration() ? "off" : absl::FormatDuration(d);
}

}  // namespace

trainctl::v1::CheckResult ToProto(const CheckResult& result) {
  trainctl::v1::CheckResult out;
  out.set_item(result.item);
  out.set_passed(result.passed);
  out.set_measured(result.measured);
  out.set_threshold(result.threshold);
  out.set_message(result.message);
  return out;
}

trainctl::v1::CheckRun MakeCheckRun(const std::string& phase,
                                    const std::vector<CheckResult>& results, int64_t time_ms) {
  trainctl::v1::CheckRun run;
  run.set_phase(phase);
  *run.mutable_time() = MsToTimestamp(time_ms);
  bool passed = true;
  for (const CheckResult& result : results) {
    *run.add_items() = ToProto(result);
    passed = passed && result.passed;
  }
  run.set_passed(passed);
  return run;
}

std::string DescribeFailures(const trainctl::v1::CheckRun& run) {
  std::vector<std::string> failures;
  for (const trainctl::v1::CheckResult& item : run.items()) {
    if (!item.passed())
      failures.push_back(absl::StrCat("item ", item.item(), " failed: ", item.message()));
  }
  return absl::StrJoin(failures, "; ");
}

std::string PreflightError(const std::string& node, const trainctl::v1::CheckRun& run) {
  return absl::StrCat("preflight failed on ", node, ": ", DescribeFailures(run));
}

bool IsAbnormalExit(const trainctl::v1::ReplicaExited& exited) {
  if (exited.stopped_by_request() || exited.node_shutdown() || exited.fenced() ||
      exited.launch_failed()) {
    return false;
  }
  return (exited.has_exit_code() && exited.exit_code() != 0) || exited.has_signal();
}

std::map<std::string, std::string> DescribeCheckConfig(const NodeCheckConfig& config) {
  const HostCheckConfig& host = config.host;
  std::map<std::string, std::string> out;
  out["disk-size root"] = Disk(host.root);
  out["disk-size shm"] = Disk(host.shm);
  out["disk-size cache"] = Disk(host.cache);
  out["ulimit"] =
      host.infiniband
          ? absl::StrCat("memlock > ", host.min_memlock_kib, " KiB, nofile > ", host.min_nofile,
                         ", stack > ", host.min_stack_kib, " KiB, nproc > ", host.min_nproc)
          : "off (no --infiniband)";
  out["gpu-check"] = config.synthetic_gpus ? "off (synthetic GPUs from --gpus)"
                     : config.gpu_devices.empty()
                         ? "off (no GPUs)"
                         : absl::StrCat("GPUs ", FormatIndexList(config.gpu_devices));
  out["preflight"] = config.preflight ? "on" : "off";
  out["health-check-interval"] = OrOff(config.health_check_interval);
  out["health-check-program"] = OrNone(config.health_check_program);
  out["health-check-timeout"] = absl::FormatDuration(config.health_check_timeout);
  out["startup-script"] = OrNone(config.startup_script);
  out["startup-script-timeout"] = absl::FormatDuration(config.startup_script_timeout);
  out["container-runtime"] =
      config.container_runtime
          ? absl::StrCat("runc ", config.container_runtime->runc, ", image dir ",
                         config.container_runtime->image_dir, ", timeout ",
                         absl::FormatDuration(config.container_runtime->timeout))
          : "off (the node runs no images)";
  return out;
}

NodeChecker::NodeChecker(NodeCheckConfig config, std::string node, std::string work_dir,
                         std::shared_ptr<const HostProbe> probe)
    : config_(config),
      node_(std::move(node)),
      work_dir_(std::move(work_dir)),
      probe_(probe != nullptr ? std::move(probe) : std::make_shared<RealHostProbe>()),
      host_(std::move(config.host)) {}

trainctl::v1::CheckRun NodeChecker::RunPreflight(const trainctl::v1::LaunchReplica& launch) const {
  CheckRequest request;
  request.hostnames.assign(launch.hostnames().begin(), launch.hostnames().end());
  if (!config_.synthetic_gpus) {
    // The GPUs it will get; a scheduler that sends none is checked by count.
    request.gpu_devices.assign(launch.gpu_devices().begin(), launch.gpu_devices().end());
    if (request.gpu_devices.empty()) request.gpus_needed = launch.resources().gpus();
  }
  std::vector<CheckResult> results = RunChecks(host(), *probe_, request);
  if (config_.container_runtime && !launch.image().empty()) {
    results.push_back(CheckContainerRuntime(*config_.container_runtime));
  }
  trainctl::v1::CheckRun run = MakeCheckRun("preflight", results, WallNowMs());
  run.set_job_id(launch.job_id());
  run.set_run_id(launch.run_id());
  Log(absl::StrCat("preflight check for ", launch.run_id(), ": "), results);
  return run;
}

trainctl::v1::CheckRun NodeChecker::ForReplica(trainctl::v1::CheckRun shared,
                                               const trainctl::v1::LaunchReplica& launch) const {
  shared.set_run_id(launch.run_id());
  // Checked again for this launch: its GPUs, and the container runtime the run for a launch
  // without an image did not check.
  std::vector<CheckResult> again;
  if (!config_.synthetic_gpus && !launch.gpu_devices().empty()) {
    CheckRequest request;
    request.gpu_devices.assign(launch.gpu_devices().begin(), launch.gpu_devices().end());
    again.push_back(CheckGpus(request, *probe_));
  }
  if (config_.container_runtime && !launch.image().empty() &&
      std::none_of(shared.items().begin(), shared.items().end(),
                   [](const trainctl::v1::CheckResult& item) {
                     return item.item() == kContainerRuntimeItem;
                   })) {
    again.push_back(CheckContainerRuntime(*config_.container_runtime));
    *shared.add_items() = ToProto(again.back());
  }
  if (again.empty()) return shared;
  bool passed = true;
  std::vector<CheckResult> failed;
  for (const CheckResult& result : again) {
    if (!result.passed) failed.push_back(result);
  }
  for (trainctl::v1::CheckResult& item : *shared.mutable_items()) {
    for (const CheckResult& result : again) {
      if (item.item() == result.item) item = ToProto(result);
    }
    passed = passed && item.passed();
  }
  shared.set_passed(passed);
  if (!failed.empty()) Log(absl::StrCat("preflight check for ", launch.run_id(), ": "), failed);
  return shared;
}

trainctl::v1::CheckRun NodeChecker::RunHealthChecks(const std::string& phase,
                                                    const Cancelled& cancelled) const {
  CheckRequest request;
  if (!config_.synthetic_gpus) request.gpu_devices = config_.gpu_devices;
  std::vector<CheckResult> results = RunChecks(host(), *probe_, request);
  if (config_.container_runtime) {
    results.push_back(CheckContainerRuntime(*config_.container_runtime));
  }
  if (!config_.health_check_program.empty()) {
    results.push_back(RunProgramItem("health-program", config_.health_check_program,
                                     config_.health_check_timeout, cancelled));
  }
  trainctl::v1::CheckRun run = MakeCheckRun(phase, results, WallNowMs());
  Log(absl::StrCat(phase, " check: "), results);
  return run;
}

std::optional<trainctl::v1::CheckRun> NodeChecker::RunStartupScript(
    const Cancelled& cancelled) const {
  if (config_.startup_script.empty()) return std::nullopt;
  std::vector<CheckResult> results = {RunProgramItem("startup-script", config_.startup_script,
                                                     config_.startup_script_timeout, cancelled)};
  trainctl::v1::CheckRun run = MakeCheckRun("startup", results, WallNowMs());
  Log("startup: ", results);
  return run;
}

void NodeChecker::SetHost(HostCheckConfig host) {
  absl::MutexLock lock(&host_mu_);
  host_ = std::move(host);
}

HostCheckConfig NodeChecker::host() const {
  absl::MutexLock lock(&host_mu_);
  return host_;
}

CheckResult NodeChecker::RunProgramItem(const std::string& item, const std::string& path,
                                        absl::Duration timeout, const Cancelled& cancelled) const {
  ProgramRequest request;
  request.path = path;
  request.env = {{"TRAINCTL_NODE", node_}, {"TRAINCTL_WORK_DIR", work_dir_}};
  request.working_dir = work_dir_;
  request.timeout = timeout;
  request.cancelled = cancelled;
  absl::MutexLock lock(&program_mu_);
  return ProgramCheckResult(item, request, RunProgram(request));
}

void NodeChecker::Log(const std::string& context, const std::vector<CheckResult>& results) const {
  LogCheckResults(results, context);
  int failed = 0;
  for (const CheckResult& result : results) failed += result.passed ? 0 : 1;
  if (failed == 0) {
    spdlog::info("{}all {} items passed", context, results.size());
  } else {
    spdlog::warn("{}{} of {} items failed", context, failed, results.size());
  }
}

std::optional<trainctl::v1::CheckRun> PreflightCache::Find(const std::string& job_id,
                                                           int32_t attempt) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(Key(job_id, attempt));
  if (it == runs_.end()) return std::nullopt;
  return it->second;
}

void PreflightCache::Insert(const std::string& job_id, int32_t attempt,
                            trainctl::v1::CheckRun run) {
  absl::MutexLock lock(&mu_);
  Key key(job_id, attempt);
  if (runs_.insert_or_assign(key, std::move(run)).second) order_.push_back(key);
  while (order_.size() > capacity_) {
    runs_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace trainctl::agent
