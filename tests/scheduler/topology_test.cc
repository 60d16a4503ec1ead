// Node selection by label and topology-aware gang placement as table tests: selectors and
// affinity rules against labelled nodes, domain choice (packWithin's tightest fit, preferWithin's
// fewest domains), SPREAD and BINPACK inside a domain, the NODE_SELECTOR and TOPOLOGY blockers,
// and the same through an AdmissionQueue pass on a fake clock.
#include "scheduler/topology.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "scheduler/admission_queue.h"
#include "scheduler/node_registry.h"
#include "scheduler/node_selection.h"
#include "scheduler/queue_state.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

// A node of `cpu` free cores (no memory, no gpus, plenty of ports) with `labels`.
NodeFree LabelledNode(const std::string& name, double cpu, NodeLabels labels) {
  NodeFree n{name, {cpu, 0, 0}, 16};
  n.labels = std::make_shared<const NodeLabels>(std::move(labels));
  return n;
}

v1::WorkerPool PoolWith(
    std::map<std::string, std::string> selector,
    std::vector<std::tuple<std::string, std::string, std::vector<std::string>>> affinity = {}) {
  v1::WorkerPool pool;
  pool.set_name("worker");
  for (const auto& [k, v] : selector) (*pool.mutable_node_selector())[k] = v;
  for (const auto& [key, op, values] : affinity) {
    v1::NodeSelectorRequirement* r = pool.add_node_affinity();
    r->set_key(key);
    r->set_operator_(op);
    for (const std::string& v : values) r->add_values(v);
  }
  return pool;
}

// A spec of one pool "worker" with `replicas` replicas, and its demands of `cpu` each.
struct Gang {
  v1::JobSpec spec;
  std::vector<ReplicaDemand> demands;
};
Gang GangOf(int replicas, double cpu, v1::WorkerPool pool = PoolWith({})) {
  Gang g;
  pool.set_name("worker");
  pool.set_replica_count(replicas);
  *g.spec.add_worker_pools() = pool;
  for (int i = 0; i < replicas; ++i) {
    g.demands.push_back({"worker-" + std::to_string(i), {cpu, 0, 0}, 1});
  }
  return g;
}

JobPlacement Place(const Gang& g, std::vector<NodeFree> nodes) {
  FreeIndex free(std::move(nodes));
  NodeMasks masks(&free.nodes());
  return PlaceJob(g.spec, g.demands, PoolIndexOf(g.spec, g.demands), &free, &masks);
}

TEST_CASE("MatchesNodeSelection: nodeSelector is exact, nodeAffinity In NotIn Exists") {
  struct Row {
    const char* what;
    v1::WorkerPool pool;
    NodeLabels labels;
    bool match;
  };
  const std::vector<Row> rows = {
      {"no rules, any node", PoolWith({}), {}, true},
      {"selector matches", PoolWith({{"gpu.type", "a100"}}), {{"gpu.type", "a100"}}, true},
      {"selector other value", PoolWith({{"gpu.type", "a100"}}), {{"gpu.type", "h100"}}, false},
      {"selector label missing", PoolWith({{"gpu.type", "a100"}}), {}, false},
      {"In listed", PoolWith({}, {{"zone", "In", {"a", "b"}}}), {{"zone", "b"}}, true},
      {"In not listed", PoolWith({}, {{"zone", "In", {"a", "b"}}}), {{"zone", "c"}}, false},
      {"In without label", PoolWith({}, {{"zone", "In", {"a"}}}), {}, false},
      {"NotIn listed", PoolWith({}, {{"spot", "NotIn", {"yes"}}}), {{"spot", "yes"}}, false},
      {"NotIn without label", PoolWith({}, {{"spot", "NotIn", {"yes"}}}), {}, true},
      {"Exists", PoolWith({}, {{"ib", "Exists", {}}}), {{"ib", "x"}}, true},
      {"Exists without label", PoolWith({}, {{"ib", "Exists", {}}}), {{"other", "x"}}, false},
      {"all rules together",
       PoolWith({{"gpu.type", "a100"}}, {{"ib", "Exists", {}}}),
       {{"gpu.type", "a100"}},
       false},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(MatchesNodeSelection(row.pool, &row.labels) == row.match);
  }
  CHECK_FALSE(MatchesNodeSelection(PoolWith({{"gpu.type", "a100"}}), nullptr));
}

TEST_CASE("ValidateNodeSelection and ValidatePlacement name the bad field") {
  struct Row {
    v1::WorkerPool pool;
    const char* message;  // "" for OK
  };
  const std::vector<Row> rows = {
      {PoolWith({{"gpu.type", "a100"}}, {{"zone", "In", {"a"}}}), ""},
      {PoolWith({{"gpu type", "a100"}}),
       "workerPools[1].nodeSelector[\"gpu type\"]: label keys and values must be 1..253 "
       "characters without spaces, ',' or '='; got \"gpu type\": \"a100\""},
      {PoolWith({}, {{"zone", "Gt", {"1"}}}),
       "workerPools[1].nodeAffinity[0].operator: must be In, NotIn or Exists; got \"Gt\""},
      {PoolWith({}, {{"zone", "In", {}}}),
       "workerPools[1].nodeAffinity[0].values: must list at least one value for operator In"},
      {PoolWith({}, {{"zone", "Exists", {"a"}}}),
       "workerPools[1].nodeAffinity[0].values: must be empty for operator Exists"},
      {PoolWith({}, {{"", "Exists", {}}}),
       "workerPools[1].nodeAffinity[0].key: must be a node label key of 1..253 characters "
       "without spaces, ',' or '='; got \"\""},
  };
  for (const Row& row : rows) {
    absl::Status s = ValidateNodeSelection("workerPools[1]", row.pool);
    if (std::string(row.message).empty()) {
      CHECK(s.ok());
    } else {
      CHECK(s.code() == absl::StatusCode::kInvalidArgument);
      CHECK(s.message() == row.message);
    }
  }
  v1::Placement both;
  both.set_pack_within("topology.rack");
  both.set_prefer_within("topology.block");
  CHECK(ValidatePlacement(both).code() == absl::StatusCode::kInvalidArgument);
  v1::Placement spaced;
  spaced.set_pack_within("topology rack");
  CHECK(ValidatePlacement(spaced).message().rfind("scheduling.placement.packWithin: ", 0) == 0);
}

TEST_CASE("PlaceJob never puts a selected pool on a node without the label") {
  const std::vector<NodeFree> nodes = {LabelledNode("big-h100", 64, {{"gpu.type", "h100"}}),
                                       LabelledNode("small-a100", 4, {{"gpu.type", "a100"}}),
                                       LabelledNode("plain", 64, {})};
  JobPlacement two = Place(GangOf(2, 2, PoolWith({{"gpu.type", "a100"}})), nodes);
  REQUIRE(two.ok());
  CHECK(two.nodes == std::vector<std::string>{"small-a100", "small-a100"});

  JobPlacement three = Place(GangOf(3, 2, PoolWith({{"gpu.type", "a100"}})), nodes);
  CHECK(three.kind == PlacementKind::kCapacity);
  CHECK(three.missing == "no node has 2 free cpu cores for worker-2 (most free: 0 on small-a100)");

  JobPlacement none = Place(GangOf(1, 1, PoolWith({{"gpu.type", "v100"}})), nodes);
  CHECK(none.kind == PlacementKind::kNodeSelector);
  CHECK(none.Reason() ==
        "NODE_SELECTOR: no schedulable node matches workerPools[0] (worker) node selection "
        "gpu.type=v100");
}

TEST_CASE("packWithin: one domain, the tightest that fits, else a TOPOLOGY blocker") {
  // r1: 2 nodes of 4 cpu (8); r2: 2 nodes of 8 cpu (16); r3: 1 node of 2 cpu; one unlabelled.
  const std::vector<NodeFree> racks = {
      LabelledNode("n1", 4, {{"topology.rack", "r1"}}),
      LabelledNode("n2", 4, {{"topology.rack", "r1"}}),
      LabelledNode("n3", 8, {{"topology.rack", "r2"}}),
      LabelledNode("n4", 8, {{"topology.rack", "r2"}}),
      LabelledNode("n5", 2, {{"topology.rack", "r3"}}),
      LabelledNode("n6", 64, {}),
  };
  struct Row {
    const char* what;
    int replicas;
    double cpu;
    std::vector<std::string> nodes;  // empty: blocked
    const char* reason;
  };
  const std::vector<Row> rows = {
      {"fits r3 alone: the tightest", 2, 1, {"n5", "n5"}, ""},
      {"r1 is the tightest that fits 4x2", 4, 2, {"n1", "n2", "n1", "n2"}, ""},
      {"only r2 fits 4x3", 4, 3, {"n3", "n4", "n3", "n4"}, ""},
      {"no rack has 20 cpu",
       4,
       5,
       {},
       "TOPOLOGY: no topology.rack has 20 free cpu for 4 replicas (best: r2 with 16)"},
      {"r2 has 16 cpu but not 3 replicas of 5 on its nodes",
       3,
       5,
       {},
       "TOPOLOGY: no topology.rack has room for the 3 replicas together on its nodes"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    Gang g = GangOf(row.replicas, row.cpu);
    g.spec.mutable_scheduling()->mutable_placement()->set_pack_within("topology.rack");
    JobPlacement p = Place(g, racks);
    if (row.nodes.empty()) {
      CHECK_FALSE(p.ok());
      CHECK(p.Reason() == row.reason);
    } else {
      CHECK(p.nodes == row.nodes);
    }
  }
  Gang g = GangOf(1, 1);
  g.spec.mutable_scheduling()->mutable_placement()->set_pack_within("topology.block");
  CHECK(Place(g, racks).Reason() == "TOPOLOGY: no schedulable node has the label topology.block");
}

TEST_CASE("packWithin: a partly used rack is the tighter fit") {
  // Both racks are 2 nodes of 8 cpu; r1 has 6 cpu in use on n1.
  const std::vector<NodeFree> nodes = {
      LabelledNode("n1", 2, {{"topology.rack", "r1"}}),
      LabelledNode("n2", 8, {{"topology.rack", "r1"}}),
      LabelledNode("n3", 8, {{"topology.rack", "r2"}}),
      LabelledNode("n4", 8, {{"topology.rack", "r2"}}),
  };
  Gang g = GangOf(4, 2);
  g.spec.mutable_scheduling()->mutable_placement()->set_pack_within("topology.rack");
  JobPlacement p = Place(g, nodes);
  REQUIRE(p.ok());
  CHECK(p.nodes == std::vector<std::string>{"n2", "n2", "n2", "n1"});
}

TEST_CASE("preferWithin: one domain when one fits, else as few as possible") {
  const std::vector<NodeFree> nodes = {
      LabelledNode("a1", 4, {{"topology.block", "a"}}),
      LabelledNode("b1", 6, {{"topology.block", "b"}}),
      LabelledNode("c1", 2, {{"topology.block", "c"}}),
  };
  struct Row {
    int replicas;
    std::set<std::string> used;
  };
  const std::vector<Row> rows = {
      {2, {"c1"}},        // c is the tightest single block
      {5, {"b1"}},        // only b holds 5
      {7, {"a1", "b1"}},  // b and a, the two largest, not c
      {11, {"a1", "b1", "c1"}},
  };
  for (const Row& row : rows) {
    INFO(row.replicas << " replicas");
    Gang g = GangOf(row.replicas, 1);
    g.spec.mutable_scheduling()->mutable_placement()->set_prefer_within("topology.block");
    JobPlacement p = Place(g, nodes);
    REQUIRE(p.ok());
    CHECK(std::set<std::string>(p.nodes.begin(), p.nodes.end()) == row.used);
  }
  Gang too_many = GangOf(13, 1);
  too_many.spec.mutable_scheduling()->mutable_placement()->set_prefer_within("topology.block");
  CHECK(Place(too_many, nodes).kind == PlacementKind::kCapacity);
}

TEST_CASE("policy BINPACK fills the least free node, SPREAD the most free") {
  const std::vector<NodeFree> nodes = {LabelledNode("n1", 8, {}), LabelledNode("n2", 3, {}),
                                       LabelledNode("n3", 8, {})};
  Gang spread = GangOf(2, 1);
  CHECK(Place(spread, nodes).nodes == std::vector<std::string>{"n1", "n3"});
  Gang binpack = GangOf(4, 1);
  binpack.spec.mutable_scheduling()->mutable_placement()->set_policy(v1::PLACEMENT_POLICY_BINPACK);
  CHECK(Place(binpack, nodes).nodes == std::vector<std::string>{"n2", "n2", "n2", "n1"});
}

TEST_CASE("NodesForMove keeps a moving replica on selected nodes of its gang's domain") {
  const std::vector<NodeFree> nodes = {
      LabelledNode("n1", 4, {{"topology.rack", "r1"}, {"gpu.type", "a100"}}),
      LabelledNode("n2", 4, {{"topology.rack", "r1"}}),
      LabelledNode("n3", 4, {{"topology.rack", "r2"}, {"gpu.type", "a100"}}),
      LabelledNode("n4", 4, {}),
  };
  auto names = [](const std::vector<NodeFree>& v) {
    std::vector<std::string> out;
    for (const NodeFree& n : v) out.push_back(n.name);
    return out;
  };
  const NodeLabels from = {{"topology.rack", "r1"}};
  v1::JobSpec plain;
  CHECK(names(NodesForMove(plain, nullptr, &from, nodes)).size() == 4);
  const v1::WorkerPool a100 = PoolWith({{"gpu.type", "a100"}});
  CHECK(names(NodesForMove(plain, &a100, &from, nodes)) == std::vector<std::string>{"n1", "n3"});
  v1::JobSpec packed;
  packed.mutable_scheduling()->mutable_placement()->set_pack_within("topology.rack");
  CHECK(names(NodesForMove(packed, nullptr, &from, nodes)) == std::vector<std::string>{"n1", "n2"});
  CHECK(names(NodesForMove(packed, &a100, &from, nodes)) == std::vector<std::string>{"n1"});
}

TEST_CASE("BlockersOf names the TOPOLOGY a packed gang waits for") {
  QueueState state;
  state.free = {LabelledNode("n1", 3, {{"topology.rack", "r1"}}),
                LabelledNode("n2", 2, {{"topology.rack", "r2"}})};
  Gang g = GangOf(4, 1);
  g.spec.mutable_scheduling()->mutable_placement()->set_pack_within("topology.rack");
  QueuedJob job;
  job.id = "j-1";
  job.project = "p";
  job.demands = g.demands;
  job.placement_spec = PlacementSpecOf(g.spec);
  REQUIRE(job.placement_spec != nullptr);
  bool named = false;
  for (const v1::Blocker& b : BlockersOf(state, job, kT0)) {
    named |=
        b.kind() == "TOPOLOGY" &&
        b.message() == "TOPOLOGY: no topology.rack has 4 free cpu for 4 replicas (best: r1 with 3)";
  }
  CHECK(named);
  CHECK(PlacementSpecOf(GangOf(1, 1).spec) == nullptr);  // asks nothing of nodes
}

TEST_CASE("AdmissionQueue: a selector no node satisfies keeps the job queued with its blocker") {
  JobTable jobs{1};
  NodeRegistry registry{NodePolicy{}};
  AdmissionQueue queue{Quota{}};
  Timers timers;
  Effects fx;
  v1::Register plain = testing::Reg("node-a");
  v1::Register a100 = testing::Reg("node-b");
  (*a100.mutable_labels())["gpu.type"] = "a100";
  registry.Register(plain, kT0, &fx);
  registry.Register(a100, kT0, &fx);

  auto add = [&](const std::string& id, const std::string& gpu_type) {
    Job job;
    job.id = id;
    job.project = "p";
    job.create_time = kT0;
    job.queue_time = kT0;
    job.policy.placement_timeout_ms = 300000;
    v1::WorkerPool* pool = job.spec.add_worker_pools();
    pool->set_name("chief");
    (*pool->mutable_node_selector())["gpu.type"] = gpu_type;
    Replica r;
    r.name = "chief-0";
    r.pool = "chief";
    r.need = {1, 100, 0};
    job.replicas.push_back(r);
    queue.Enqueue(*jobs.Insert(std::move(job)));
  };
  add("j-h100", "h100");
  add("j-a100", "a100");
  queue.Wake();
  AdmissionPlan plan = queue.Pass(jobs, &registry, kT0, &timers);
  REQUIRE(plan.starts.size() == 1);
  CHECK(plan.starts[0].job_id == "j-a100");
  CHECK(plan.starts[0].nodes == std::vector<std::string>{"node-b"});
  REQUIRE(plan.reasons.size() == 1);
  CHECK(plan.reasons[0].first == "j-h100");
  CHECK(plan.reasons[0].second ==
        "NODE_SELECTOR: no schedulable node matches workerPools[0] (chief) node selection "
        "gpu.type=h100 (even with the cluster idle)");
  // It waits (placementTimeout) like any job the idle cluster cannot hold, holding back nobody.
  CHECK(plan.stockouts.empty());
  CHECK(timers.next() == kT0 + absl::Minutes(5));
  // Then the retry engine hears of it, as of a cluster too small.
  queue.Wake();
  plan = queue.Pass(jobs, &registry, kT0 + absl::Minutes(5), &timers);
  REQUIRE(plan.stockouts.size() == 1);
  CHECK(plan.stockouts[0].job_id == "j-h100");
  CHECK(plan.stockouts[0].missing ==
        "no schedulable node matches workerPools[0] (chief) node selection gpu.type=h100");
}

TEST_CASE("a pool with an image goes only to nodes that can run images, and its reason says so") {
  v1::WorkerPool imaged = PoolWith({});
  imaged.set_image("registry:5000/team/train:1.4");
  std::vector<NodeFree> nodes = {LabelledNode("plain", 64, {}),
                                 LabelledNode("a100", 64, {{"gpu.type", "a100"}}),
                                 LabelledNode("said-no", 64, {{kImagesLabel, "false"}})};
  JobPlacement none = Place(GangOf(1, 1, imaged), nodes);
  CHECK(none.kind == PlacementKind::kNodeSelector);
  CHECK(none.Reason() ==
        "NODE_SELECTOR: no schedulable node can run images (label trainctl.io/images=true) for "
        "workerPools[0] (worker)");
  // The same pool without its image runs anywhere.
  v1::WorkerPool plain = imaged;
  plain.clear_image();
  CHECK(Place(GangOf(1, 1, plain), nodes).ok());

  nodes.push_back(LabelledNode("runs-images", 4, {{kImagesLabel, "true"}}));
  JobPlacement two = Place(GangOf(2, 2, imaged), nodes);
  REQUIRE(two.ok());
  CHECK(two.nodes == std::vector<std::string>{"runs-images", "runs-images"});
  JobPlacement three = Place(GangOf(3, 2, imaged), nodes);
  CHECK(three.kind == PlacementKind::kCapacity);

  // Its own selection on top: the image's rule is named after it.
  v1::WorkerPool selected = PoolWith({{"gpu.type", "a100"}});
  selected.set_image("team/train");
  JobPlacement neither = Place(GangOf(1, 1, selected), nodes);
  CHECK(neither.kind == PlacementKind::kNodeSelector);
  CHECK(neither.Reason() ==
        "NODE_SELECTOR: no schedulable node matches workerPools[0] (worker) node selection "
        "gpu.type=a100 and can run images (label trainctl.io/images=true)");
  // With no node that can run images at all, that is what it says.
  nodes.pop_back();
  CHECK(Place(GangOf(1, 1, selected), nodes).Reason() ==
        "NODE_SELECTOR: no schedulable node can run images (label trainctl.io/images=true) for "
        "workerPools[0] (worker)");

  // The rule in the pieces the other callers use.
  const NodeLabels yes = {{kImagesLabel, "true"}};
  const NodeLabels no = {{"gpu.type", "a100"}};
  CHECK(HasNodeSelection(imaged));
  CHECK(MatchesNodeSelection(imaged, &yes));
  CHECK_FALSE(MatchesNodeSelection(imaged, &no));
  CHECK_FALSE(MatchesNodeSelection(imaged, nullptr));
  CHECK(MatchesNodeSelection(plain, nullptr));
  CHECK(DescribeNodeSelection(imaged).empty());
}

TEST_CASE("an image pool's placement spec, blockers and moves keep to nodes that run images") {
  Gang g = GangOf(1, 1);
  g.spec.mutable_worker_pools(0)->set_image("team/train");
  std::shared_ptr<const v1::JobSpec> placement = PlacementSpecOf(g.spec);
  REQUIRE(placement != nullptr);  // an image asks something of nodes
  CHECK(placement->worker_pools(0).image() == "team/train");

  QueueState state;
  state.free = {LabelledNode("n1", 8, {})};
  QueuedJob job;
  job.id = "j-1";
  job.project = "p";
  job.demands = g.demands;
  job.placement_spec = placement;
  bool named = false;
  for (const v1::Blocker& b : BlockersOf(state, job, kT0)) {
    named |= b.kind() == "NODE_SELECTOR" &&
             b.message() ==
                 "NODE_SELECTOR: no schedulable node can run images (label "
                 "trainctl.io/images=true) for workerPools[0] (worker)";
  }
  CHECK(named);

  const std::vector<NodeFree> nodes = {LabelledNode("n1", 8, {}),
                                       LabelledNode("n2", 8, {{kImagesLabel, "true"}})};
  std::vector<std::string> kept;
  for (const NodeFree& n : NodesForMove(g.spec, &g.spec.worker_pools(0), nullptr, nodes)) {
    kept.push_back(n.name);
  }
  CHECK(kept == std::vector<std::string>{"n2"});
}

}  // namespace
}  // namespace trainctl::sched
