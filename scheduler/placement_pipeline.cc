// The placement pipeline (placement_pipeline.h): filters, then scores, for a gang and for one
// replica, and the what-if over released allocations.
#include "scheduler/placement_pipeline.h"

#include <utility>

namespace trainctl::sched {
namespace {

bool Binpacks(const v1::JobSpec& spec) {
  return spec.scheduling().placement().policy() == v1::PLACEMENT_POLICY_BINPACK;
}

// Filter 3: the nodes a job expected to end at `end` keeps off (none without windows).
std::set<std::string> AvoidedBy(const std::vector<NodeWindow>* windows,
                                const std::optional<absl::Time>& end) {
  if (windows == nullptr || windows->empty() || !end) return {};
  return NodesToAvoid(*windows, *end);
}

}  // namespace

PlacementPipeline::PlacementPipeline(FreeIndex* book, const std::vector<NodeWindow>* windows)
    : book_(book), windows_(windows), masks_(&book->nodes()) {}

JobPlacement PlacementPipeline::PlaceGang(const GangRequest& request) {
  return Run(request, /*dry_run=*/false);
}

JobPlacement PlacementPipeline::CheckGang(const GangRequest& request) {
  return Run(request, /*dry_run=*/true);
}

JobPlacement PlacementPipeline::CheckGangWithout(const GangRequest& request,
                                                 const std::vector<Allocation>& released) {
  ReleasedView view(book_, released);
  return Run(request, /*dry_run=*/true);
}

JobPlacement PlacementPipeline::Attempt(const GangRequest& request,
                                        const std::set<std::string>* avoid, bool dry_run) {
  JobPlacement out;
  if (book_->empty()) {  // filter 1 left no node
    out.kind = PlacementKind::kNoNodes;
    out.missing = kNoNodesMissing;
    return out;
  }
  const std::vector<ReplicaDemand>& demands = *request.demands;
  if (request.spec != nullptr && HasPlacementConstraints(*request.spec)) {
    // Filters 2 and 5, and the topology score (topology.h); filter 4 and the policy's score in
    // the book.
    return PlaceJob(*request.spec, demands, PoolIndexOf(*request.spec, demands), book_, &masks_,
                    avoid, dry_run);
  }
  // The common case: any node, spread.
  GangOptions options;
  options.avoid = avoid;
  options.dry_run = dry_run;
  absl::StatusOr<std::vector<std::string>> placed = book_->PlaceGang(demands, options);
  if (placed.ok()) {
    out.nodes = *std::move(placed);
  } else {
    out.kind = PlacementKind::kCapacity;
    out.missing = std::string(placed.status().message());
  }
  return out;
}

JobPlacement PlacementPipeline::OnlyWindowed(const std::set<std::string>& avoid,
                                             absl::Time end) const {
  JobPlacement out;
  out.kind = PlacementKind::kMaintenance;
  out.missing = MaintenanceNoRoom(*windows_, avoid, end);
  return out;
}

JobPlacement PlacementPipeline::Run(const GangRequest& request, bool dry_run) {
  // Reserved and excluded nodes are never used (filters 6 and 7); windowed ones are avoided
  // (filter 3).
  const std::set<std::string>* reserved =
      request.reserved != nullptr && !request.reserved->empty() ? request.reserved : nullptr;
  std::set<std::string> never;
  if (request.excluded != nullptr && !request.excluded->empty()) {
    never.insert(request.excluded->begin(), request.excluded->end());
    if (reserved != nullptr) never.insert(reserved->begin(), reserved->end());
    reserved = &never;
  }
  std::set<std::string> avoid = AvoidedBy(windows_, request.expected_end);
  if (avoid.empty()) return Attempt(request, reserved, dry_run);
  const std::set<std::string> windowed = avoid;
  if (reserved != nullptr) avoid.insert(reserved->begin(), reserved->end());
  if (request.check == MaintenanceCheck::kAvoidFirst) {
    JobPlacement placed = Attempt(request, &avoid, dry_run);
    if (placed.ok()) return placed;
    // Would it fit on the hosts it avoids too? Then only they have room: it waits for them.
    if (Attempt(request, reserved, /*dry_run=*/true).ok()) {
      return OnlyWindowed(windowed, *request.expected_end);
    }
    return placed;
  }
  JobPlacement anywhere = Attempt(request, reserved, /*dry_run=*/true);
  if (!anywhere.ok()) return anywhere;
  JobPlacement off_windows = Attempt(request, &avoid, dry_run);
  if (!off_windows.ok()) return OnlyWindowed(windowed, *request.expected_end);
  return off_windows;
}

ReplicaPlacement PlacementPipeline::PlaceReplica(const ReplicaRequest& request) const {
  static const std::vector<NodeWindow> kNoWindows;
  return sched::PlaceReplica(*book_, windows_ == nullptr ? kNoWindows : *windows_, request);
}

ReplicaPlacement PlaceReplica(const FreeIndex& book, const std::vector<NodeWindow>& windows,
                              const ReplicaRequest& request) {
  ReplicaPlacement out;
  const v1::JobSpec& spec = *request.spec;
  // Filters 2 and 5 (its pool's selection, its gang's domain), the node it leaves and its job's
  // excluded nodes (filter 7).
  std::vector<char> allowed =
      MoveMask(spec, request.pool, request.domain_of, book.nodes(), request.exclude);
  if (request.excluded != nullptr) {
    for (const std::string& node : *request.excluded) {
      if (const int i = book.IndexOf(node); i >= 0) allowed[i] = 0;
    }
  }
  const std::set<std::string> avoid = AvoidedBy(&windows, request.expected_end);
  // Filters 3 and 4, and the policy's score.
  const int best = book.ChooseAmong(request.demand, &allowed, nullptr, Binpacks(spec),
                                    avoid.empty() ? nullptr : &avoid);
  if (best >= 0) {
    out.node = book.nodes()[best].name;
    return out;
  }
  const bool only_windowed =
      !avoid.empty() && book.ChooseAmong(request.demand, &allowed, nullptr, false) >= 0;
  if (only_windowed) {
    out.kind = PlacementKind::kMaintenance;
    out.missing = MaintenanceNoRoom(windows, avoid, request.expected_end);
  } else {
    out.kind = book.empty() ? PlacementKind::kNoNodes : PlacementKind::kCapacity;
  }
  return out;
}

ReleasedView::ReleasedView(FreeIndex* book, const std::vector<Allocation>& released) : book_(book) {
  for (const Allocation& a : released) {
    const int i = book_->IndexOf(a.node);
    if (i < 0) continue;
    NodeFree node = book_->nodes()[i];
    bool seen = false;
    for (const auto& [index, before] : saved_) seen |= index == i;
    if (!seen) saved_.push_back({i, node});
    GiveBackTo(&node, a.demand);
    book_->Reset(i, std::move(node));
  }
}

ReleasedView::~ReleasedView() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    book_->Reset(it->first, std::move(it->second));
  }
}

}  // namespace trainctl::sched
