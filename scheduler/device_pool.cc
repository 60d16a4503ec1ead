#include "scheduler/device_pool.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"

namespace trainctl::sched {
namespace {

// A topology level: the group a device belongs to at that level, or nullopt when unknown.
using GroupKey = std::function<std::optional<int64_t>(const v1::GpuDevice&)>;

std::optional<int64_t> NvlinkAndNuma(const v1::GpuDevice& d) {
  if (d.nvlink_group() < 0 || d.numa_node() < 0) return std::nullopt;
  return int64_t{d.nvlink_group()} << 32 | d.numa_node();
}
std::optional<int64_t> Nvlink(const v1::GpuDevice& d) {
  if (d.nvlink_group() < 0) return std::nullopt;
  return d.nvlink_group();
}
std::optional<int64_t> Numa(const v1::GpuDevice& d) {
  if (d.numa_node() < 0) return std::nullopt;
  return d.numa_node();
}
std::optional<int64_t> Anywhere(const v1::GpuDevice&) { return 0; }

// The `count` sorted indices of `indices` (sorted) with the smallest span, lowest first.
std::vector<int32_t> TightestRun(const std::vector<int32_t>& indices, int32_t count) {
  size_t best = 0;
  for (size_t i = 1; i + count <= indices.size(); ++i) {
    if (indices[i + count - 1] - indices[i] < indices[best + count - 1] - indices[best]) best = i;
  }
  return {indices.begin() + best, indices.begin() + best + count};
}

}  // namespace

std::vector<int32_t> ChooseDevices(const std::vector<v1::GpuDevice>& free, int32_t count) {
  if (count <= 0) return {};
  const GroupKey levels[] = {NvlinkAndNuma, Nvlink, Numa, Anywhere};
  for (const GroupKey& key : levels) {
    std::map<int64_t, std::vector<int32_t>> groups;
    for (const v1::GpuDevice& d : free) {
      if (std::optional<int64_t> k = key(d)) groups[*k].push_back(d.index());
    }
    const std::vector<int32_t>* best = nullptr;
    for (auto& [k, indices] : groups) {
      std::sort(indices.begin(), indices.end());
      if (static_cast<int32_t>(indices.size()) < count) continue;
      if (best == nullptr || indices.size() < best->size() ||
          (indices.size() == best->size() && indices.front() < best->front())) {
        best = &indices;
      }
    }
    if (best != nullptr) return TightestRun(*best, count);
  }
  return {};  // fewer free than count: a broken REQUIRES
}

std::vector<v1::GpuDevice> SyntheticDevices(int32_t count) {
  std::vector<v1::GpuDevice> out;
  for (int32_t i = 0; i < count; ++i) {
    v1::GpuDevice& d = out.emplace_back();
    d.set_index(i);
    d.set_minor(-1);
    d.set_numa_node(-1);
    d.set_nvlink_group(-1);
  }
  return out;
}

void DevicePool::SetDevices(const std::vector<v1::GpuDevice>& devices) {
  std::vector<v1::GpuDevice> next = devices;
  std::sort(next.begin(), next.end(),
            [](const v1::GpuDevice& a, const v1::GpuDevice& b) { return a.index() < b.index(); });
  next.erase(std::unique(next.begin(), next.end(),
                         [](const v1::GpuDevice& a, const v1::GpuDevice& b) {
                           return a.index() == b.index();
                         }),
             next.end());
  for (v1::GpuDevice& d : next) {
    const v1::GpuDevice* old = Find(d.index());
    d.set_holder(old == nullptr ? "" : old->holder());
    d.set_run_id(old == nullptr ? "" : old->run_id());
  }
  devices_ = std::move(next);
}

const v1::GpuDevice* DevicePool::Find(int32_t index) const {
  auto it = std::lower_bound(devices_.begin(), devices_.end(), index,
                             [](const v1::GpuDevice& d, int32_t i) { return d.index() < i; });
  return it != devices_.end() && it->index() == index ? &*it : nullptr;
}

v1::GpuDevice* DevicePool::FindMutable(int32_t index) {
  return const_cast<v1::GpuDevice*>(static_cast<const DevicePool*>(this)->Find(index));
}

bool DevicePool::InUse(int32_t index) const {
  const v1::GpuDevice* d = Find(index);
  return d != nullptr && !d->holder().empty();
}

int32_t DevicePool::used() const {
  return static_cast<int32_t>(
      std::count_if(devices_.begin(), devices_.end(),
                    [](const v1::GpuDevice& d) { return !d.holder().empty(); }));
}

std::vector<int32_t> DevicePool::FreeIndices() const {
  std::vector<int32_t> out;
  for (const v1::GpuDevice& d : devices_) {
    if (d.holder().empty()) out.push_back(d.index());
  }
  return out;
}

std::optional<std::vector<int32_t>> DevicePool::Allocate(int32_t count, const std::string& holder) {
  std::vector<v1::GpuDevice> free;
  for (const v1::GpuDevice& d : devices_) {
    if (d.holder().empty()) free.push_back(d);
  }
  if (count < 0 || count > static_cast<int32_t>(free.size())) return std::nullopt;
  std::vector<int32_t> chosen = ChooseDevices(free, count);
  for (int32_t index : chosen) FindMutable(index)->set_holder(holder);
  return chosen;
}

bool DevicePool::Reserve(const std::vector<int32_t>& indices, const std::string& holder) {
  for (size_t i = 0; i < indices.size(); ++i) {
    const v1::GpuDevice* d = Find(indices[i]);
    if (d == nullptr || !d->holder().empty()) return false;
    if (std::find(indices.begin(), indices.begin() + i, indices[i]) != indices.begin() + i) {
      return false;
    }
  }
  for (int32_t index : indices) FindMutable(index)->set_holder(holder);
  return true;
}

void DevicePool::Release(const std::vector<int32_t>& indices) {
  for (int32_t index : indices) {
    if (v1::GpuDevice* d = FindMutable(index)) {
      d->clear_holder();
      d->clear_run_id();
    }
  }
}

void DevicePool::SetRun(const std::vector<int32_t>& indices, const std::string& run_id) {
  for (int32_t index : indices) {
    if (v1::GpuDevice* d = FindMutable(index); d != nullptr && !d->holder().empty()) {
      d->set_run_id(run_id);
    }
  }
}

}  // namespace trainctl::sched
