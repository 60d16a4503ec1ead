// Topology-aware gang placement: a job's replicas on the nodes its pools select (node_selection.h),
// packed within one domain of a node label (scheduling.placement.packWithin, required) or as few
// domains as possible (preferWithin, best effort), the tightest fitting domain first so whole
// domains stay free for large gangs, SPREAD or BINPACK over the nodes inside it.
//
// Cost: a scheduling pass groups its nodes by each topology key once (FreeIndex::Domains,
// domain_index.h), and the FreeIndex keeps every domain's free total current as gangs are placed.
// So a packWithin/preferWithin job looks at the domains' totals and at the nodes of the domains
// it tries: O(domains + nodes in the candidate domains) per job, not a scan of every node. (A job
// with node selections sums the nodes its pools may use in each candidate domain.)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/node_selection.h"
#include "scheduler/placement.h"
#include "scheduler/placement_kind.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// OK, or INVALID_ARGUMENT naming the field: "scheduling.placement.packWithin: ...".
absl::Status ValidatePlacement(const v1::Placement& placement);

// Whether the spec asks anything of its nodes beyond resources (selectors, topology, BINPACK).
bool HasPlacementConstraints(const v1::JobSpec& spec);

// The parts of `spec` that placement reads (pool names, node selections, scheduling.placement),
// or nullptr when it asks nothing of nodes beyond resources: what a queue status keeps.
std::shared_ptr<const v1::JobSpec> PlacementSpecOf(const v1::JobSpec& spec);

// The outcome of placing one job's gang.
struct JobPlacement {
  // On success: one node per demand, in the order of the demands.
  std::vector<std::string> nodes;
  // On failure: the queue reason's kind (kCapacity, kNodeSelector, kTopology; the pipeline adds
  // kNoNodes and kMaintenance) and what is missing, e.g. "no topology.rack has 4 free cpu for 4
  // replicas (best: r1 with 3)".
  PlacementKind kind = PlacementKind::kPlaced;
  std::string missing;
  bool ok() const { return kind == PlacementKind::kPlaced; }
  // "KIND: missing".
  std::string Reason() const { return ReasonText(BlockerOf(kind), missing); }
};

// Places the gang `demands` (demand i of the pool spec.workerPools[pool_of[i]]) on `free`,
// following the spec's node selections and scheduling.placement; on success what it placed is
// taken in `free` (unless `dry_run`), on failure nothing changed; never on the nodes in `avoid`
// (nullptr: none). `masks` caches the node sets of selections over free->nodes(). Callers go
// through the placement pipeline (placement_pipeline.h), which adds the maintenance filter.
JobPlacement PlaceJob(const v1::JobSpec& spec, const std::vector<ReplicaDemand>& demands,
                      const std::vector<int>& pool_of, FreeIndex* free, NodeMasks* masks,
                      const std::set<std::string>* avoid = nullptr, bool dry_run = false);

// The nodes of `free` a replica of `pool` (nullptr: none known) may move to from the node with
// `from_labels`: those its pool's node selection allows and, with packWithin, those of the
// domain it leaves, where the rest of its gang runs.
std::vector<NodeFree> NodesForMove(const v1::JobSpec& spec, const v1::WorkerPool* pool,
                                   const NodeLabels* from_labels, std::vector<NodeFree> free);
// The same as a mask over `nodes` (a FreeIndex's): nonzero where NodesForMove would keep the
// node, and zero for the node named `exclude` (the one the replica leaves).
std::vector<char> MoveMask(const v1::JobSpec& spec, const v1::WorkerPool* pool,
                           const NodeLabels* from_labels, const std::vector<NodeFree>& nodes,
                           const std::string& exclude);

// The index in spec.workerPools of each replica's pool, by replica name "<pool>-<index>".
std::vector<int> PoolIndexOf(const v1::JobSpec& spec, const std::vector<ReplicaDemand>& demands);

}  // namespace trainctl::sched
