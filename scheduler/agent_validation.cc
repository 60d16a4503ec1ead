#include "scheduler/agent_validation.h"

#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace trainctl::sched {
namespace {

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("register.", path, " ", what));
}

absl::Status CheckString(const std::string& path, const std::string& value,
                         size_t max = kMaxAgentString) {
  if (value.size() > max) {
    return Invalid(path, absl::StrCat("must be at most ", max, " bytes, got ", value.size()));
  }
  if (absl::StrContains(value, '\0')) return Invalid(path, "must not contain NUL bytes");
  return absl::OkStatus();
}

absl::Status CheckResources(const std::string& path, const v1::NodeResources& r) {
  if (!std::isfinite(r.cpu()) || r.cpu() < 0 || r.cpu() > kMaxNodeCpu) {
    return Invalid(path + ".cpu",
                   absl::StrCat("must be a finite number 0..", kMaxNodeCpu, ", got ", r.cpu()));
  }
  if (r.memory_mb() < 0 || r.memory_mb() > kMaxNodeMemoryMb) {
    return Invalid(path + ".memoryMb",
                   absl::StrCat("must be 0..", kMaxNodeMemoryMb, " (1 PiB), got ", r.memory_mb()));
  }
  if (r.gpus() < 0 || r.gpus() > kMaxNodeGpus) {
    return Invalid(path + ".gpus", absl::StrCat("must be 0..", kMaxNodeGpus, ", got ", r.gpus()));
  }
  return absl::OkStatus();
}

absl::Status CheckGpus(const v1::Register& reg) {
  // Every GPU the node offers is a device the scheduler can hand out by index; an agent given
  // only a count (--gpus N) lists synthetic ones (minor -1).
  if (reg.gpu_devices_size() != reg.capacity().gpus()) {
    return Invalid(
        "gpuDevices",
        absl::StrCat("lists ", reg.gpu_devices_size(), " GPUs but capacity.gpus is ",
                     reg.capacity().gpus(),
                     "; an agent lists every GPU it offers (synthetic ones with minor -1 "
                     "for trainctl-agent --gpus N)"));
  }
  std::set<int32_t> seen;
  for (int i = 0; i < reg.gpu_devices_size(); ++i) {
    const v1::GpuDevice& d = reg.gpu_devices(i);
    const std::string path = absl::StrCat("gpuDevices[", i, "]");
    if (d.index() < 0 || d.index() >= kMaxNodeGpus || !seen.insert(d.index()).second) {
      return Invalid(path + ".index", absl::StrCat("must be a distinct index 0..", kMaxNodeGpus - 1,
                                                   ", got ", d.index()));
    }
    if (d.memory_mb() < 0 || d.memory_mb() > kMaxNodeMemoryMb) {
      return Invalid(path + ".memoryMb",
                     absl::StrCat("must be 0..", kMaxNodeMemoryMb, ", got ", d.memory_mb()));
    }
    TC_RETURN_IF_ERROR(CheckString(path + ".uuid", d.uuid(), 128));
    TC_RETURN_IF_ERROR(CheckString(path + ".model", d.model(), 128));
    TC_RETURN_IF_ERROR(CheckString(path + ".pciBusId", d.pci_bus_id(), 64));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRegister(const v1::Register& reg) {
  if (!IsDnsLabel(reg.node(), 63)) {
    return Invalid("node", absl::StrCat("must be 1..63 characters of a-z, 0-9 and '-', got \"",
                                        reg.node().substr(0, 80), "\""));
  }
  TC_RETURN_IF_ERROR(CheckString("address", reg.address(), 253));
  TC_RETURN_IF_ERROR(CheckResources("capacity", reg.capacity()));
  TC_RETURN_IF_ERROR(CheckResources("allocatable", reg.allocatable()));
  const v1::NodeResources& cap = reg.capacity();
  const v1::NodeResources& alloc = reg.allocatable();
  if (alloc.cpu() > cap.cpu() || alloc.memory_mb() > cap.memory_mb() || alloc.gpus() > cap.gpus()) {
    return Invalid("allocatable", "must not exceed capacity");
  }
  TC_RETURN_IF_ERROR(CheckGpus(reg));
  if (reg.labels_size() > kMaxNodeLabels) {
    return Invalid("labels", absl::StrCat("holds at most ", kMaxNodeLabels, " labels, got ",
                                          reg.labels_size()));
  }
  for (const auto& [key, value] : reg.labels()) {
    TC_RETURN_IF_ERROR(CheckString(absl::StrCat("labels[\"", key.substr(0, 64), "\"]"), key, 63));
    TC_RETURN_IF_ERROR(CheckString(absl::StrCat("labels[\"", key, "\"]"), value, 256));
  }
  if (reg.runs_size() > kMaxKnownRuns) {
    return Invalid("runs",
                   absl::StrCat("holds at most ", kMaxKnownRuns, " runs, got ", reg.runs_size()));
  }
  for (int i = 0; i < reg.runs_size(); ++i) {
    TC_RETURN_IF_ERROR(CheckString(absl::StrCat("runs[", i, "].runId"), reg.runs(i).run_id(), 512));
  }
  if (reg.config_size() > kMaxNodeLabels) {
    return Invalid("config", absl::StrCat("holds at most ", kMaxNodeLabels, " entries, got ",
                                          reg.config_size()));
  }
  for (const auto& [key, value] : reg.config()) {
    TC_RETURN_IF_ERROR(CheckString(absl::StrCat("config[\"", key.substr(0, 64), "\"]"), key, 128));
    TC_RETURN_IF_ERROR(CheckString(absl::StrCat("config[\"", key, "\"]"), value));
  }
  TC_RETURN_IF_ERROR(CheckString("agentVersion", reg.agent_version(), 128));
  TC_RETURN_IF_ERROR(CheckString("agentInstance", reg.agent_instance(), 128));
  return absl::OkStatus();
}

}  // namespace trainctl::sched
