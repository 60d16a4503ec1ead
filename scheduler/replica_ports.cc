// JobLifecycle: the ports of each replica (scheduler/port_pool.h). A replica holds its ports in
// its node's pool only while it holds resources there. It remembers them after it stops, so an
// in-place restart takes the same ones back (TakeBackPorts) and its peers' cluster specs stay
// true. A replica that leaves its node forgets them and gets new ones when it launches on the
// next (LaunchOnItsNode); a new attempt, or a gang about to relaunch, gets fresh ones for every
// replica at once (RenewPorts), before any of them launches.
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/job_lifecycle.h"

namespace trainctl::sched {

void JobLifecycle::TakeBackPorts(Replica* r) {
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

void JobLifecycle::AllocatePorts(Replica* r) {
  if (r->node.empty()) return;
  r->port = nodes_->AllocatePort(r->node).value_or(0);
  r->rendezvous_port = 0;
  if (r->port != 0 && PortsNeeded(r->rank) > 1) {
    r->rendezvous_port = nodes_->AllocatePort(r->node).value_or(0);
  }
}

void JobLifecycle::ReleasePorts(const Replica& r) {
  for (int32_t port : {r.port, r.rendezvous_port}) {
    if (port != 0) nodes_->ReleasePort(r.node, port);
  }
}

void JobLifecycle::LeavePorts(Replica* r) {
  if (HoldsResources(r->state)) ReleasePorts(*r);
  r->port = 0;
  r->rendezvous_port = 0;
}

void JobLifecycle::RenewPorts(Job* job) {
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

absl::Status JobLifecycle::CheckPorts() const {
  // Each node's pool holds exactly the ports, within its range, of the replicas holding resources
  // there, each port for one replica. Ports outside the range were given under another
  // --port-range before a restart; the pool does not track them.
  std::map<std::string, std::set<int32_t>> held;
  for (const auto& [id, job] : jobs_->all()) {
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

}  // namespace trainctl::sched
