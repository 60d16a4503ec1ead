// ReplicaBinding: a replica's binding to what it holds on its node — the node's resources
// (NodeBook::Hold), its ports (port_pool.h) and its GPUs (device_pool.h).
//
// It owns the rules of that binding and nothing else:
//   - a replica holds resources, ports and devices on its node exactly while it holds resources
//     (HoldsResources of its state), all of its ports or none (port 0);
//   - it remembers its ports and devices after it stops, so an in-place restart takes the same
//     ones back (its peers' cluster specs and its checkpoint's GPUs stay true), and gets others
//     only when another replica took one meanwhile;
//   - a replica that leaves its node forgets them; new ports come with its launch on the next
//     node (AllocatePorts), new devices as it starts holding resources there;
//   - a new attempt, or a gang about to relaunch, gets fresh ports for every replica at once
//     (RenewPorts), before any of them launches.
// It decides nothing about jobs: the job lifecycle calls it as a replica's state or node changes
// (JobLifecycle::SetReplicaState and SetNode are its only callers for Bind, Unbind and Rebind),
// and it never changes a replica's state, node or rows.
//
//   ReplicaBinding binding(&nodes.book());
//   binding.Bind(job, &r);          // r now holds resources on r.node: resources, ports, GPUs
//   binding.Unbind(r);              // it stops holding them; it remembers its ports and GPUs
//
// Thread-safety: none; owned by the job lifecycle.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "model/model.h"
#include "scheduler/job_table.h"
#include "scheduler/node_book.h"

namespace trainctl::sched {

class ReplicaBinding {
 public:
  // `nodes` must outlive it.
  explicit ReplicaBinding(NodeBook* nodes) : nodes_(nodes) {}

  ReplicaBinding(const ReplicaBinding&) = delete;
  ReplicaBinding& operator=(const ReplicaBinding&) = delete;

  // Holds again what a restored replica of `job` held before the restart: its resources, its
  // ports and its devices (a node whose inventory lost one keeps the rest). REQUIRES: `r` holds
  // resources.
  void Restore(const Job& job, const Replica& r);

  // `r` starts holding resources on its node: the node's resources, the ports it had there (all,
  // while still free, else none: it gets new ones at launch) and its devices (the ones it had
  // there while all are still free, else new ones).
  void Bind(const Job& job, Replica* r);
  // `r` stops holding resources: everything goes back to its node; it remembers its ports and
  // devices.
  void Unbind(const Replica& r);
  // `r` changes node to `node` (nothing when it is there already): the resources it holds move
  // with it; its ports and devices belong to the old node, are given back and forgotten. New
  // ports come with its launch there, new devices as it holds resources there (now, when it
  // does already).
  void Rebind(const Job& job, Replica* r, const std::string& node);
  // `r` leaves its node without a new one yet (an elastic replica waiting for room): forgets its
  // ports and devices. REQUIRES: it holds no resources.
  void Leave(Replica* r);

  // Gives `r` new ports on its node (PortsNeeded), held in the pool. A port the pool cannot give
  // stays 0 (placement checks free ports first). REQUIRES: it holds none.
  void AllocatePorts(Replica* r);
  // Gives back every replica's ports and gives each placed replica new ones on its current node,
  // different from the old ones while its pool has other free ports (the cursor hands the old
  // ones out last). Call it before relaunching a whole gang, so that no run of the new launches
  // binds a port an old process may still hold. A replica that holds resources holds its new
  // ports at once; one that does not has them picked but not held, and takes them when it
  // launches. Changes no row: the caller marks the job changed.
  void RenewPorts(Job* job);
  // The run `run_id` of `r` uses its devices now (node views).
  void NoteRun(const Replica& r, const std::string& run_id);

  // Recounts the ports of every replica that holds resources and compares with each node's pool:
  // each such port (within the range) held there, by one replica, and no other port held. For
  // tests (Core::CheckUsage); INTERNAL naming the first difference.
  absl::Status CheckPorts(const JobTable& jobs) const;
  // Like CheckPorts, for GPUs: every replica holding resources holds need.gpus devices in its
  // node's pool, each for it alone, and the pool holds no others.
  absl::Status CheckDevices(const JobTable& jobs) const;

 private:
  // Takes back the ports `r` had on its node: all of them while they are still free, else none.
  void TakeBackPorts(Replica* r);
  void ReleasePorts(const Replica& r);
  // Gives back what it holds on its node (when it holds resources), and forgets its ports.
  void LeavePorts(Replica* r);
  void HoldDevices(const Job& job, Replica* r);
  void ReleaseDevices(const Replica& r);

  NodeBook* const nodes_;
};

}  // namespace trainctl::sched
