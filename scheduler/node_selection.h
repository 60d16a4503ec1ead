// Node selection by label: which nodes a worker pool may run on (its nodeSelector, exact
// matches, and nodeAffinity rules In / NotIn / Exists, as in Kubernetes), the validation of
// those fields, and NodeMasks, the per-pass cache of the nodes each distinct selection allows.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/placement.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::sched {

using NodeLabels = std::map<std::string, std::string>;

// OK, or INVALID_ARGUMENT naming the field under `path` (e.g. "workerPools[1]"):
// "workerPools[1].nodeSelector: ...".
absl::Status ValidateNodeSelection(const std::string& path, const v1::WorkerPool& pool);

// Whether the pool restricts its nodes at all.
bool HasNodeSelection(const v1::WorkerPool& pool);

// Whether a node with `labels` (nullptr: none) meets every rule of the pool.
bool MatchesNodeSelection(const v1::WorkerPool& pool, const NodeLabels* labels);

// The pool's rules for messages: "gpu.type=a100, zone In (a,b), spot NotIn (yes), ib Exists".
std::string DescribeNodeSelection(const v1::WorkerPool& pool);

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
