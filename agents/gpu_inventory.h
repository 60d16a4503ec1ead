// GpuInventory: the GPUs of this host, one GpuDevice each, for the agent's Register.
//
// NVIDIA only. With nvidia-smi on PATH, each GPU's index, UUID, model, memory and PCI bus id
// come from `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`, its NUMA node and NVLink
// peers from `nvidia-smi topo -m`, and the minor number of its device node /dev/nvidia<minor>
// from /proc/driver/nvidia/gpus/<bus id>/information. Without nvidia-smi, every /dev/nvidia<N>
// is a GPU with index and minor N and nothing else known. `--gpus N` replaces all of this with
// synthetic devices 0..N-1 that have no device node (minor -1), so tests need no GPU.
//
// AMD GPUs (/dev/kfd and /dev/dri/renderD<N>, ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES) are
// not detected yet; docs/users/replica-environment.md, "GPUs a replica owns".
//
//   std::vector<v1::GpuDevice> gpus = DetectGpus();         // [] on a host without GPUs
//   std::string label = GpuModelLabel(gpus);                // "NVIDIA-H100-80GB-HBM3"
//
// Thread-safe: the functions keep no state.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::agent {

// The node label the agent adds for its GPUs' model, unless the operator set it.
inline constexpr char kGpuModelLabel[] = "gpu.model";

// The command whose output ParseNvidiaSmiQuery reads.
inline constexpr char kNvidiaSmiQuery[] =
    "nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id "
    "--format=csv,noheader,nounits";

// Parses kNvidiaSmiQuery's output ("0, GPU-5f3b..., NVIDIA H100 80GB HBM3, 81559,
// 00000000:1B:00.0" per line) into devices with minor, NUMA node and NVLink group unknown (-1),
// ordered by index. INVALID_ARGUMENT naming the first line it cannot read.
absl::StatusOr<std::vector<v1::GpuDevice>> ParseNvidiaSmiQuery(absl::string_view text);

// Reads `nvidia-smi topo -m` into `devices` (by index): numa_node from the "NUMA Affinity"
// column where it is one number, and nvlink_group: GPUs joined by NVLink ("NV<n>" cells),
// directly or through others, share the group numbered by their lowest index; a GPU without an
// NVLink peer keeps -1. Rows or columns it does not understand are skipped.
void ApplyNvidiaTopology(absl::string_view text, std::vector<v1::GpuDevice>* devices);

// The "Device Minor:" of /proc/driver/nvidia/gpus/<bus id>/information's text; -1 when absent.
int32_t ParseDeviceMinor(absl::string_view information);

// The directory name of a PCI bus id under /proc/driver/nvidia/gpus: "00000000:1B:00.0" ->
// "0000:1b:00.0".
std::string ProcBusDir(absl::string_view pci_bus_id);

// `count` synthetic devices 0..count-1 (--gpus N).
std::vector<v1::GpuDevice> SyntheticGpus(int32_t count);

// True for a device of SyntheticGpus: nothing on the host stands behind it.
bool IsSynthetic(const v1::GpuDevice& d);

// Every GPU of this host, as described above. Never fails: what cannot be probed is logged and
// left out or unknown.
std::vector<v1::GpuDevice> DetectGpus();

// The value of the gpu.model label: the model of the first GPU with spaces as '-'
// ("NVIDIA-H100-80GB-HBM3"), or "" when there are none or the model is unknown.
std::string GpuModelLabel(const std::vector<v1::GpuDevice>& devices);

}  // namespace trainctl::agent
