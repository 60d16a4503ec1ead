// Gang placement over clusters written as literals.
#include "scheduler/placement.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace trainctl::sched {
namespace {

TEST_CASE("PlaceGang spreads replicas over the nodes with the most free resources") {
  std::vector<NodeFree> nodes = {{"node-a", {4, 4096, 0}}, {"node-b", {4, 4096, 0}}};
  std::vector<ReplicaDemand> d = {{"chief-0", {1, 100, 0}},
                                  {"worker-0", {1, 100, 0}},
                                  {"worker-1", {1, 100, 0}},
                                  {"worker-2", {1, 100, 0}}};
  auto placed = PlaceGang(d, nodes);
  REQUIRE(placed.ok());
  CHECK(*placed == std::vector<std::string>{"node-a", "node-b", "node-a", "node-b"});
}

TEST_CASE("PlaceGang places the largest replica first, all or nothing") {
  std::vector<NodeFree> nodes = {{"node-a", {8, 8192, 2}}, {"node-b", {8, 8192, 4}}};
  std::vector<ReplicaDemand> d = {{"chief-0", {1, 100, 0}}, {"worker-0", {1, 100, 4}}};
  auto placed = PlaceGang(d, nodes);
  REQUIRE(placed.ok());
  CHECK((*placed)[1] == "node-b");

  std::vector<ReplicaDemand> too_big = {{"chief-0", {1, 100, 0}}, {"worker-0", {1, 100, 8}}};
  auto failed = PlaceGang(too_big, nodes);
  REQUIRE(failed.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(failed.status().message() ==
        "no node has 8 free gpus for worker-0 (most free: 4 on node-b)");
}

TEST_CASE("PlaceGang accounts for replicas of the same job") {
  std::vector<NodeFree> nodes = {{"node-a", {2, 1000, 0}}};
  std::vector<ReplicaDemand> d = {{"a", {1, 600, 0}}, {"b", {1, 600, 0}}};
  auto failed = PlaceGang(d, nodes);
  CHECK(failed.status().message() ==
        "no node has 600 free MiB of memory for b (most free: 400 on node-a)");
}

TEST_CASE("PlaceGang with fractional cpu") {
  std::vector<NodeFree> nodes = {{"node-a", {1, 1000, 0}}};
  std::vector<ReplicaDemand> d(10, ReplicaDemand{"r", {0.1, 0, 0}});
  CHECK(PlaceGang(d, nodes).ok());
}

TEST_CASE("PlaceGang skips a node out of ports, and the CAPACITY message names ports") {
  struct Row {
    const char* what;
    std::vector<NodeFree> nodes;
    std::vector<std::string> placed;  // empty: no room
    const char* message;
  };
  // chief-0 needs 2 ports (its own and the rendezvous port), worker-0 one.
  const std::vector<ReplicaDemand> d = {{"chief-0", {1, 100, 0}, 2}, {"worker-0", {1, 100, 0}, 1}};
  const Row rows[] = {
      {"room everywhere: spread as usual",
       {{"node-a", {4, 4096, 0}, 100}, {"node-b", {4, 4096, 0}, 100}},
       {"node-a", "node-b"},
       ""},
      {"node-a has the most cpu but no port: both go to node-b",
       {{"node-a", {8, 4096, 0}, 0}, {"node-b", {4, 4096, 0}, 3}},
       {"node-b", "node-b"},
       ""},
      {"node-a has one port: only the worker fits there",
       {{"node-a", {8, 4096, 0}, 1}, {"node-b", {4, 4096, 0}, 2}},
       {"node-b", "node-a"},
       ""},
      {"the gang's ports count together: 2 + 1 do not fit in 2",
       {{"node-a", {8, 4096, 0}, 2}},
       {},
       "no node has 1 free ports for worker-0 (most free: 0 on node-a)"},
      {"no node has 2 ports for the primary",
       {{"node-a", {8, 4096, 0}, 1}, {"node-b", {8, 4096, 0}, 1}},
       {},
       "no node has 2 free ports for chief-0 (most free: 1 on node-a)"},
      {"the node with ports has no cpu, the node with cpu no ports",
       {{"node-a", {8, 4096, 0}, 0}, {"node-b", {0.5, 4096, 0}, 10}},
       {},
       "no single node has 1 cpu cores, 100 MiB, 0 gpus and 2 ports free together for chief-0"},
      {"resources still come first in the message",
       {{"node-a", {0.5, 4096, 0}, 0}},
       {},
       "no node has 1 free cpu cores for chief-0 (most free: 0.5 on node-a)"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    auto placed = PlaceGang(d, row.nodes);
    if (row.placed.empty()) {
      REQUIRE(placed.status().code() == absl::StatusCode::kResourceExhausted);
      CHECK(placed.status().message() == row.message);
    } else {
      REQUIRE(placed.ok());
      CHECK(*placed == row.placed);
    }
  }
}

TEST_CASE("ChooseNode for a moving replica needs its ports on the new node") {
  const std::vector<NodeFree> nodes = {
      {"node-a", {4, 4096, 0}, 5}, {"node-b", {8, 4096, 0}, 0}, {"node-c", {2, 4096, 0}, 1}};
  CHECK(ChooseNode({"worker-1", {1, 100, 0}, 1}, nodes) == 0);  // node-b has no port
  CHECK(ChooseNode({"worker-1", {1, 100, 0}, 1}, nodes, "node-a") == 2);
  CHECK(ChooseNode({"chief-0", {1, 100, 0}, 2}, nodes, "node-a") == -1);
  Replica chief;
  chief.name = "chief-0";
  chief.rank = 0;
  chief.need = {1, 100, 0};
  Replica worker = chief;
  worker.name = "worker-0";
  worker.rank = 1;
  CHECK(ReplicaDemandOf(chief).ports == 2);
  CHECK(ReplicaDemandOf(worker).ports == 1);
  CHECK(ReplicaDemandOf(worker).replica == "worker-0");
  CHECK(ReplicaDemandOf(worker).need.memory_mb == 100);
}

TEST_CASE("CheckFitsLargestNode") {
  Node a;
  a.name = "node-a";
  a.allocatable = {16, 65536, 4};
  CHECK(CheckFitsLargestNode("p", {1, 1, 1}, {}).ok());  // nothing registered: wait
  CHECK(CheckFitsLargestNode("p", {16, 65536, 4}, {{a.name, a}}).ok());
  absl::Status s = CheckFitsLargestNode("workerPools[1].resources", {1, 1, 8}, {{a.name, a}});
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(s.message() ==
        "workerPools[1].resources: no registered node is large enough: no node has 8 "
        "allocatable gpus for one replica (most free: 4 on node-a)");
}

// What FreeIndex must agree with: ChooseNode over a copy of the nodes per replica.
absl::StatusOr<std::vector<std::string>> ReferencePlace(const std::vector<ReplicaDemand>& demands,
                                                        std::vector<NodeFree>* nodes) {
  std::vector<NodeFree> work = *nodes;
  std::vector<size_t> order(demands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Res& x = demands[a].need;
    const Res& y = demands[b].need;
    return std::make_tuple(x.gpus, x.memory_mb, x.cpu) >
           std::make_tuple(y.gpus, y.memory_mb, y.cpu);
  });
  std::vector<std::string> out(demands.size());
  for (size_t i : order) {
    const int best = ChooseNode(demands[i], work);
    if (best < 0) return absl::ResourceExhaustedError("no room");
    TakeFrom(&work[best], demands[i]);
    out[i] = work[best].name;
  }
  *nodes = std::move(work);
  return out;
}

TEST_CASE("FreeIndex places gang after gang as ChooseNode over copies would") {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<NodeFree> nodes;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      // Few distinct sizes, so that ties (broken by name) are common.
      nodes.push_back({absl::StrCat("node-", i),
                       {double(rng() % 3) * 2, int64_t(rng() % 3) * 1024, int64_t(rng() % 3)},
                       static_cast<int32_t>(rng() % 4)});
    }
    std::shuffle(nodes.begin(), nodes.end(), rng);
    std::vector<NodeFree> reference = nodes;
    FreeIndex index(nodes);
    for (int gang = 0; gang < 8; ++gang) {
      std::vector<ReplicaDemand> demands;
      const int replicas = 1 + static_cast<int>(rng() % 4);
      for (int r = 0; r < replicas; ++r) {
        demands.push_back({absl::StrCat("worker-", r),
                           {double(rng() % 3) * 0.5, int64_t(rng() % 3) * 256, int64_t(rng() % 2)},
                           r == 0 ? 2 : 1});
      }
      auto want = ReferencePlace(demands, &reference);
      auto got = index.PlaceGang(demands);
      INFO("round " << round << ", gang " << gang);
      REQUIRE(got.ok() == want.ok());
      if (got.ok()) CHECK(*got == *want);
      // What is left free is the same, node by node (the index keeps them by name).
      std::vector<NodeFree> sorted = reference;
      std::sort(sorted.begin(), sorted.end(),
                [](const NodeFree& a, const NodeFree& b) { return a.name < b.name; });
      REQUIRE(index.nodes().size() == sorted.size());
      for (size_t i = 0; i < sorted.size(); ++i) {
        CHECK(index.nodes()[i].name == sorted[i].name);
        CHECK(index.nodes()[i].free.cpu == sorted[i].free.cpu);
        CHECK(index.nodes()[i].free.memory_mb == sorted[i].free.memory_mb);
        CHECK(index.nodes()[i].free.gpus == sorted[i].free.gpus);
        CHECK(index.nodes()[i].free_ports == sorted[i].free_ports);
      }
      CHECK(index.Choose(demands[0], "node-0") == ChooseNode(demands[0], sorted, "node-0"));
    }
  }
}

TEST_CASE("FreeIndex's failed gang leaves the free resources and GPU indices as they were") {
  FreeIndex index({{"node-a", {4, 4096, 2}, 3, {0, 1}}, {"node-b", {4, 4096, 0}, 3}});
  std::vector<ReplicaDemand> d = {{"worker-0", {1, 100, 2}, 2}, {"worker-1", {1, 100, 2}, 1}};
  auto failed = index.PlaceGang(d);
  REQUIRE(failed.status().code() == absl::StatusCode::kResourceExhausted);
  // The message describes the cluster as the gang's first replica left it.
  CHECK(failed.status().message() ==
        "no node has 2 free gpus for worker-1 (most free: 0 on node-a)");
  CHECK(index.nodes()[0].free.gpus == 2);
  CHECK(index.nodes()[0].free_ports == 3);
  CHECK(index.nodes()[0].free_gpu_indices == std::vector<int32_t>{0, 1});
  auto placed = index.PlaceGang({d[0]});
  REQUIRE(placed.ok());
  CHECK(*placed == std::vector<std::string>{"node-a"});
  CHECK(index.nodes()[0].free_gpu_indices.empty());
}

}  // namespace
}  // namespace trainctl::sched
