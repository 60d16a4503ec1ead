// Node selection by label: which nodes a worker pool may run on (its nodeSelector, exact
// matches, and nodeAffinity rules In / NotIn / Exists, as in Kubernetes), the validation of
// those fields, and NodeMasks, the per-pass cache of the nodes each distinct selection allows.
//
// A pool with an image (WorkerPool.image) asks, on top of its own rules, for a node that can run
// images: one labelled kImagesLabel=true (its agent registers the label). Everything below
// treats that as one more rule of the pool, and the messages say it in words.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/placement.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

using NodeLabels = std::map<std::string, std::string>;

// The label, with the value "true", of the nodes whose agent can run a pool's image.
inline constexpr char kImagesLabel[] = "trainctl.io/images";

// Whether a node with `labels` (nullptr: none) can run images.
bool CanRunImages(const NodeLabels* labels);

// OK, or INVALID_ARGUMENT naming the field under `path` (e.g. "workerPools[1]"):
// "workerPools[1].nodeSelector: ...".
absl::Status ValidateNodeSelection(const std::string& path, const v1::WorkerPool& pool);

// Whether the pool restricts its nodes at all: a nodeSelector, nodeAffinity or an image.
bool HasNodeSelection(const v1::WorkerPool& pool);

// Whether a node with `labels` (nullptr: none) meets every rule of the pool, the image's too.
bool MatchesNodeSelection(const v1::WorkerPool& pool, const NodeLabels* labels);

// The pool's own rules for messages: "gpu.type=a100, zone In (a,b), spot NotIn (yes), ib
// Exists"; without the image's rule (NoNodeMatches says it).
std::string DescribeNodeSelection(const v1::WorkerPool& pool);

// Why no node among `nodes` may take `pool`, the pool at `index` of its job's spec, for the
// NODE_SELECTOR reason. REQUIRES: no node of `nodes` matches (MatchesNodeSelection).
//   "no schedulable node matches workerPools[1] (worker) node selection gpu.type=a100"
//   "no schedulable node can run images (label trainctl.io/images=true) for workerPools[1]
//    (worker)"
//   "no schedulable node matches workerPools[1] (worker) node selection gpu.type=a100 and can
//    run images (label trainctl.io/images=true)"
std::string NoNodeMatches(int index, const v1::WorkerPool& pool,
                          const std::vector<NodeFree>& nodes);

// The nodes each distinct selection allows, among a fixed list of nodes (a FreeIndex's, by
// index): computed once per selection, so a pass over many queued jobs with the same selector
// scans the nodes once.
class NodeMasks {
 public:
  explicit NodeMasks(const std::vector<NodeFree>* nodes) : nodes_(nodes) {}

  // The mask of the nodes `pool` may use, or nullptr when it restricts nothing.
  const std::vector<char>* For(const v1::WorkerPool& pool);
  // Whether a mask allows no node.
  static bool None(const std::vector<char>& mask);

 private:
  const std::vector<NodeFree>* nodes_;
  std::map<std::string, std::vector<char>> masks_;
};

}  // namespace trainctl::sched
