#include "scheduler/placement.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/index_list.h"

namespace trainctl::sched {
namespace {

// Larger is "more free"; compared lexicographically.
auto FreeKey(const Res& r) { return std::make_tuple(r.gpus, r.memory_mb, r.cpu); }

// What keeps `demand` off every node that `for_each` offers: for_each(visit) calls visit(const
// NodeFree&) for each of them, in order, so that a pass's failed placements copy no node.
template <typename ForEach>
std::string DescribeShortfallOf(const ReplicaDemand& demand, ForEach for_each) {
  // Name the first dimension that no node can satisfy, with the best offer for it.
  struct Dim {
    const char* unit;
    double need;
    double (*get)(const NodeFree&);
  };
  const Res& need = demand.need;
  const Dim dims[] = {
      {"gpus", static_cast<double>(need.gpus),
       [](const NodeFree& n) { return double(n.free.gpus); }},
      {"MiB of memory", static_cast<double>(need.memory_mb),
       [](const NodeFree& n) { return double(n.free.memory_mb); }},
      {"cpu cores", need.cpu, [](const NodeFree& n) { return n.free.cpu; }},
      {"ports", static_cast<double>(demand.ports),
       [](const NodeFree& n) { return double(n.free_ports); }},
  };
  for (const Dim& d : dims) {
    const NodeFree* best = nullptr;
    for_each([&](const NodeFree& n) {
      if (best == nullptr || d.get(n) > d.get(*best)) best = &n;
    });
    if (best == nullptr) return "no node is registered";
    if (d.get(*best) + 1e-9 < d.need) {
      // For GPUs, which ones are free, while that is known.
      std::string which;
      if (d.unit == std::string("gpus") && !best->free_gpu_indices.empty()) {
        which = absl::StrCat(", GPUs ", FormatIndexList(best->free_gpu_indices));
      }
      return absl::StrFormat("no node has %g free %s for %s (most free: %g on %s%s)", d.need,
                             d.unit, demand.replica, d.get(*best), best->name, which);
    }
  }
  // Every dimension fits somewhere, but not all on one node. When some node has room for the
  // resources, ports are what it lacks.
  bool room = false;
  for_each([&](const NodeFree& n) { room |= n.free.Fits(need); });
  if (room) {
    return absl::StrFormat(
        "no single node has %g cpu cores, %d MiB, %d gpus and %d ports free together for %s",
        need.cpu, need.memory_mb, need.gpus, demand.ports, demand.replica);
  }
  return absl::StrFormat("no single node has %g cpu cores, %d MiB and %d gpus free together for %s",
                         need.cpu, need.memory_mb, need.gpus, demand.replica);
}

std::string DescribeShortfall(const ReplicaDemand& demand, const std::vector<NodeFree>& nodes) {
  return DescribeShortfallOf(demand, [&nodes](auto visit) {
    for (const NodeFree& n : nodes) visit(n);
  });
}

bool Fits(const NodeFree& n, const ReplicaDemand& d) {
  return n.free.Fits(d.need) && n.free_ports >= d.ports;
}

}  // namespace

void TakeFrom(NodeFree* node, const ReplicaDemand& demand) {
  node->free -= demand.need;
  node->free_ports -= demand.ports;
  if (demand.need.gpus > 0) node->free_gpu_indices.clear();
}

void GiveBackTo(NodeFree* node, const ReplicaDemand& demand) {
  node->free += demand.need;
  node->free_ports += demand.ports;
  // Which GPUs come back is not known here: the messages leave them out.
  if (demand.need.gpus > 0) node->free_gpu_indices.clear();
}

ReplicaDemand ReplicaDemandOf(const Replica& r) { return {r.name, r.need, PortsNeeded(r.rank)}; }

int ChooseNode(const ReplicaDemand& demand, const std::vector<NodeFree>& nodes,
               const std::string& exclude, bool binpack, const std::set<std::string>* avoid) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const NodeFree& n = nodes[i];
    if (n.name == exclude || !Fits(n, demand)) continue;
    if (avoid != nullptr && avoid->count(n.name) > 0) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const NodeFree& b = nodes[best];
    const bool better =
        binpack ? FreeKey(n.free) < FreeKey(b.free) : FreeKey(n.free) > FreeKey(b.free);
    if (better || (FreeKey(n.free) == FreeKey(b.free) && n.name < b.name)) best = i;
  }
  return best;
}

absl::StatusOr<std::vector<std::string>> PlaceGang(const std::vector<ReplicaDemand>& demands,
                                                   std::vector<NodeFree> nodes) {
  FreeIndex index(std::move(nodes));
  return index.PlaceGang(demands);
}

FreeIndex::FreeIndex(std::vector<NodeFree> nodes) : nodes_(std::move(nodes)) {
  auto by_name = [](const NodeFree& a, const NodeFree& b) { return a.name < b.name; };
  if (!std::is_sorted(nodes_.begin(), nodes_.end(), by_name)) {
    std::sort(nodes_.begin(), nodes_.end(), by_name);
  }
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) Insert(i);
}

FreeIndex::Key FreeIndex::KeyOf(int index) const {
  const Res& f = nodes_[index].free;
  return {-f.gpus, -f.memory_mb, -f.cpu, index};
}

void FreeIndex::Insert(int index) {
  const NodeFree& n = nodes_[index];
  order_.insert(KeyOf(index));
  cpu_.insert(n.free.cpu);
  memory_.insert(n.free.memory_mb);
  ports_.insert(n.free_ports);
  for (auto& [key, domains] : domains_) domains->Update(index, Res{}, n.free);
}

void FreeIndex::Erase(int index) {
  const NodeFree& n = nodes_[index];
  order_.erase(KeyOf(index));
  cpu_.erase(cpu_.find(n.free.cpu));
  memory_.erase(memory_.find(n.free.memory_mb));
  ports_.erase(ports_.find(n.free_ports));
  for (auto& [key, domains] : domains_) domains->Update(index, n.free, Res{});
}

int FreeIndex::IndexOf(const std::string& name) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), name,
                             [](const NodeFree& n, const std::string& v) { return n.name < v; });
  return it != nodes_.end() && it->name == name ? static_cast<int>(it - nodes_.begin()) : -1;
}

void FreeIndex::Reset(int index, NodeFree node) {
  Erase(index);
  nodes_[index] = std::move(node);
  Insert(index);
}

std::vector<int> FreeIndex::TakeTouched() {
  std::vector<int> touched(touched_.begin(), touched_.end());
  touched_.clear();
  return touched;
}

const DomainIndex& FreeIndex::Domains(const std::string& key) {
  std::unique_ptr<DomainIndex>& domains = domains_[key];
  if (domains == nullptr) domains = std::make_unique<DomainIndex>(key, nodes_);
  return *domains;
}

int FreeIndex::Choose(const ReplicaDemand& demand, const std::string& exclude,
                      const std::set<std::string>& avoid) const {
  if (nodes_.empty()) return -1;
  // No node has more of any resource than the largest free amount of it.
  const Res most{*cpu_.rbegin(), *memory_.rbegin(), -std::get<0>(*order_.begin())};
  if (!most.Fits(demand.need) || *ports_.rbegin() < demand.ports) return -1;
  for (const Key& key : order_) {
    const int i = std::get<3>(key);
    if (nodes_[i].name == exclude || avoid.count(nodes_[i].name) > 0) continue;
    if (Fits(nodes_[i], demand)) return i;
  }
  return -1;
}

int FreeIndex::ChooseAmong(const ReplicaDemand& demand, const std::vector<char>* eligible,
                           const std::vector<int>* within, bool binpack,
                           const std::set<std::string>* avoid) const {
  if (eligible == nullptr && within == nullptr && !binpack) {
    return avoid == nullptr ? Choose(demand) : Choose(demand, "", *avoid);
  }
  if (nodes_.empty()) return -1;
  const Res most{*cpu_.rbegin(), *memory_.rbegin(), -std::get<0>(*order_.begin())};
  if (!most.Fits(demand.need) || *ports_.rbegin() < demand.ports) return -1;
  auto allowed = [&](int i) {
    return (eligible == nullptr || (i < static_cast<int>(eligible->size()) && (*eligible)[i])) &&
           (avoid == nullptr || avoid->count(nodes_[i].name) == 0) && Fits(nodes_[i], demand);
  };
  if (within != nullptr) {
    // Only the domain's nodes: the best of them by the policy, ties by index (name).
    int best = -1;
    for (int i : *within) {
      if (!allowed(i)) continue;
      if (best < 0 || (binpack ? FreeKey(nodes_[i].free) < FreeKey(nodes_[best].free)
                               : FreeKey(nodes_[i].free) > FreeKey(nodes_[best].free))) {
        best = i;
      }
    }
    return best;
  }
  if (!binpack) {
    for (const Key& key : order_) {
      if (allowed(std::get<3>(key))) return std::get<3>(key);
    }
    return -1;
  }
  // Least free first; among equally free nodes, the first by name.
  int best = -1;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const int i = std::get<3>(*it);
    if (best >= 0 && FreeKey(nodes_[i].free) != FreeKey(nodes_[best].free)) break;
    if (allowed(i)) best = i;
  }
  return best;
}

absl::StatusOr<std::vector<std::string>> FreeIndex::PlaceGang(
    const std::vector<ReplicaDemand>& demands, const GangOptions& options) {
  // Place the largest demands first so that a big replica is not crowded out by small ones.
  std::vector<size_t> order(demands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return FreeKey(demands[a].need) > FreeKey(demands[b].need);
  });
  std::vector<std::string> result(demands.size());
  std::vector<std::pair<int, NodeFree>> taken;  // each node as it was before, to undo
  auto give_back = [&] {
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
      Erase(it->first);
      nodes_[it->first] = std::move(it->second);
      Insert(it->first);
    }
  };
  for (size_t i : order) {
    const ReplicaDemand& d = demands[i];
    const std::vector<char>* eligible = i < options.eligible.size() ? options.eligible[i] : nullptr;
    const int best = ChooseAmong(d, eligible, options.within, options.binpack, options.avoid);
    if (best < 0) {
      // The nodes this demand could use, visited in place: no node is copied.
      auto usable = [&](auto visit) {
        auto consider = [&](int n) {
          if ((eligible == nullptr || (n < static_cast<int>(eligible->size()) && (*eligible)[n])) &&
              (options.avoid == nullptr || options.avoid->count(nodes_[n].name) == 0)) {
            visit(nodes_[n]);
          }
        };
        if (options.within != nullptr) {
          for (int n : *options.within) consider(n);
        } else {
          for (int n = 0; n < static_cast<int>(nodes_.size()); ++n) consider(n);
        }
      };
      absl::Status missing = absl::ResourceExhaustedError(DescribeShortfallOf(d, usable));
      give_back();
      return missing;
    }
    taken.push_back({best, nodes_[best]});
    if (!options.dry_run) touched_.insert(best);
    Erase(best);
    TakeFrom(&nodes_[best], d);
    Insert(best);
    result[i] = nodes_[best].name;
  }
  if (options.dry_run) give_back();
  return result;
}

absl::Status CheckFitsLargestNode(const std::string& path, const Res& need,
                                  const std::map<std::string, Node>& nodes) {
  if (nodes.empty()) return absl::OkStatus();  // nothing registered yet: the job waits
  for (const auto& [name, n] : nodes) {
    if (n.allocatable.Fits(need)) return absl::OkStatus();
  }
  std::vector<NodeFree> sizes;
  for (const auto& [name, n] : nodes) sizes.push_back({n.name, n.allocatable});
  std::string why = DescribeShortfall({"one replica", need}, sizes);
  absl::StrReplaceAll({{" free ", " allocatable "}}, &why);
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": no registered node is large enough: ", why));
}

}  // namespace trainctl::sched
