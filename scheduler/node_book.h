// NodeBook: the book of what each node has free — what placed replicas hold on each node
// (resources and a replica count), each node's ports (port_pool.h) and GPUs (device_pool.h),
// and the index of free room that placement reads (FreeIndex).
//
// What it owns: the usage, port pools, device pools and the free index, by node name.
// What it decides: nothing. It counts what it is told: holds and releases come from the job
// lifecycle's ReplicaBinding, node changes from the NodeRegistry that owns it (NodesChanged,
// LoadDevices, Forget); it reads the nodes themselves (size, labels, whether schedulable) from
// the registry's map, which it never changes.
//
//   NodeBook& book = registry.book();
//   book.Hold("node-a", need);                            // a replica holds `need` there
//   std::vector<NodeFree> free = book.FreeNodes();         // for placement
//
// Thread-safety: none; owned by the NodeRegistry.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/model.h"
#include "scheduler/device_pool.h"
#include "scheduler/placement.h"
#include "scheduler/port_pool.h"

namespace trainctl::sched {

class NodeBook {
 public:
  // What placed replicas hold on a node, and how many replicas that is.
  struct NodeUsage {
    Res used;
    int32_t replicas = 0;
  };

  // `nodes` (the registry's nodes, by name) must outlive it; `ports` is every node's port range.
  NodeBook(const std::map<std::string, Node>* nodes, PortRange ports)
      : nodes_(nodes), ports_range_(ports) {}

  NodeBook(const NodeBook&) = delete;
  NodeBook& operator=(const NodeBook&) = delete;

  // --- Told by the registry ------------------------------------------------------------------

  // A node itself changed (state, connection, size, labels): what is free is recounted.
  void NodesChanged() {
    ++version_;
    index_stale_ = true;
  }
  // Rebuilds `node`'s device pool from its inventory (status.gpu_devices), keeping holds.
  void LoadDevices(const Node& node);
  // Forgets a deleted node's usage, ports and devices.
  void Forget(const std::string& node);

  // --- What replicas hold (told by ReplicaBinding) -------------------------------------------

  void Hold(const std::string& node, const Res& need);
  void Release(const std::string& node, const Res& need);

  // The ports of `node` (the port range), the pool created on first use; see port_pool.h.
  std::optional<int32_t> AllocatePort(const std::string& node);
  bool ReservePort(const std::string& node, int32_t port);
  bool RestorePort(const std::string& node, int32_t port);
  void ReleasePort(const std::string& node, int32_t port);
  // The pool of `node`, or nullptr while it never held a port.
  const PortPool* PortsOf(const std::string& node) const;
  // The range of every node's pool.
  const PortRange& port_range() const { return ports_range_; }

  // The GPUs of `node` (device_pool.h), from its agent's inventory, or synthetic devices 0..N-1
  // for N allocatable GPUs when the agent sent no inventory that matches that count. `holder` is
  // "<job id>/<replica>". Unknown nodes hold nothing: Allocate gives nullopt, Reserve false.
  std::optional<std::vector<int32_t>> AllocateDevices(const std::string& node, int32_t count,
                                                      const std::string& holder);
  bool ReserveDevices(const std::string& node, const std::vector<int32_t>& indices,
                      const std::string& holder);
  void ReleaseDevices(const std::string& node, const std::vector<int32_t>& indices);
  // The run that uses the held `indices` now, for node views.
  void SetDeviceRun(const std::string& node, const std::vector<int32_t>& indices,
                    const std::string& run_id);
  // The devices of `node`, or nullptr for an unknown node.
  const DevicePool* DevicesOf(const std::string& node) const;

  // --- Reads ---------------------------------------------------------------------------------

  // The registry's nodes, by name.
  const std::map<std::string, Node>& nodes() const { return *nodes_; }
  NodeUsage UsageOf(const std::string& name) const;
  // Schedulable nodes with what is free on each now, free ports included, by name.
  std::vector<NodeFree> FreeNodes() const { return CurrentIndex().nodes(); }
  // The same nodes, indexed for a scheduling pass, which may take room in it as it places gangs
  // (FreeIndex::PlaceGang). What the pass took is given back at the next call of either method,
  // so neither may be called while a pass uses the index.
  FreeIndex& PassIndex() { return CurrentIndex(); }
  // The same book, only read: where a moving replica may go (placement_pipeline.h).
  const FreeIndex& FreeBook() const { return CurrentIndex(); }
  // Whether `name` has room now for `demand` beside what its replicas hold (resources and
  // ports), whatever its state: for a replica that held nothing there and starts again in place.
  bool HasRoom(const std::string& name, const ReplicaDemand& demand) const;
  // Schedulable nodes with their whole allocatable size and port range (the cluster if it were
  // idle).
  std::vector<NodeFree> IdleNodes() const;
  // Free ports of `node`.
  int32_t FreePorts(const std::string& node) const;
  // Changes whenever what FreeNodes returns may have changed.
  uint64_t version() const { return version_; }

 private:
  // Records a change of what `node`'s replicas hold (resources, ports, GPUs).
  void UsageChanged(const std::string& node) {
    ++version_;
    if (!index_stale_) index_dirty_.insert(node);
  }
  PortPool& PortPoolOf(const std::string& node);
  // What is free on a schedulable node.
  NodeFree FreeOf(const Node& node) const;
  // index_, brought back to what is free on each schedulable node now: rebuilt after a node
  // itself changed, else only the nodes whose usage changed or that the last pass took room on
  // are refreshed, so a pass costs nothing per node that did not change.
  FreeIndex& CurrentIndex() const;

  // Constant after construction.
  const std::map<std::string, Node>* const nodes_;
  const PortRange ports_range_;

  // By node name; nodes that hold nothing may be missing.
  std::map<std::string, NodeUsage> usage_;
  // By node name; a node that never held a port is missing (all its ports are free). Kept for
  // nodes that hold none any more: the cursor remembers which ports were released last.
  std::map<std::string, PortPool> ports_;
  // By node name, for every known node (empty for nodes without GPUs).
  std::map<std::string, DevicePool> devices_;
  uint64_t version_ = 0;
  // What is free on each schedulable node, indexed (CurrentIndex), kept between calls, with
  // the nodes whose usage changed since, or all of them after a node itself changed.
  mutable std::unique_ptr<FreeIndex> index_;
  mutable std::set<std::string> index_dirty_;
  mutable bool index_stale_ = true;
};

}  // namespace trainctl::sched
