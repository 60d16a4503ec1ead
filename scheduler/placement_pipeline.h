// PlacementPipeline: the one way the scheduler decides where replicas go — a whole gang at
// admission, a gang's "why it waits" (blockers), one replica that moves, grows back into an
// elastic pool or is added by `resize` — and the question the preemption search asks: would this
// gang fit if these allocations were gone?
//
// It has the shape of Nomad's feasibility → rank and the Kubernetes scheduler framework's
// filter → score. Filters, each a node either passes or not:
//   1. schedulable and healthy: the book (FreeIndex) holds only the nodes NodeRegistry calls
//      schedulable (connected, READY, not draining, agent not shutting down);
//   2. node selection: each pool's nodeSelector / nodeAffinity (node_selection.h, NodeMasks);
//   3. maintenance window: nodes whose window starts before the job's expected end are avoided
//      (maintenance.h, NodesToAvoid);
//   4. resources: cpu, memory, GPUs and ports free (FreeIndex, NodeFree::Fits);
//   5. topology domain: packWithin keeps a gang (and a moving replica) inside one domain of a
//      label (topology.h);
//   6. reserved: a gang does not take the nodes whose room preemption's victims are freeing for
//      another job (GangRequest.reserved; admission_queue.h);
//   7. excluded: a job never uses the nodes it excluded (Job::excluded_nodes, a straggler's node
//      under scheduling.stragglerAction REPLACE; straggler_replace.h), for a gang and for one
//      replica alike (GangRequest.excluded, ReplicaRequest.excluded).
// Scores, among the nodes that pass:
//   - spread (most free first) or binpack (least free first), ties by name (FreeIndex order);
//   - topology: the tightest domain that holds the gang first; preferWithin as few domains as
//     possible, largest first (topology.h);
//   - device locality: which GPUs of the chosen node a replica gets is decided after placement,
//     by the node's DevicePool (device_pool.h); node ranking has no device term today.
//
// Where callers differ, on purpose (placement_pipeline_test.cc checks each):
//   - Admission (admission_queue.cc) judges maintenance windows by ExpectedEnd(spec, now), places
//     avoiding the windowed nodes and, when that fails, asks whether they alone have room
//     (MaintenanceCheck::kAvoidFirst): then the reason is MAINTENANCE, else the avoiding run's
//     shortfall.
//   - Blockers (queue_state.cc) use now + the expected duration and look for the shortfall on
//     every node first (kShortfallFirst): only a gang that fits there but not off the windowed
//     nodes is named MAINTENANCE, in a second pass. Both are dry runs on a copy of the published
//     free nodes.
//   - Moves, elastic growth and `resize` (ReplicaMoves, ElasticPools) place one replica
//     (PlaceReplica): windows judged by the job's start (ExpectedEnd(spec, start, now)), never
//     the replica's current node, and with packWithin only the domain of the node its gang runs
//     in. A replica that finds room only on windowed nodes is told so (MaintenanceNoRoom).
//
//   PlacementPipeline pipeline(&registry.PassIndex(), &windows);
//   JobPlacement p = pipeline.PlaceGang({&job.spec, &demands, ExpectedEnd(job.spec, now)});
//   if (p.ok()) ... p.nodes ...; else reason = p.Reason();  // "CAPACITY: no node has ..."
//
// Thread-safety: none; a pipeline is used by one pass (or one read) at a time, like its book.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/maintenance.h"
#include "scheduler/node_selection.h"
#include "scheduler/placement.h"
#include "scheduler/placement_kind.h"
#include "scheduler/topology.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

// How a gang's placement tells MAINTENANCE from any other shortfall (see above).
enum class MaintenanceCheck {
  // Admission: place off the windowed nodes; only when that fails, a dry run on every node says
  // whether the windowed nodes alone have room.
  kAvoidFirst,
  // Blockers: a dry run on every node names the shortfall first; a gang that fits there is
  // MAINTENANCE when it does not fit off the windowed nodes.
  kShortfallFirst,
};

// A gang to place.
struct GangRequest {
  // What it asks of nodes beyond resources (node selections, scheduling.placement); nullptr or a
  // spec without such constraints: any node, spread.
  const v1::JobSpec* spec = nullptr;
  // One per replica, in rank order.
  const std::vector<ReplicaDemand>* demands = nullptr;
  // When the job is expected to end: nodes whose maintenance window starts before then are
  // avoided. nullopt: windows are not considered (the idle cluster, a stockout check).
  std::optional<absl::Time> expected_end = std::nullopt;
  MaintenanceCheck check = MaintenanceCheck::kAvoidFirst;
  // Nodes it may not use: the room preemption's victims hold for their preemptor (filter 6);
  // nullptr: none.
  const std::set<std::string>* reserved = nullptr;
  // Nodes the job no longer uses (filter 7, Job::excluded_nodes); nullptr: none.
  const std::vector<std::string>* excluded = nullptr;
};

// An allocation a what-if gives back: `demand` held on `node`.
struct Allocation {
  std::string node;
  ReplicaDemand demand;
};

// One replica to place: a move, a replica that grows back into its elastic pool.
struct ReplicaRequest {
  // Its job's spec (scheduling.placement: policy and packWithin). Required.
  const v1::JobSpec* spec = nullptr;
  // Its pool's node selection; nullptr: none.
  const v1::WorkerPool* pool = nullptr;
  // With packWithin: the labels of the node whose domain it stays in; nullptr: any domain.
  const NodeLabels* domain_of = nullptr;
  ReplicaDemand demand;
  // Never this node (the one it leaves); empty: none.
  std::string exclude;
  // Nor these (filter 7, its job's Job::excluded_nodes); nullptr: none.
  const std::vector<std::string>* excluded = nullptr;
  // Windows that start before this are avoided.
  absl::Time expected_end = absl::InfiniteFuture();
};

struct ReplicaPlacement {
  // On success: the node.
  std::string node;
  PlacementKind kind = PlacementKind::kPlaced;
  // With kMaintenance: MaintenanceNoRoom's words. With kCapacity: empty; the caller names the
  // nodes it knows (DescribeNoRoom in replica_moves.cc).
  std::string missing;
  bool ok() const { return kind == PlacementKind::kPlaced; }
};

class PlacementPipeline {
 public:
  // Over `book` (the free resources of the schedulable nodes) and the nodes' maintenance windows
  // (nullptr: none). Both must outlive the pipeline; the book's nodes must not change while it
  // is used (it caches node selections by node index).
  PlacementPipeline(FreeIndex* book, const std::vector<NodeWindow>* windows);

  PlacementPipeline(const PlacementPipeline&) = delete;
  PlacementPipeline& operator=(const PlacementPipeline&) = delete;

  // Places the gang; on success its places are taken in the book.
  JobPlacement PlaceGang(const GangRequest& request);
  // Whether the gang fits, and where it would go; the book is left as it was.
  JobPlacement CheckGang(const GangRequest& request);
  // Whether the gang would fit if `released` were given back first (preemption's question). The
  // book itself is changed for the call, at the released allocations' nodes only, and put back:
  // O(released · log nodes) besides the placement, no copy of the cluster. Allocations on nodes
  // not in the book (not schedulable) free nothing.
  JobPlacement CheckGangWithout(const GangRequest& request,
                                const std::vector<Allocation>& released);

  // Where one replica goes (it is not taken in the book; the caller binds it).
  ReplicaPlacement PlaceReplica(const ReplicaRequest& request) const;

 private:
  JobPlacement Run(const GangRequest& request, bool dry_run);
  // One placement of the gang, avoiding `avoid` (nullptr: none).
  JobPlacement Attempt(const GangRequest& request, const std::set<std::string>* avoid,
                       bool dry_run);
  // What a gang placed only on windowed nodes is told.
  JobPlacement OnlyWindowed(const std::set<std::string>& avoid, absl::Time end) const;

  FreeIndex* book_;
  const std::vector<NodeWindow>* windows_;
  NodeMasks masks_;
};

// PlacementPipeline::PlaceReplica over a book that is only read (moves: NodeRegistry::FreeBook).
ReplicaPlacement PlaceReplica(const FreeIndex& book, const std::vector<NodeWindow>& windows,
                              const ReplicaRequest& request);

// Gives allocations back in a book for the view's life, then puts the nodes back as they were
// (the what-if of CheckGangWithout). Only the named nodes change.
class ReleasedView {
 public:
  ReleasedView(FreeIndex* book, const std::vector<Allocation>& released);
  ~ReleasedView();

  ReleasedView(const ReleasedView&) = delete;
  ReleasedView& operator=(const ReleasedView&) = delete;

 private:
  FreeIndex* book_;
  // Each changed node as it was, by index, in the order first changed.
  std::vector<std::pair<int, NodeFree>> saved_;
};

}  // namespace trainctl::sched
