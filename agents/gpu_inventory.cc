#include "agents/gpu_inventory.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "agents/host_commands.h"
#include "agents/host_resources.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

v1::GpuDevice Unknown(int32_t index) {
  v1::GpuDevice d;
  d.set_index(index);
  d.set_minor(-1);
  d.set_numa_node(-1);
  d.set_nvlink_group(-1);
  return d;
}

// "GPU<N>" -> N.
std::optional<int32_t> GpuColumn(absl::string_view name) {
  int32_t index;
  name = absl::StripAsciiWhitespace(name);
  if (!absl::ConsumePrefix(&name, "GPU") || !absl::SimpleAtoi(name, &index) || index < 0) {
    return std::nullopt;
  }
  return index;
}

// Union-find root of `i` in `parent`.
int32_t Root(std::map<int32_t, int32_t>& parent, int32_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::vector<v1::GpuDevice>> ParseNvidiaSmiQuery(absl::string_view text) {
  std::vector<v1::GpuDevice> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<std::string> fields = absl::StrSplit(line, ',');
    for (std::string& f : fields) absl::StripAsciiWhitespace(&f);
    int32_t index;
    if (fields.size() != 5 || !absl::SimpleAtoi(fields[0], &index) || index < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot read \"", line, "\": expected index, uuid, name, memory.total, pci.bus_id"));
    }
    v1::GpuDevice d = Unknown(index);
    d.set_uuid(fields[1]);
    d.set_model(fields[2]);
    int64_t memory_mb;
    if (absl::SimpleAtoi(fields[3], &memory_mb)) d.set_memory_mb(memory_mb);
    d.set_pci_bus_id(fields[4]);
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(),
            [](const v1::GpuDevice& a, const v1::GpuDevice& b) { return a.index() < b.index(); });
  return out;
}

void ApplyNvidiaTopology(absl::string_view text, std::vector<v1::GpuDevice>* devices) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  if (lines.empty()) return;
  // The header names the columns of every row; a row's first cell is its own name.
  const std::vector<absl::string_view> header = absl::StrSplit(lines[0], '\t');
  int numa_column = -1;
  for (size_t c = 0; c < header.size(); ++c) {
    if (absl::StripAsciiWhitespace(header[c]) == "NUMA Affinity") numa_column = static_cast<int>(c);
  }
  std::map<int32_t, int32_t> parent;
  std::map<int32_t, bool> linked;
  std::map<int32_t, int32_t> numa;
  for (size_t l = 1; l < lines.size(); ++l) {
    const std::vector<absl::string_view> cells = absl::StrSplit(lines[l], '\t');
    std::optional<int32_t> row = cells.empty() ? std::nullopt : GpuColumn(cells[0]);
    if (!row) continue;
    parent.try_emplace(*row, *row);
    for (size_t c = 1; c < cells.size() && c < header.size(); ++c) {
      std::optional<int32_t> peer = GpuColumn(header[c]);
      if (!peer || *peer == *row) continue;
      if (!absl::StartsWith(absl::StripAsciiWhitespace(cells[c]), "NV")) continue;
      parent.try_emplace(*peer, *peer);
      parent[Root(parent, *row)] = Root(parent, *peer);
      linked[*row] = linked[*peer] = true;
    }
    int32_t node;
    if (numa_column > 0 && static_cast<size_t>(numa_column) < cells.size() &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(cells[numa_column]), &node)) {
      numa[*row] = node;
    }
  }
  // Each group is numbered by its lowest index.
  std::map<int32_t, int32_t> lowest;
  for (const auto& [index, unused] : parent) {
    const int32_t root = Root(parent, index);
    auto [it, inserted] = lowest.try_emplace(root, index);
    if (!inserted) it->second = std::min(it->second, index);
  }
  for (v1::GpuDevice& d : *devices) {
    if (linked[d.index()]) d.set_nvlink_group(lowest[Root(parent, d.index())]);
    if (auto it = numa.find(d.index()); it != numa.end()) d.set_numa_node(it->second);
  }
}

int32_t ParseDeviceMinor(absl::string_view information) {
  for (absl::string_view line : absl::StrSplit(information, '\n')) {
    if (!absl::ConsumePrefix(&line, "Device Minor:")) continue;
    int32_t minor;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &minor) && minor >= 0) return minor;
  }
  return -1;
}

std::string ProcBusDir(absl::string_view pci_bus_id) {
  std::string id = absl::AsciiStrToLower(pci_bus_id);
  // The domain has 8 hex digits in nvidia-smi, 4 in /proc: keep "dddd:bb:dd.f".
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id.erase(0, colon - 4);
  return id;
}

std::vector<v1::GpuDevice> SyntheticGpus(int32_t count) {
  std::vector<v1::GpuDevice> out;
  for (int32_t i = 0; i < count; ++i) out.push_back(Unknown(i));
  return out;
}

bool IsSynthetic(const v1::GpuDevice& d) { return d.minor() < 0 && d.uuid().empty(); }

std::vector<v1::GpuDevice> DetectGpus() {
  const std::vector<int32_t> minors = NvidiaDeviceMinors();
  // Only the device nodes: index = minor.
  auto from_device_nodes = [&minors] {
    std::vector<v1::GpuDevice> out;
    for (int32_t minor : minors) {
      v1::GpuDevice d = Unknown(minor);
      d.set_minor(minor);
      out.push_back(std::move(d));
    }
    return out;
  };
  if (!OnPath("nvidia-smi")) return from_device_nodes();
  absl::StatusOr<std::string> query = CommandOutput(kNvidiaSmiQuery);
  absl::StatusOr<std::vector<v1::GpuDevice>> devices =
      query.ok() ? ParseNvidiaSmiQuery(*query) : query.status();
  if (!devices.ok()) {
    spdlog::warn("cannot list the GPUs with nvidia-smi ({}); using /dev/nvidia<N>",
                 devices.status().ToString());
    return from_device_nodes();
  }
  if (absl::StatusOr<std::string> topo = CommandOutput("nvidia-smi topo -m"); topo.ok()) {
    ApplyNvidiaTopology(*topo, &*devices);
  } else {
    spdlog::info("no GPU topology ({}); devices are chosen without it", topo.status().ToString());
  }
  for (v1::GpuDevice& d : *devices) {
    d.set_minor(ParseDeviceMinor(ReadFile(
        absl::StrCat("/proc/driver/nvidia/gpus/", ProcBusDir(d.pci_bus_id()), "/information"))));
    // Without /proc/driver/nvidia, the common case: minor numbers follow the index.
    if (d.minor() < 0 && std::count(minors.begin(), minors.end(), d.index()) > 0) {
      d.set_minor(d.index());
    }
  }
  return *devices;
}

std::string GpuModelLabel(const std::vector<v1::GpuDevice>& devices) {
  if (devices.empty()) return "";
  std::string model = devices[0].model();
  absl::StripAsciiWhitespace(&model);
  std::replace(model.begin(), model.end(), ' ', '-');
  return model;
}

}  // namespace trainctl::agent
