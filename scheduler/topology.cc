#include "scheduler/topology.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trainctl::sched {
namespace {

constexpr size_t kMaxTopologyKeyLength = 253;

// One value of the topology label: its nodes (a mask over the FreeIndex) and their free total.
struct TopologyDomain {
  std::string value;
  std::vector<char> mask;
  Res free;
};

auto TopologyFreeKey(const Res& r) { return std::make_tuple(r.gpus, r.memory_mb, r.cpu); }

std::vector<TopologyDomain> DomainsOf(const std::string& key, const std::vector<NodeFree>& nodes,
                                      const std::vector<const std::vector<char>*>& eligible) {
  std::map<std::string, TopologyDomain> by_value;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].labels == nullptr) continue;
    auto it = nodes[i].labels->find(key);
    if (it == nodes[i].labels->end()) continue;
    // A node no pool of the job may use adds nothing to a domain's room.
    const bool usable = eligible.empty() ||
                        std::any_of(eligible.begin(), eligible.end(),
                                    [&](const auto* m) { return m == nullptr || (*m)[i] != 0; });
    if (!usable) continue;
    TopologyDomain& d = by_value[it->second];
    if (d.mask.empty()) {
      d.value = it->second;
      d.mask.resize(nodes.size());
    }
    d.mask[i] = 1;
    d.free += nodes[i].free;
  }
  std::vector<TopologyDomain> out;
  out.reserve(by_value.size());
  for (auto& [value, d] : by_value) out.push_back(std::move(d));
  return out;
}

// Why no single domain holds the gang.
std::string DescribeNoDomain(const std::string& key, const std::vector<TopologyDomain>& domains,
                             const Res& total, size_t replicas) {
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
                             d.unit, replicas, best->value, d.get(best->free));
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
  }
  return out;
}

std::vector<NodeFree> NodesForMove(const v1::JobSpec& spec, const v1::WorkerPool* pool,
                                   const NodeLabels* from_labels, std::vector<NodeFree> free) {
  const std::string& key = spec.scheduling().placement().pack_within();
  const bool select = pool != nullptr && HasNodeSelection(*pool);
  if (!select && key.empty()) return free;
  const std::string* domain = nullptr;
  if (!key.empty() && from_labels != nullptr) {
    auto it = from_labels->find(key);
    if (it != from_labels->end()) domain = &it->second;
  }
  auto keep = [&](const NodeFree& n) {
    if (select && !MatchesNodeSelection(*pool, n.labels.get())) return false;
    if (key.empty()) return true;
    if (n.labels == nullptr) return false;
    auto it = n.labels->find(key);
    return it != n.labels->end() && (domain == nullptr || it->second == *domain);
  };
  free.erase(std::remove_if(free.begin(), free.end(), [&](const NodeFree& n) { return !keep(n); }),
             free.end());
  return free;
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
                      const std::set<std::string>* avoid) {
  JobPlacement out;
  GangOptions options;
  options.avoid = avoid;
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
      out.kind = "NODE_SELECTOR";
      out.missing = absl::StrCat("no schedulable node matches workerPools[", p, "] (", pool.name(),
                                 ") node selection ", DescribeNodeSelection(pool));
      return out;
    }
    options.eligible.push_back(mask);
  }
  auto place = [&](const std::vector<char>* within) {
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
    std::vector<TopologyDomain> domains = DomainsOf(key, free->nodes(), options.eligible);
    // The tightest fit first: the domain with the least free room that holds the gang leaves
    // the least behind, and the larger domains stay whole for larger gangs.
    std::sort(domains.begin(), domains.end(), [](const TopologyDomain& a, const TopologyDomain& b) {
      return std::make_tuple(TopologyFreeKey(a.free), a.value) <
             std::make_tuple(TopologyFreeKey(b.free), b.value);
    });
    for (const TopologyDomain& d : domains) {
      if (!d.free.Fits(total)) continue;
      placed = place(&d.mask);
      if (placed.ok()) break;
    }
    if (!placed.ok() && !placement.pack_within().empty()) {
      out.kind = "TOPOLOGY";
      out.missing = DescribeNoDomain(key, domains, total, demands.size());
      return out;
    }
    if (!placed.ok()) {
      // Best effort: as few domains as possible, the largest first, then any node at all.
      std::vector<char> some(free->nodes().size(), 0);
      Res room;
      for (auto d = domains.rbegin(); d != domains.rend() && !placed.ok(); ++d) {
        for (size_t i = 0; i < some.size(); ++i) some[i] |= d->mask[i];
        room += d->free;
        if (d != domains.rbegin() && room.Fits(total)) placed = place(&some);
      }
      if (!placed.ok()) placed = place(nullptr);
    }
  }
  if (!placed.ok()) {
    out.kind = "CAPACITY";
    out.missing = std::string(placed.status().message());
    return out;
  }
  out.nodes = *std::move(placed);
  return out;
}

}  // namespace trainctl::sched
