// ReplicaBinding (replica_binding.h): what a replica holds on its node — resources, ports
// (port_pool.h) and GPUs (device_pool.h) — kept in step with its state and node.
#include "scheduler/replica_binding.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/launch_env.h"

namespace trainctl::sched {
namespace {

std::string HolderOf(const Job& job, const Replica& r) { return absl::StrCat(job.id, "/", r.name); }

}  // namespace

void ReplicaBinding::Restore(const Job& job, const Replica& r) {
  nodes_->Hold(r.node, r.need);
  for (int32_t port : {r.port, r.rendezvous_port}) {
    if (port != 0) nodes_->RestorePort(r.node, port);
  }
  // Its processes use these devices now; a node whose inventory lost one keeps the rest.
  nodes_->ReserveDevices(r.node, r.gpu_devices, HolderOf(job, r));
}

void ReplicaBinding::Bind(const Job& job, Replica* r) {
  nodes_->Hold(r->node, r->need);
  TakeBackPorts(r);
  HoldDevices(job, r);
}

void ReplicaBinding::Unbind(const Replica& r) {
  nodes_->Release(r.node, r.need);
  ReleasePorts(r);
  ReleaseDevices(r);
}

void ReplicaBinding::Rebind(const Job& job, Replica* r, const std::string& node) {
  if (node == r->node) return;
  const bool holds = HoldsResources(r->state);
  if (holds) {
    nodes_->Release(r->node, r->need);
    nodes_->Hold(node, r->need);
    ReleaseDevices(*r);
  }
  LeavePorts(r);
  r->gpu_devices.clear();
  r->node = node;
  if (holds) HoldDevices(job, r);
}

void ReplicaBinding::Leave(Replica* r) {
  LeavePorts(r);
  r->gpu_devices.clear();
}

void ReplicaBinding::NoteRun(const Replica& r, const std::string& run_id) {
  nodes_->SetDeviceRun(r.node, r.gpu_devices, run_id);
}

// --- Ports -------------------------------------------------------------------------------------

void ReplicaBinding::TakeBackPorts(Replica* r) {
  // All or none: a primary never launches with one port of its own and one of another's.
  std::vector<int32_t> taken;
  for (int32_t port : {r->port, r->rendezvous_port}) {
    if (port == 0) continue;
    if (!nodes_->ReservePort(r->node, port)) {
      for (int32_t t : taken) nodes_->ReleasePort(r->node, t);
      r->port = 0;
      r->rendezvous_port = 0;
      return;
    }
    taken.push_back(port);
  }
}

void ReplicaBinding::AllocatePorts(Replica* r) {
  if (r->node.empty()) return;
  r->port = nodes_->AllocatePort(r->node).value_or(0);
  r->rendezvous_port = 0;
  if (r->port != 0 && PortsNeeded(r->rank) > 1) {
    r->rendezvous_port = nodes_->AllocatePort(r->node).value_or(0);
  }
}

void ReplicaBinding::ReleasePorts(const Replica& r) {
  for (int32_t port : {r.port, r.rendezvous_port}) {
    if (port != 0) nodes_->ReleasePort(r.node, port);
  }
}

void ReplicaBinding::LeavePorts(Replica* r) {
  if (HoldsResources(r->state)) ReleasePorts(*r);
  r->port = 0;
  r->rendezvous_port = 0;
}

void ReplicaBinding::RenewPorts(Job* job) {
  // Every old port goes back before any new one is taken: the cursor has passed them, so they
  // come out again only after every other free port.
  for (Replica& r : job->replicas) LeavePorts(&r);
  // Ports picked for replicas that hold nothing go back once every replica has its own, so no two
  // replicas pick the same one.
  std::vector<std::pair<std::string, int32_t>> picked;
  for (Replica& r : job->replicas) {
    if (r.state == v1::REPLICA_STATE_REMOVED) continue;  // out of the world: no ports
    AllocatePorts(&r);
    if (HoldsResources(r.state)) continue;
    for (int32_t port : {r.port, r.rendezvous_port}) {
      if (port != 0) picked.push_back({r.node, port});
    }
  }
  for (const auto& [node, port] : picked) nodes_->ReleasePort(node, port);
}

absl::Status ReplicaBinding::CheckPorts(const JobTable& jobs) const {
  // Each node's pool holds exactly the ports, within its range, of the replicas holding resources
  // there, each port for one replica. Ports outside the range were given under another
  // --port-range before a restart; the pool does not track them.
  std::map<std::string, std::set<int32_t>> held;
  for (const auto& [id, job] : jobs.all()) {
    for (const Replica& r : job.replicas) {
      if (!HoldsResources(r.state)) continue;
      for (int32_t port : {r.port, r.rendezvous_port}) {
        if (port == 0 || !nodes_->port_range().Contains(port)) continue;
        if (!held[r.node].insert(port).second) {
          return absl::InternalError(absl::StrCat("port ", port, " on node ", r.node,
                                                  " is held by two replicas; another is ", id, "/",
                                                  r.name));
        }
      }
    }
  }
  for (const auto& [name, node] : nodes_->nodes()) held[name];
  for (const auto& [name, ports] : held) {
    const PortPool* pool = nodes_->PortsOf(name);
    const int32_t used = pool == nullptr ? 0 : pool->used();
    if (used != static_cast<int32_t>(ports.size())) {
      return absl::InternalError(absl::StrCat(
          "node ", name, " holds ", used, " ports by its pool, ", ports.size(), " by the jobs"));
    }
    for (int32_t port : ports) {
      if (!pool->InUse(port)) {
        return absl::InternalError(
            absl::StrCat("port ", port, " of a replica on node ", name, " is free in its pool"));
      }
    }
  }
  return absl::OkStatus();
}

// --- Devices -----------------------------------------------------------------------------------

void ReplicaBinding::HoldDevices(const Job& job, Replica* r) {
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

void ReplicaBinding::ReleaseDevices(const Replica& r) {
  if (!r.gpu_devices.empty()) nodes_->ReleaseDevices(r.node, r.gpu_devices);
}

absl::Status ReplicaBinding::CheckDevices(const JobTable& jobs) const {
  // Each node's pool holds exactly the devices of the replicas holding resources there, each for
  // one replica, and every such replica holds as many as it needs.
  std::map<std::string, std::map<int32_t, std::string>> held;
  for (const auto& [id, job] : jobs.all()) {
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
