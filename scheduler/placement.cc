#include "scheduler/placement.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace trainctl::sched {
namespace {

// Larger is "more free"; compared lexicographically.
auto FreeKey(const Res& r) { return std::make_tuple(r.gpus, r.memory_mb, r.cpu); }

std::string DescribeShortfall(const std::string& replica, const Res& need,
                              const std::vector<NodeFree>& nodes) {
  // Name the first dimension that no node can satisfy, with the best offer for it.
  struct Dim {
    const char* unit;
    double need;
    double (*get)(const Res&);
  };
  const Dim dims[] = {
      {"gpus", static_cast<double>(need.gpus), [](const Res& r) { return double(r.gpus); }},
      {"MiB of memory", static_cast<double>(need.memory_mb),
       [](const Res& r) { return double(r.memory_mb); }},
      {"cpu cores", need.cpu, [](const Res& r) { return r.cpu; }},
  };
  for (const Dim& d : dims) {
    const NodeFree* best = nullptr;
    for (const NodeFree& n : nodes) {
      if (best == nullptr || d.get(n.free) > d.get(best->free)) best = &n;
    }
    if (best == nullptr) return "no node is registered";
    if (d.get(best->free) + 1e-9 < d.need) {
      return absl::StrFormat("no node has %g free %s for %s (most free: %g on %s)", d.need, d.unit,
                             replica, d.get(best->free), best->name);
    }
  }
  return absl::StrFormat("no single node has %g cpu cores, %d MiB and %d gpus free together for %s",
                         need.cpu, need.memory_mb, need.gpus, replica);
}

}  // namespace

int ChooseNode(const Res& need, const std::vector<NodeFree>& nodes, const std::string& exclude) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const NodeFree& n = nodes[i];
    if (n.name == exclude || !n.free.Fits(need)) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const NodeFree& b = nodes[best];
    if (FreeKey(n.free) > FreeKey(b.free) ||
        (FreeKey(n.free) == FreeKey(b.free) && n.name < b.name)) {
      best = i;
    }
  }
  return best;
}

absl::StatusOr<std::vector<std::string>> PlaceGang(const std::vector<ReplicaDemand>& demands,
                                                   std::vector<NodeFree> nodes) {
  // Place the largest demands first so that a big replica is not crowded out by small ones.
  std::vector<size_t> order(demands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return FreeKey(demands[a].need) > FreeKey(demands[b].need);
  });
  std::vector<std::string> result(demands.size());
  for (size_t i : order) {
    const ReplicaDemand& d = demands[i];
    const int best = ChooseNode(d.need, nodes);
    if (best < 0) {
      std::sort(nodes.begin(), nodes.end(),
                [](const NodeFree& a, const NodeFree& b) { return a.name < b.name; });
      return absl::ResourceExhaustedError(DescribeShortfall(d.replica, d.need, nodes));
    }
    nodes[best].free -= d.need;
    result[i] = nodes[best].name;
  }
  return result;
}

absl::Status CheckFitsLargestNode(const std::string& path, const Res& need,
                                  const std::vector<Node>& nodes) {
  if (nodes.empty()) return absl::OkStatus();  // nothing registered yet: the job waits
  for (const Node& n : nodes) {
    if (n.allocatable.Fits(need)) return absl::OkStatus();
  }
  std::vector<NodeFree> sizes;
  for (const Node& n : nodes) sizes.push_back({n.name, n.allocatable});
  std::string why = DescribeShortfall("one replica", need, sizes);
  absl::StrReplaceAll({{" free ", " allocatable "}}, &why);
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": no registered node is large enough: ", why));
}

}  // namespace trainctl::sched
