// DomainIndex: the nodes of a FreeIndex grouped by their value of one label key — the topology
// domains of that key (the racks of topology.rack, the blocks of topology.block) — each with the
// free total of its nodes kept current while a scheduling pass places gang after gang.
//
// It makes a topology job's placement cost O(domains + nodes in the domains it tries) instead of
// a scan of every node per job: the domains whose total cannot hold the gang are skipped without
// looking at their nodes, and a gang placed within a domain looks only at that domain's nodes.
//
//   FreeIndex free(nodes.FreeNodes());
//   const DomainIndex& racks = free.Domains("topology.rack");  // built on first use, O(nodes)
//   GangOptions options;
//   for (int d = 0; d < racks.size(); ++d) {
//     if (!racks.free(d).Fits(total)) continue;  // too small: its nodes are never looked at
//     options.within = &racks.nodes(d);
//     if (free.PlaceGang(demands, options).ok()) break;  // updates racks.free(d)
//   }
//
// Invariants: free(d) is the sum of nodes()[i].free over nodes(d) (a float sum for cpu); a node
// without the label is in no domain; domains are ordered by value and nodes(d) by node index.
// Thread-safety: none; owned by its FreeIndex, which keeps the totals current.
#pragma once

#include <string>
#include <vector>

#include "model/model.h"
#include "scheduler/node_free.h"

namespace trainctl::sched {

class DomainIndex {
 public:
  // Groups `nodes` (a FreeIndex's, by index) by their value of `key`.
  DomainIndex(std::string key, const std::vector<NodeFree>& nodes);

  DomainIndex(const DomainIndex&) = delete;
  DomainIndex& operator=(const DomainIndex&) = delete;

  const std::string& key() const { return key_; }
  // The number of domains.
  int size() const { return static_cast<int>(values_.size()); }
  // Domain d's label value, its nodes (indexes, ascending) and their free total.
  const std::string& value(int d) const { return values_[d]; }
  const std::vector<int>& nodes(int d) const { return nodes_[d]; }
  const Res& free(int d) const { return free_[d]; }
  // The domain of node `index`, or -1 when it has no such label.
  int DomainOf(int index) const { return domain_of_[index]; }

  // Node `index`'s free resources change from `before` to `after`.
  void Update(int index, const Res& before, const Res& after);

 private:
  // Constant after construction.
  const std::string key_;
  std::vector<std::string> values_;
  std::vector<std::vector<int>> nodes_;
  std::vector<int> domain_of_;

  // Kept current by Update.
  std::vector<Res> free_;
};

}  // namespace trainctl::sched
