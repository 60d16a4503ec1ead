// DomainIndex and topology placement over one FreeIndex: the domains' free totals stay equal to
// their nodes' free room while gangs are placed and undone, and gang after gang placed on one
// FreeIndex (the admission pass's way) lands where each gang would on a fresh index of the nodes
// as they are then (the domains recomputed from scratch). ChooseNode for a moving replica:
// SPREAD, BINPACK and the nodes it avoids.
#include "scheduler/domain_index.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/node_selection.h"
#include "scheduler/topology.h"

namespace trainctl::sched {
namespace {

NodeFree RackNode(const std::string& name, double cpu, const std::string& rack,
                  const std::string& gpu = "") {
  NodeFree n{name, {cpu, 1024, 0}, 16};
  auto labels = std::make_shared<NodeLabels>();
  if (!rack.empty()) (*labels)["topology.rack"] = rack;
  if (!gpu.empty()) (*labels)["gpu.type"] = gpu;
  n.labels = std::move(labels);
  return n;
}

// Each domain's total, recomputed from the index's nodes.
void CheckTotals(const DomainIndex& index, const std::vector<NodeFree>& nodes) {
  for (int d = 0; d < index.size(); ++d) {
    Res sum;
    for (int i : index.nodes(d)) {
      CHECK(index.DomainOf(i) == d);
      sum += nodes[i].free;
    }
    INFO("domain " << index.value(d));
    CHECK(index.free(d).cpu == Approx(sum.cpu));
    CHECK(index.free(d).memory_mb == sum.memory_mb);
    CHECK(index.free(d).gpus == sum.gpus);
  }
}

// A gang of `replicas` of `cpu` each, packed (or preferred) within racks; `gpu` selects nodes.
struct RackGang {
  v1::JobSpec spec;
  std::vector<ReplicaDemand> demands;
};
RackGang RackGangOf(int replicas, double cpu, bool pack, const std::string& gpu = "") {
  RackGang g;
  v1::WorkerPool* pool = g.spec.add_worker_pools();
  pool->set_name("worker");
  pool->set_replica_count(replicas);
  if (!gpu.empty()) (*pool->mutable_node_selector())["gpu.type"] = gpu;
  v1::Placement* p = g.spec.mutable_scheduling()->mutable_placement();
  if (pack) {
    p->set_pack_within("topology.rack");
  } else {
    p->set_prefer_within("topology.rack");
  }
  for (int i = 0; i < replicas; ++i) {
    g.demands.push_back({"worker-" + std::to_string(i), {cpu, 10, 0}, 1});
  }
  return g;
}

}  // namespace

TEST_CASE("DomainIndex groups nodes by label value, and a node without the label in none") {
  FreeIndex free({RackNode("n1", 4, "r2"), RackNode("n2", 8, "r1"), RackNode("n3", 2, "r2"),
                  RackNode("n4", 64, "")});
  const DomainIndex& racks = free.Domains("topology.rack");
  REQUIRE(racks.size() == 2);
  CHECK(racks.value(0) == "r1");
  CHECK(racks.value(1) == "r2");
  CHECK(racks.nodes(0) == std::vector<int>{1});
  CHECK(racks.nodes(1) == std::vector<int>{0, 2});
  CHECK(racks.free(1).cpu == Approx(6));
  CHECK(racks.DomainOf(3) == -1);
  CHECK(&free.Domains("topology.rack") == &racks);  // built once
  CHECK(free.Domains("topology.block").size() == 0);
}

TEST_CASE("DomainIndex totals follow placed gangs, and a failed gang changes nothing") {
  FreeIndex free({RackNode("n1", 4, "r1"), RackNode("n2", 4, "r1"), RackNode("n3", 8, "r2"),
                  RackNode("n4", 8, "r2"), RackNode("n5", 16, "")});
  const DomainIndex& racks = free.Domains("topology.rack");
  NodeMasks masks(&free.nodes());
  struct Row {
    const char* what;
    int replicas;
    double cpu;
    bool placed;
    double r1_after;
    double r2_after;
  };
  const Row rows[] = {
      {"4x1.5 in r1, the tightest", 4, 1.5, true, 2, 16},
      {"3x3 in r2", 3, 3, true, 2, 7},
      {"4x2 fits no rack: nothing taken", 4, 2, false, 2, 7},
      {"2x0.5 in r1", 2, 0.5, true, 1, 7},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    RackGang g = RackGangOf(row.replicas, row.cpu, /*pack=*/true);
    JobPlacement p = PlaceJob(g.spec, g.demands, PoolIndexOf(g.spec, g.demands), &free, &masks);
    CHECK(p.ok() == row.placed);
    CHECK(racks.free(0).cpu == Approx(row.r1_after));
    CHECK(racks.free(1).cpu == Approx(row.r2_after));
    CheckTotals(racks, free.nodes());
  }
}

TEST_CASE("gangs placed one after another on one FreeIndex land where a fresh index puts them") {
  // 3 racks of 4 nodes (8 cpu), half of them a100, and 2 unlabelled nodes.
  std::vector<NodeFree> nodes;
  for (int r = 0; r < 3; ++r) {
    for (int n = 0; n < 4; ++n) {
      nodes.push_back(RackNode("r" + std::to_string(r) + "n" + std::to_string(n), 8,
                               "r" + std::to_string(r), n % 2 == 0 ? "a100" : "v100"));
    }
  }
  nodes.push_back(RackNode("x1", 8, ""));
  nodes.push_back(RackNode("x2", 8, ""));
  FreeIndex shared(nodes);
  NodeMasks shared_masks(&shared.nodes());
  // Packed and preferred, with and without a selector, until the racks fill up.
  const std::vector<RackGang> gangs = {
      RackGangOf(4, 6, true),          RackGangOf(3, 2, false),
      RackGangOf(2, 5, true, "a100"),  RackGangOf(6, 4, true),
      RackGangOf(5, 3, false, "v100"), RackGangOf(8, 3, true),
      RackGangOf(10, 3, false),        RackGangOf(2, 7, true, "a100"),
      RackGangOf(4, 1, true),          RackGangOf(12, 2, false, "a100")};
  int placed = 0;
  for (size_t i = 0; i < gangs.size(); ++i) {
    INFO("gang " << i);
    const RackGang& g = gangs[i];
    FreeIndex fresh(shared.nodes());
    NodeMasks fresh_masks(&fresh.nodes());
    const std::vector<int> pools = PoolIndexOf(g.spec, g.demands);
    JobPlacement want = PlaceJob(g.spec, g.demands, pools, &fresh, &fresh_masks);
    JobPlacement got = PlaceJob(g.spec, g.demands, pools, &shared, &shared_masks);
    CHECK(got.ok() == want.ok());
    CHECK(got.nodes == want.nodes);
    CHECK(got.Reason() == want.Reason());
    placed += got.ok() ? 1 : 0;
    CheckTotals(shared.Domains("topology.rack"), shared.nodes());
  }
  CHECK(placed >= 5);  // the table exercises both outcomes
  CHECK(placed < static_cast<int>(gangs.size()));
}

TEST_CASE("ChooseNode: SPREAD the most free node, BINPACK the fullest that fits, never avoided") {
  const std::vector<NodeFree> nodes = {{"node-a", {8, 4096, 0}, 8},
                                       {"node-b", {2, 4096, 0}, 8},
                                       {"node-c", {4, 4096, 0}, 8},
                                       {"node-d", {2, 4096, 0}, 8},
                                       {"node-e", {1, 4096, 0}, 8}};
  const ReplicaDemand two{"worker-1", {2, 100, 0}, 1};
  struct Row {
    const char* what;
    bool binpack;
    std::set<std::string> avoid;
    std::string exclude;
    const char* chosen;  // "" for none
  };
  const Row rows[] = {
      {"SPREAD: the most free", false, {}, "", "node-a"},
      {"BINPACK: the fullest that fits, ties by name", true, {}, "", "node-b"},
      {"BINPACK: not the node it leaves", true, {}, "node-b", "node-d"},
      {"BINPACK: not an avoided node", true, {"node-b", "node-d"}, "", "node-c"},
      {"SPREAD: not an avoided node", false, {"node-a"}, "", "node-c"},
      {"none left", true, {"node-a", "node-b", "node-c", "node-d"}, "", ""},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const int i = ChooseNode(two, nodes, row.exclude, row.binpack, &row.avoid);
    CHECK((i < 0 ? std::string() : nodes[i].name) == row.chosen);
  }
}

}  // namespace trainctl::sched
