// Gang placement over clusters written as literals.
#include "scheduler/placement.h"

#include <catch2/catch.hpp>

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

TEST_CASE("CheckFitsLargestNode") {
  Node a;
  a.name = "node-a";
  a.allocatable = {16, 65536, 4};
  CHECK(CheckFitsLargestNode("p", {1, 1, 1}, {}).ok());  // nothing registered: wait
  CHECK(CheckFitsLargestNode("p", {16, 65536, 4}, {a}).ok());
  absl::Status s = CheckFitsLargestNode("workerPools[1].resources", {1, 1, 8}, {a});
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(s.message() ==
        "workerPools[1].resources: no registered node is large enough: no node has 8 "
        "allocatable gpus for one replica (most free: 4 on node-a)");
}

}  // namespace
}  // namespace trainctl::sched
