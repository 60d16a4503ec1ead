// JobLifecycle: the GPUs of each replica (scheduler/device_pool.h). A replica holds its devices in
// its node's pool exactly while it holds resources there, as many as its pool's resources.gpus.
// It remembers them after it stops, so an in-place restart (of one replica or of its gang) takes
// the same ones back and a restarted process finds its GPUs where its checkpoint expects them.
// Only when another replica took one of them meanwhile does it get others. A replica that leaves
// its node forgets them, and gets devices on the next as it starts holding resources there.
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "scheduler/job_lifecycle.h"

namespace trainctl::sched {
namespace {

std::string HolderOf(const Job& job, const Replica& r) { return absl::StrCat(job.id, "/", r.name); }

}  // namespace

void JobLifecycle::HoldDevices(const Job& job, Replica* r) {
  if (r->need.gpus <= 0 || r->node.empty()) {
    r->gpu_devices.clear();
    return;
  }
  const std::string holder = HolderOf(job, *r);
  if (static_cast<int64_t>(r->gpu_devices.size()) == r->need.gpus &&
      nodes_->ReserveDevices(r->node, r->gpu_devices, holder)) {
    return;
  }
  // The node's device count covers every replica holding resources there (placement counted its
  // GPUs), so this fails only for a node whose inventory shrank under running replicas.
  r->gpu_devices = nodes_->AllocateDevices(r->node, static_cast<int32_t>(r->need.gpus), holder)
                       .value_or(std::vector<int32_t>());
}

void JobLifecycle::ReleaseDevices(const Replica& r) {
  if (!r.gpu_devices.empty()) nodes_->ReleaseDevices(r.node, r.gpu_devices);
}

absl::Status JobLifecycle::CheckDevices() const {
  // Each node's pool holds exactly the devices of the replicas holding resources there, each for
  // one replica, and every such replica holds as many as it needs.
  std::map<std::string, std::map<int32_t, std::string>> held;
  for (const auto& [id, job] : jobs_->all()) {
    for (const Replica& r : job.replicas) {
      if (!HoldsResources(r.state)) continue;
      if (static_cast<int64_t>(r.gpu_devices.size()) != r.need.gpus) {
        return absl::InternalError(absl::StrCat(id, "/", r.name, " holds ", r.gpu_devices.size(),
                                                " GPUs, needs ", r.need.gpus));
      }
      for (int32_t index : r.gpu_devices) {
        auto [it, inserted] = held[r.node].insert({index, HolderOf(job, r)});
        if (!inserted) {
          return absl::InternalError(absl::StrCat("GPU ", index, " on node ", r.node,
                                                  " is held by ", it->second, " and ", id, "/",
                                                  r.name));
        }
      }
    }
  }
  for (const auto& [name, node] : nodes_->nodes()) {
    const DevicePool* pool = nodes_->DevicesOf(name);
    const std::map<int32_t, std::string>& mine = held[name];
    if (pool == nullptr) continue;
    for (const v1::GpuDevice& d : pool->devices()) {
      auto it = mine.find(d.index());
      const std::string want = it == mine.end() ? "" : it->second;
      if (d.holder() != want) {
        return absl::InternalError(absl::StrCat("GPU ", d.index(), " on node ", name,
                                                " is held by '", d.holder(), "' in its pool, by '",
                                                want, "' by the jobs"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace trainctl::sched
