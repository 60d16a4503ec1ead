#include "scheduler/topology.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trainctl::sched {
namespace {

constexpr size_t kMaxTopologyKeyLength = 253;

// A domain of the topology label as one job sees it: the free room of the nodes its pools may use.
struct TopologyDomain {
  int id = 0;  // in the DomainIndex
  Res free;
};

auto TopologyFreeKey(const Res& r) { return std::make_tuple(r.gpus, r.memory_mb, r.cpu); }

// Whether some pool of the job may use node `i` (no masks: every pool may use every node).
bool UsableByJob(int i, const std::vector<const std::vector<char>*>& eligible) {
  return eligible.empty() || std::any_of(eligible.begin(), eligible.end(), [&](const auto* m) {
           return m == nullptr || (*m)[i] != 0;
         });
}

bool RestrictsNodes(const std::vector<const std::vector<char>*>& eligible) {
  return std::any_of(eligible.begin(), eligible.end(), [](const auto* m) { return m != nullptr; });
}

// Domain d as the job sees it, or nullopt when none of its nodes is usable by the job. A node no
// pool of the job may use adds nothing to a domain's room. O(1) for a job without node
// selections (the index keeps each domain's total), else O(the domain's nodes).
std::optional<TopologyDomain> DomainFor(const DomainIndex& index, int d,
                                        const std::vector<NodeFree>& nodes,
                                        const std::vector<const std::vector<char>*>& eligible) {
  if (!RestrictsNodes(eligible)) return TopologyDomain{d, index.free(d)};
  TopologyDomain out{d, Res{}};
  bool any = false;
  for (int i : index.nodes(d)) {
    if (!UsableByJob(i, eligible)) continue;
    any = true;
    out.free += nodes[i].free;
  }
  if (!any) return std::nullopt;
  return out;
}

// Every domain with a node the job may use, by value.
std::vector<TopologyDomain> AllDomains(const DomainIndex& index, const std::vector<NodeFree>& nodes,
                                       const std::vector<const std::vector<char>*>& eligible) {
  std::vector<TopologyDomain> out;
  out.reserve(index.size());
  for (int d = 0; d < index.size(); ++d) {
    if (std::optional<TopologyDomain> dom = DomainFor(index, d, nodes, eligible)) {
      out.push_back(*dom);
    }
  }
  return out;
}

// Why no single domain holds the gang.
std::string DescribeNoDomain(const DomainIndex& index, const std::vector<TopologyDomain>& domains,
                             const Res& total, size_t replicas) {
  const std::string& key = index.key();
  if (domains.empty()) return absl::StrCat("no schedulable node has the label ", key);
  struct Dim {
    const char* unit;
    double need;
    double (*get)(const Res&);
  };
  const Dim dims[] = {
      {"gpus", double(total.gpus), [](const Res& r) { return double(r.gpus); }},
      {"MiB of memory", double(total.memory_mb), [](const Res& r) { return double(r.memory_mb); }},
      {"cpu", total.cpu, [](const Res& r) { return r.cpu; }},
  };
  for (const Dim& d : dims) {
    const TopologyDomain* best = &domains[0];
    for (const TopologyDomain& dom : domains) {
      if (d.get(dom.free) > d.get(best->free)) best = &dom;
    }
    if (d.get(best->free) + 1e-9 < d.need) {
      return absl::StrFormat("no %s has %g free %s for %d replicas (best: %s with %g)", key, d.need,
                             d.unit, replicas, index.value(best->id), d.get(best->free));
    }
  }
  return absl::StrFormat("no %s has room for the %d replicas together on its nodes", key, replicas);
}

}  // namespace

absl::Status ValidatePlacement(const v1::Placement& p) {
  for (const auto& [field, value] : {std::make_pair("packWithin", &p.pack_within()),
                                     std::make_pair("preferWithin", &p.prefer_within())}) {
    if (value->size() > kMaxTopologyKeyLength ||
        std::any_of(value->begin(), value->end(), [](char c) {
          return static_cast<unsigned char>(c) <= ' ' || c == ',' || c == '=';
        })) {
      return absl::InvalidArgumentError(absl::StrCat(
          "scheduling.placement.", field,
          ": must be a node label key (e.g. topology.rack) of at "
          "most ",
          kMaxTopologyKeyLength, " characters without spaces, ',' or '='; got \"", *value, "\""));
    }
  }
  if (!p.pack_within().empty() && !p.prefer_within().empty()) {
    return absl::InvalidArgumentError(
        "scheduling.placement.preferWithin: set packWithin (required) or preferWithin (best "
        "effort), not both");
  }
  return absl::OkStatus();
}

bool HasPlacementConstraints(const v1::JobSpec& spec) {
  const v1::Placement& p = spec.scheduling().placement();
  if (!p.pack_within().empty() || !p.prefer_within().empty() ||
      p.policy() == v1::PLACEMENT_POLICY_BINPACK) {
    return true;
  }
  return std::any_of(spec.worker_pools().begin(), spec.worker_pools().end(),
                     [](const v1::WorkerPool& pool) { return HasNodeSelection(pool); });
}

std::shared_ptr<const v1::JobSpec> PlacementSpecOf(const v1::JobSpec& spec) {
  if (!HasPlacementConstraints(spec)) return nullptr;
  auto out = std::make_shared<v1::JobSpec>();
  *out->mutable_scheduling()->mutable_placement() = spec.scheduling().placement();
  for (const v1::WorkerPool& pool : spec.worker_pools()) {
    v1::WorkerPool* p = out->add_worker_pools();
    p->set_name(pool.name());
    *p->mutable_node_selector() = pool.node_selector();
    *p->mutable_node_affinity() = pool.node_affinity();
    // A pool with an image runs on nodes that can run images only (node_selection.h).
    p->set_image(pool.image());
  }
  return out;
}

namespace {

// Which nodes a moving replica may go to: its pool's node selection and, with packWithin, the
// domain of the node its gang runs in.
class MoveFilter {
 public:
  MoveFilter(const v1::JobSpec& spec, const v1::WorkerPool* pool, const NodeLabels* from_labels)
      : key_(spec.scheduling().placement().pack_within()),
        pool_(pool != nullptr && HasNodeSelection(*pool) ? pool : nullptr) {
    if (!key_.empty() && from_labels != nullptr) {
      auto it = from_labels->find(key_);
      if (it != from_labels->end()) domain_ = &it->second;
    }
  }
  // Whether it keeps every node.
  bool All() const { return pool_ == nullptr && key_.empty(); }
  bool Keeps(const NodeFree& n) const {
    if (pool_ != nullptr && !MatchesNodeSelection(*pool_, n.labels.get())) return false;
    if (key_.empty()) return true;
    if (n.labels == nullptr) return false;
    auto it = n.labels->find(key_);
    return it != n.labels->end() && (domain_ == nullptr || it->second == *domain_);
  }

 private:
  const std::string& key_;
  const v1::WorkerPool* pool_;
  const std::string* domain_ = nullptr;
};

}  // namespace

std::vector<NodeFree> NodesForMove(const v1::JobSpec& spec, const v1::WorkerPool* pool,
                                   const NodeLabels* from_labels, std::vector<NodeFree> free) {
  const MoveFilter filter(spec, pool, from_labels);
  if (filter.All()) return free;
  free.erase(
      std::remove_if(free.begin(), free.end(), [&](const NodeFree& n) { return !filter.Keeps(n); }),
      free.end());
  return free;
}

std::vector<char> MoveMask(const v1::JobSpec& spec, const v1::WorkerPool* pool,
                           const NodeLabels* from_labels, const std::vector<NodeFree>& nodes,
                           const std::string& exclude) {
  const MoveFilter filter(spec, pool, from_labels);
  std::vector<char> mask(nodes.size(), 1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    mask[i] = nodes[i].name != exclude && (filter.All() || filter.Keeps(nodes[i]));
  }
  return mask;
}

std::vector<int> PoolIndexOf(const v1::JobSpec& spec, const std::vector<ReplicaDemand>& demands) {
  std::vector<int> out;
  out.reserve(demands.size());
  for (const ReplicaDemand& d : demands) {
    int found = -1;
    for (int p = 0; p < spec.worker_pools_size() && found < 0; ++p) {
      const std::string& name = spec.worker_pools(p).name();
      if (d.replica.size() > name.size() && d.replica.compare(0, name.size(), name) == 0 &&
          d.replica[name.size()] == '-' &&
          d.replica.find('-', name.size() + 1) == std::string::npos) {
        found = p;
      }
    }
    out.push_back(found);
  }
  return out;
}

JobPlacement PlaceJob(const v1::JobSpec& spec, const std::vector<ReplicaDemand>& demands,
                      const std::vector<int>& pool_of, FreeIndex* free, NodeMasks* masks,
                      const std::set<std::string>* avoid, bool dry_run) {
  JobPlacement out;
  GangOptions options;
  options.avoid = avoid;
  options.dry_run = dry_run;
  options.binpack = spec.scheduling().placement().policy() == v1::PLACEMENT_POLICY_BINPACK;
  for (size_t i = 0; i < demands.size(); ++i) {
    const int p = i < pool_of.size() ? pool_of[i] : -1;
    if (p < 0 || p >= spec.worker_pools_size()) {
      options.eligible.push_back(nullptr);
      continue;
    }
    const v1::WorkerPool& pool = spec.worker_pools(p);
    const std::vector<char>* mask = masks->For(pool);
    if (mask != nullptr && NodeMasks::None(*mask)) {
      out.kind = PlacementKind::kNodeSelector;
      out.missing = NoNodeMatches(p, pool, free->nodes());
      return out;
    }
    options.eligible.push_back(mask);
  }
  auto place = [&](const std::vector<int>* within) {
    options.within = within;
    return free->PlaceGang(demands, options);
  };
  const v1::Placement& placement = spec.scheduling().placement();
  const std::string& key =
      placement.pack_within().empty() ? placement.prefer_within() : placement.pack_within();
  absl::StatusOr<std::vector<std::string>> placed = absl::UnknownError("not placed");
  if (key.empty()) {
    placed = place(nullptr);
  } else {
    Res total;
    for (const ReplicaDemand& d : demands) total += d.need;
    const DomainIndex& index = free->Domains(key);
    // The domains that can hold the gang: a domain's total is an upper bound of the room the
    // job's pools may use there, so the others are skipped without a look at their nodes.
    std::vector<TopologyDomain> fitting;
    for (int d = 0; d < index.size(); ++d) {
      if (!index.free(d).Fits(total)) continue;
      std::optional<TopologyDomain> dom = DomainFor(index, d, free->nodes(), options.eligible);
      if (dom && dom->free.Fits(total)) fitting.push_back(*dom);
    }
    // The tightest fit first: the domain with the least free room that holds the gang leaves
    // the least behind, and the larger domains stay whole for larger gangs.
    std::sort(
        fitting.begin(), fitting.end(), [&](const TopologyDomain& a, const TopologyDomain& b) {
          return std::make_tuple(TopologyFreeKey(a.free), a.id) <
                 std::make_tuple(TopologyFreeKey(b.free), b.id);  // ids follow the values' order
        });
    for (const TopologyDomain& d : fitting) {
      placed = place(&index.nodes(d.id));
      if (placed.ok()) break;
    }
    if (!placed.ok() && !placement.pack_within().empty()) {
      out.kind = PlacementKind::kTopology;
      out.missing = DescribeNoDomain(index, AllDomains(index, free->nodes(), options.eligible),
                                     total, demands.size());
      return out;
    }
    if (!placed.ok()) {
      // Best effort: as few domains as possible, the largest first, then any node at all.
      std::vector<TopologyDomain> domains = AllDomains(index, free->nodes(), options.eligible);
      std::sort(domains.begin(), domains.end(),
                [&](const TopologyDomain& a, const TopologyDomain& b) {
                  return std::make_tuple(TopologyFreeKey(a.free), a.id) >
                         std::make_tuple(TopologyFreeKey(b.free), b.id);
                });
      std::vector<int> some;
      Res room;
      for (auto d = domains.begin(); d != domains.end() && !placed.ok(); ++d) {
        const std::vector<int>& members = index.nodes(d->id);
        const size_t before = some.size();
        some.insert(some.end(), members.begin(), members.end());
        std::inplace_merge(some.begin(), some.begin() + before, some.end());
        room += d->free;
        if (d != domains.begin() && room.Fits(total)) placed = place(&some);
      }
      if (!placed.ok()) placed = place(nullptr);
    }
  }
  if (!placed.ok()) {
    out.kind = PlacementKind::kCapacity;
    out.missing = std::string(placed.status().message());
    return out;
  }
  out.nodes = *std::move(placed);
  return out;
}

}  // namespace trainctl::sched
