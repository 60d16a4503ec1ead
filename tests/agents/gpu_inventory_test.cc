// The agent's GPU inventory from nvidia-smi's output (as printed on an 8-GPU host with NVLink and
// two NUMA nodes) and /proc/driver/nvidia, with no GPU; and, on a host with NVIDIA GPUs, the real
// inventory and gpu-check item against nvidia-smi.
#include "agents/gpu_inventory.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "agents/host_checks.h"
#include "agents/host_commands.h"

namespace trainctl::agent {
namespace {

TEST_CASE("nvidia-smi's GPU list is read", "[gpu_inventory]") {
  absl::StatusOr<std::vector<v1::GpuDevice>> gpus = ParseNvidiaSmiQuery(
      "1, GPU-bbbb, NVIDIA H100 80GB HBM3, 81559, 00000000:2A:00.0\n"
      "0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559, 00000000:1B:00.0\n");
  REQUIRE(gpus.ok());
  REQUIRE(gpus->size() == 2);
  const v1::GpuDevice& first = (*gpus)[0];
  CHECK(first.index() == 0);
  CHECK(first.uuid() == "GPU-aaaa");
  CHECK(first.model() == "NVIDIA H100 80GB HBM3");
  CHECK(first.memory_mb() == 81559);
  CHECK(first.pci_bus_id() == "00000000:1B:00.0");
  CHECK(first.minor() == -1);
  CHECK(first.numa_node() == -1);
  CHECK(first.nvlink_group() == -1);
  CHECK(GpuModelLabel(*gpus) == "NVIDIA-H100-80GB-HBM3");
  CHECK(ParseNvidiaSmiQuery("")->empty());

  absl::StatusOr<std::vector<v1::GpuDevice>> bad = ParseNvidiaSmiQuery("No devices were found\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "cannot read \"No devices were found\": expected index, uuid, name, memory.total, "
        "pci.bus_id");
}

TEST_CASE("nvidia-smi topo -m gives NUMA nodes and NVLink groups", "[gpu_inventory]") {
  // GPUs 0-1 share NVLink on NUMA node 0; 2-3 share NVLink on node 1; 4 has no NVLink peer.
  const std::string topo =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tNV18\tSYS\tSYS\tSYS\tPXB\t0-23\t0\t\tN/A\n"
      "GPU1\tNV18\t X \tSYS\tSYS\tSYS\tSYS\t0-23\t0\t\tN/A\n"
      "GPU2\tSYS\tSYS\t X \tNV4\tSYS\tSYS\t24-47\t1\t\tN/A\n"
      "GPU3\tSYS\tSYS\tNV4\t X \tSYS\tSYS\t24-47\t1\t\tN/A\n"
      "GPU4\tSYS\tSYS\tSYS\tSYS\t X \tSYS\t24-47\tN/A\t\tN/A\n"
      "NIC0\tPXB\tSYS\tSYS\tSYS\tSYS\t X \n"
      "\n"
      "Legend:\n"
      "  X    = Self\n"
      "  NV#  = Connection traversing a bonded set of # NVLinks\n";
  std::vector<v1::GpuDevice> gpus = SyntheticGpus(5);
  ApplyNvidiaTopology(topo, &gpus);
  CHECK(gpus[0].nvlink_group() == 0);
  CHECK(gpus[1].nvlink_group() == 0);
  CHECK(gpus[2].nvlink_group() == 2);
  CHECK(gpus[3].nvlink_group() == 2);
  CHECK(gpus[4].nvlink_group() == -1);
  CHECK(gpus[0].numa_node() == 0);
  CHECK(gpus[3].numa_node() == 1);
  CHECK(gpus[4].numa_node() == -1);  // "N/A"

  std::vector<v1::GpuDevice> untouched = SyntheticGpus(2);
  ApplyNvidiaTopology("garbage\nmore garbage\n", &untouched);
  CHECK(untouched[1].nvlink_group() == -1);
}

TEST_CASE("a GPU's device minor comes from /proc/driver/nvidia", "[gpu_inventory]") {
  CHECK(ParseDeviceMinor("Model: \t\t NVIDIA H100\nIRQ:   \t\t 150\nDevice Minor: \t 3\n") == 3);
  CHECK(ParseDeviceMinor("Model: x\n") == -1);
  CHECK(ProcBusDir("00000000:1B:00.0") == "0000:1b:00.0");
  CHECK(ProcBusDir("0000:1b:00.0") == "0000:1b:00.0");
}

TEST_CASE("synthetic devices stand in for GPUs under the --gpus flag", "[gpu_inventory]") {
  std::vector<v1::GpuDevice> gpus = SyntheticGpus(3);
  REQUIRE(gpus.size() == 3);
  CHECK(gpus[2].index() == 2);
  CHECK(IsSynthetic(gpus[2]));
  CHECK(GpuModelLabel(gpus).empty());
  CHECK(GpuModelLabel({}).empty());
}

}  // namespace
}  // namespace trainctl::agent

namespace trainctl::agent {
namespace {

// On a host with NVIDIA GPUs (nvidia-smi on PATH), the real inventory and gpu-check item;
// elsewhere the test says so and checks nothing of GPUs.
TEST_CASE("on a host with NVIDIA GPUs the inventory and gpu-check agree with nvidia-smi",
          "[gpu_inventory][real_gpu]") {
  if (!OnPath("nvidia-smi")) {
    WARN("no nvidia-smi on PATH: this host's GPUs are not checked");
    return;
  }
  absl::StatusOr<std::string> listed = CommandOutput("nvidia-smi -L");
  REQUIRE(listed.ok());
  int lines = 0;
  for (char c : *listed) lines += c == '\n';
  std::vector<v1::GpuDevice> gpus = DetectGpus();
  INFO(*listed);
  REQUIRE(static_cast<int>(gpus.size()) == lines);
  for (const v1::GpuDevice& d : gpus) {
    INFO(d.DebugString());
    CHECK(d.uuid().rfind("GPU-", 0) == 0);
    CHECK(d.memory_mb() > 0);
    CHECK_FALSE(d.model().empty());
    CHECK_FALSE(d.pci_bus_id().empty());
    CHECK_FALSE(IsSynthetic(d));
    // Each GPU's device node is found, so that runs can be given it alone.
    REQUIRE(d.minor() >= 0);
    CHECK(access(absl::StrCat("/dev/nvidia", d.minor()).c_str(), F_OK) == 0);
  }
  CHECK_FALSE(GpuModelLabel(gpus).empty());
  RealHostProbe probe;
  absl::StatusOr<std::vector<int32_t>> indices = probe.GpuIndices();
  REQUIRE(indices.ok());
  CHECK(static_cast<int>(indices->size()) == lines);
  const int32_t n = static_cast<int32_t>(gpus.size());
  CheckRequest enough;
  enough.gpus_needed = n;
  CheckResult passed = CheckGpus(enough, probe);
  INFO(passed.message);
  CHECK(passed.passed);
  CheckRequest each;
  for (const v1::GpuDevice& d : gpus) each.gpu_devices.push_back(d.index());
  CHECK(CheckGpus(each, probe).passed);
  CheckRequest too_many;
  too_many.gpus_needed = n + 1;
  CHECK_FALSE(CheckGpus(too_many, probe).passed);
  CheckRequest missing;
  missing.gpu_devices = {n};
  CHECK_FALSE(CheckGpus(missing, probe).passed);
}

}  // namespace
}  // namespace trainctl::agent
