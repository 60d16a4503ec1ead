// NodeBook (node_book.h): what placed replicas hold on each node, its ports and GPUs, and the
// index of free room placement reads.
#include "scheduler/node_book.h"

#include <utility>

#include "scheduler/node_health.h"

namespace trainctl::sched {

void NodeBook::Forget(const std::string& node) {
  usage_.erase(node);
  ports_.erase(node);
  devices_.erase(node);
  NodesChanged();
}

// --- What replicas hold ------------------------------------------------------------------------

void NodeBook::Hold(const std::string& node, const Res& need) {
  UsageChanged(node);
  NodeUsage& u = usage_[node];
  u.used += need;
  u.replicas++;
}

void NodeBook::Release(const std::string& node, const Res& need) {
  auto it = usage_.find(node);
  if (it == usage_.end()) return;
  UsageChanged(node);
  it->second.used -= need;
  if (--it->second.replicas <= 0) usage_.erase(it);
}

// --- Ports -------------------------------------------------------------------------------------

PortPool& NodeBook::PortPoolOf(const std::string& node) {
  return ports_.try_emplace(node, ports_range_).first->second;
}

std::optional<int32_t> NodeBook::AllocatePort(const std::string& node) {
  UsageChanged(node);
  return PortPoolOf(node).Allocate();
}

bool NodeBook::ReservePort(const std::string& node, int32_t port) {
  UsageChanged(node);
  return PortPoolOf(node).Reserve(port);
}

bool NodeBook::RestorePort(const std::string& node, int32_t port) {
  UsageChanged(node);
  return PortPoolOf(node).Restore(port);
}

void NodeBook::ReleasePort(const std::string& node, int32_t port) {
  auto it = ports_.find(node);
  if (it == ports_.end()) return;
  UsageChanged(node);
  it->second.Release(port);
}

const PortPool* NodeBook::PortsOf(const std::string& node) const {
  auto it = ports_.find(node);
  return it == ports_.end() ? nullptr : &it->second;
}

int32_t NodeBook::FreePorts(const std::string& node) const {
  const PortPool* pool = PortsOf(node);
  return pool == nullptr ? ports_range_.size() : pool->free();
}

// --- Devices -----------------------------------------------------------------------------------

void NodeBook::LoadDevices(const Node& node) {
  devices_[node.name].SetDevices({node.status.gpu_devices.begin(), node.status.gpu_devices.end()});
}

std::optional<std::vector<int32_t>> NodeBook::AllocateDevices(const std::string& node,
                                                              int32_t count,
                                                              const std::string& holder) {
  auto it = devices_.find(node);
  if (it == devices_.end()) return std::nullopt;
  UsageChanged(node);
  return it->second.Allocate(count, holder);
}

bool NodeBook::ReserveDevices(const std::string& node, const std::vector<int32_t>& indices,
                              const std::string& holder) {
  auto it = devices_.find(node);
  if (it == devices_.end()) return false;
  UsageChanged(node);
  return it->second.Reserve(indices, holder);
}

void NodeBook::ReleaseDevices(const std::string& node, const std::vector<int32_t>& indices) {
  auto it = devices_.find(node);
  if (it == devices_.end()) return;
  UsageChanged(node);
  it->second.Release(indices);
}

void NodeBook::SetDeviceRun(const std::string& node, const std::vector<int32_t>& indices,
                            const std::string& run_id) {
  auto it = devices_.find(node);
  if (it != devices_.end()) it->second.SetRun(indices, run_id);
}

const DevicePool* NodeBook::DevicesOf(const std::string& node) const {
  auto it = devices_.find(node);
  return it == devices_.end() ? nullptr : &it->second;
}

// --- Reads -------------------------------------------------------------------------------------

NodeBook::NodeUsage NodeBook::UsageOf(const std::string& name) const {
  auto it = usage_.find(name);
  return it == usage_.end() ? NodeUsage{} : it->second;
}

namespace {

// A node's labels for placement (node selection, topology); nullptr when it has none.
std::shared_ptr<const std::map<std::string, std::string>> LabelsOf(const Node& node) {
  if (node.labels.empty()) return nullptr;
  return std::make_shared<const std::map<std::string, std::string>>(node.labels);
}

}  // namespace

NodeFree NodeBook::FreeOf(const Node& node) const {
  Res f = node.allocatable;
  f -= UsageOf(node.name).used;
  const DevicePool* devices = DevicesOf(node.name);
  return {node.name, f, FreePorts(node.name),
          devices == nullptr ? std::vector<int32_t>() : devices->FreeIndices(), LabelsOf(node)};
}

FreeIndex& NodeBook::CurrentIndex() const {
  if (index_stale_ || index_ == nullptr) {
    std::vector<NodeFree> free;
    for (const auto& [name, node] : *nodes_) {
      if (Schedulable(node)) free.push_back(FreeOf(node));
    }
    index_ = std::make_unique<FreeIndex>(std::move(free));
    index_stale_ = false;
  } else {
    const std::vector<int> touched = index_->TakeTouched();
    std::set<int> refresh(touched.begin(), touched.end());
    for (const std::string& name : index_dirty_) {
      if (const int i = index_->IndexOf(name); i >= 0) refresh.insert(i);
    }
    for (int i : refresh) index_->Reset(i, FreeOf(nodes_->at(index_->nodes()[i].name)));
  }
  index_dirty_.clear();
  return *index_;
}

bool NodeBook::HasRoom(const std::string& name, const ReplicaDemand& demand) const {
  auto it = nodes_->find(name);
  if (it == nodes_->end()) return false;
  const Node* node = &it->second;
  Res free = node->allocatable;
  free -= UsageOf(name).used;
  return free.Fits(demand.need) && FreePorts(name) >= demand.ports;
}

std::vector<NodeFree> NodeBook::IdleNodes() const {
  std::vector<NodeFree> idle;
  for (const auto& [name, node] : *nodes_) {
    if (Schedulable(node)) {
      idle.push_back({name, node.allocatable, ports_range_.size(), {}, LabelsOf(node)});
    }
  }
  return idle;
}

}  // namespace trainctl::sched
