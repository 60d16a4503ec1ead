// PlacementPolicy: the one place that picks nodes — for a whole gang (all replicas of a job, or
// none) and for one replica that moves off its node.
//
// Pure and deterministic: the same nodes and demands always give the same answer. The default
// policy spreads replicas: each replica goes to the fitting node with the most free resources
// left (gpus first, then memory, then cpu), ties broken by node name (ChooseNode). Spreading keeps
// one host's failure from taking a whole job's replicas with it and balances load on CPU-only
// hosts. A job's scheduling.placement.policy BINPACK picks the least free fitting node instead,
// so whole hosts stay free; topology (topology.h) restricts a gang to the nodes of a domain.
//
// Ports are a resource too: a node without enough free ports in its pool (NodeFree::free_ports)
// is never chosen, though they do not count in the ranking.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "model/model.h"
#include "scheduler/domain_index.h"
#include "scheduler/node_free.h"

namespace trainctl::sched {

// Which nodes a gang may use and how it fills them (node_selection.h, topology.h). A mask holds
// one entry per node of the FreeIndex, by its index (by name), nonzero where the node may be used.
struct GangOptions {
  // Per demand, in the order of the demands: the nodes it may go to; nullptr (or a short
  // vector): any node.
  std::vector<const std::vector<char>*> eligible = {};
  // Only these nodes (indexes into the FreeIndex, ascending: a DomainIndex's nodes), for every
  // demand; nullptr: any node. A choice then looks only at these nodes.
  const std::vector<int>* within = nullptr;
  // Fill the least free fitting node first (BINPACK) instead of the most free (SPREAD).
  bool binpack = false;
  // Never these nodes (maintenance windows); nullptr: none.
  const std::set<std::string>* avoid = nullptr;
  // Only ask whether the gang fits: on success too, what it placed is given back at once and
  // nothing counts as touched (TakeTouched).
  bool dry_run = false;
};

// `node` after `demand` was placed on it: less free, and its free GPU indices no longer known.
void TakeFrom(NodeFree* node, const ReplicaDemand& demand);

// `node` after `demand` was given back to it (the opposite of TakeFrom).
void GiveBackTo(NodeFree* node, const ReplicaDemand& demand);

// What a replica of the model demands of its node.
ReplicaDemand ReplicaDemandOf(const Replica& r);

// Returns one node name per demand, in the order of `demands`, or RESOURCE_EXHAUSTED whose
// message says what is missing, e.g. "no node has 4 free gpus for worker-2 (most free: 2 on
// node-b)" or "no node has 2 free ports for chief-0 (most free: 1 on node-a)".
absl::StatusOr<std::vector<std::string>> PlaceGang(const std::vector<ReplicaDemand>& demands,
                                                   std::vector<NodeFree> nodes);

// The free resources of the schedulable nodes while a scheduling pass places one gang after
// another: ChooseNode's and PlaceGang's answers without a copy of the nodes per gang or a scan of
// them per replica. The nodes are kept ordered by ChooseNode's preference, with the largest free
// cpu, memory and ports known, so a choice takes O(log nodes) when one of the most free nodes
// fits, and a demand that no node can meet is refused at once.
class FreeIndex {
 public:
  explicit FreeIndex(std::vector<NodeFree> nodes);

  FreeIndex(const FreeIndex&) = delete;
  FreeIndex& operator=(const FreeIndex&) = delete;

  // By name.
  const std::vector<NodeFree>& nodes() const { return nodes_; }
  bool empty() const { return nodes_.empty(); }
  // The index of the node named `name`, or -1.
  int IndexOf(const std::string& name) const;
  // Node `index` is `node` now (the same name, what is free on it changed), in every order the
  // index keeps: O(log nodes).
  void Reset(int index, NodeFree node);
  // The nodes PlaceGang took room on since the last call, ascending; forgets them.
  std::vector<int> TakeTouched();

  // ChooseNode(demand, nodes(), exclude).
  int Choose(const ReplicaDemand& demand, const std::string& exclude = "",
             const std::set<std::string>& avoid = {}) const;
  // Like Choose, among the nodes that `eligible` and `within` allow (nullptr: all) and not in
  // `avoid` (nullptr: none), the least free fitting node first when `binpack`. With `within` it
  // looks at those nodes only; else it walks the nodes in order of preference to the first one
  // allowed that fits.
  int ChooseAmong(const ReplicaDemand& demand, const std::vector<char>* eligible,
                  const std::vector<int>* within, bool binpack,
                  const std::set<std::string>* avoid = nullptr) const;
  // PlaceGang(demands, nodes()), and on success what it placed is taken (TakeFrom) here, unless
  // options.dry_run; on failure nothing changed. `options` restrict the nodes and choose the
  // policy; a shortfall then names only the nodes the demand could use.
  absl::StatusOr<std::vector<std::string>> PlaceGang(const std::vector<ReplicaDemand>& demands,
                                                     const GangOptions& options = {});

  // The nodes grouped by their value of the label `key`, with each domain's free total kept
  // current as PlaceGang takes and gives back room. Built on the first call for a key (O(nodes));
  // the reference stays valid for the FreeIndex's life.
  const DomainIndex& Domains(const std::string& key);

 private:
  // ChooseNode's order: most free (gpus, memory, cpu) first, then by name (the index).
  using Key = std::tuple<int64_t, int64_t, double, int>;
  Key KeyOf(int index) const;
  void Insert(int index);
  void Erase(int index);

  std::vector<NodeFree> nodes_;
  // The nodes PlaceGang took room on, since TakeTouched.
  std::set<int> touched_;
  std::set<Key> order_;
  std::multiset<double> cpu_;
  std::multiset<int64_t> memory_;
  std::multiset<int32_t> ports_;
  // By label key; kept current by Insert and Erase.
  std::map<std::string, std::unique_ptr<DomainIndex>> domains_;
};

// The index in `nodes` of the node `demand` goes to, or -1 when none fits: the most free fitting
// node (SPREAD), or with `binpack` the least free one (BINPACK: the fullest node that fits), ties
// by name. The node named `exclude` (the one a moving replica leaves) and the nodes in `avoid`
// (nullptr: none) are never chosen.
int ChooseNode(const ReplicaDemand& demand, const std::vector<NodeFree>& nodes,
               const std::string& exclude = "", bool binpack = false,
               const std::set<std::string>* avoid = nullptr);

// Returns OK when some node of `nodes` (by name; by allocatable size, ignoring current use) could
// ever hold a replica needing `need`; otherwise FAILED_PRECONDITION naming the shortfall.
absl::Status CheckFitsLargestNode(const std::string& path, const Res& need,
                                  const std::map<std::string, Node>& nodes);

}  // namespace trainctl::sched
