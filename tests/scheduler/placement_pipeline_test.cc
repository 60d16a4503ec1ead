// The placement pipeline (placement_pipeline.h): one cluster and one job through every caller —
// admission's pass, the queue's blockers, a move (and elastic growth and `resize`, which place a
// replica as a move does) — agreeing except where they differ on purpose; the what-if over
// released allocations; and the kinds' words.
#include "scheduler/placement_pipeline.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "scheduler/admission_queue.h"
#include "scheduler/node_registry.h"
#include "scheduler/queue_state.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

// Three nodes of 4 cpu: node-a and node-b in rack r1, node-c in rack r2; node-c has gpu.type=a100.
struct PipelineCluster {
  NodeRegistry nodes{NodePolicy{}};
  JobTable jobs{1};
  AdmissionQueue queue{Quota{}};
  Timers timers;

  PipelineCluster() {
    Effects fx;
    for (const auto& [name, rack] : {std::pair<const char*, const char*>{"node-a", "r1"},
                                     {"node-b", "r1"},
                                     {"node-c", "r2"}}) {
      v1::Register reg = testing::Reg(name);
      (*reg.mutable_labels())["topology.rack"] = rack;
      if (std::string(name) == "node-c") (*reg.mutable_labels())["gpu.type"] = "a100";
      nodes.Register(reg, kT0, &fx);
    }
  }
  // A window on `node` starting `in` after kT0, for an hour.
  void Window(const std::string& node, absl::Duration in) {
    v1::MaintenanceWindow w;
    *w.mutable_start_time() = ToProtoTime(kT0 + in);
    w.mutable_duration()->set_seconds(3600);
    w.set_reason("BIOS update");
    w.set_source("operator");
    Effects fx;
    REQUIRE(nodes.SetMaintenance(node, w, kT0, &fx).ok());
  }
};

// A QUEUED job of one pool "worker" with `replicas` replicas of `cpu` cpus, expected to run 2h.
Job WaitingJob(const std::string& id, int replicas, double cpu) {
  Job job;
  job.id = id;
  job.project = "p";
  job.create_time = kT0;
  job.queue_time = kT0;
  v1::WorkerPool* pool = job.spec.add_worker_pools();
  pool->set_name("worker");
  pool->set_replica_count(replicas);
  *job.spec.mutable_scheduling()->mutable_expected_duration() = MsToDuration(2 * 3'600'000);
  for (int i = 0; i < replicas; ++i) {
    Replica r;
    r.name = "worker-" + std::to_string(i);
    r.pool = "worker";
    r.rank = i;
    r.need = {cpu, 100, 0};
    job.replicas.push_back(std::move(r));
  }
  return job;
}

// What each caller says of the job: "" when placed, else the reason's kind.
struct Verdicts {
  std::string admission;  // AdmissionQueue::Pass
  std::vector<std::string> admitted_on;
  std::string blockers;  // BlockersOf: the placement blocker's kind, if any
  std::string move;      // worker-0 moving off node-a, the job started at kT0
  std::string move_to;
  std::string growth;  // worker-0 added back (elastic growth, resize): no node excluded
};

Verdicts Judge(PipelineCluster& c, Job job, absl::Time now, absl::Time started) {
  Verdicts v;
  const Job* stored = c.jobs.Insert(job);
  c.queue.Enqueue(*stored);
  // Blockers first: the pass would take the room.
  const std::shared_ptr<const QueueState> state = c.queue.State(c.jobs, c.nodes);
  for (const v1::Blocker& b : BlockersOf(*state, QueuedJobOf(*stored), now)) {
    if (b.kind() != "QUOTA" && b.kind() != "PRIORITY") v.blockers = b.kind();
  }
  // A move and a growth, as JobLifecycle::MoveTarget asks them.
  const std::vector<NodeWindow> windows = WindowsOf(c.nodes);
  const Node* from = c.nodes.Find("node-a");
  ReplicaRequest move;
  move.spec = &stored->spec;
  move.pool = &stored->spec.worker_pools(0);
  move.domain_of = &from->labels;
  move.demand = ReplicaDemandOf(stored->replicas[0]);
  move.exclude = "node-a";
  move.excluded = &stored->excluded_nodes;
  move.expected_end = ExpectedEnd(stored->spec, started, now);
  ReplicaPlacement moved = PlaceReplica(c.nodes.FreeBook(), windows, move);
  v.move = moved.ok() ? "" : BlockerWord(BlockerOf(moved.kind));
  v.move_to = moved.node;
  move.exclude.clear();
  ReplicaPlacement grown = PlaceReplica(c.nodes.FreeBook(), windows, move);
  v.growth = grown.ok() ? "" : BlockerWord(BlockerOf(grown.kind));
  // Admission.
  c.queue.Wake();
  AdmissionPlan plan = c.queue.Pass(c.jobs, &c.nodes, now, &c.timers);
  if (!plan.starts.empty()) v.admitted_on = plan.starts[0].nodes;
  for (const auto& [id, reason] : plan.reasons) v.admission = reason.substr(0, reason.find(':'));
  return v;
}

}  // namespace

TEST_CASE("pipeline: every caller agrees on one cluster and job, except where written down") {
  struct Row {
    const char* name;
    int replicas;
    double cpu;
    // Set up the cluster and the job.
    void (*setup)(PipelineCluster&, Job&);
    // The job started this long before now (moves count windows from the start).
    absl::Duration started_ago;
    Verdicts want;
  };
  auto none = [](PipelineCluster&, Job&) {};
  const Row rows[] = {
      {"fits: all place it",
       2,
       3,
       none,
       absl::ZeroDuration(),
       {"", {"node-a", "node-b"}, "", "", "node-b", ""}},
      {"too large for any node: CAPACITY; a move has no room either",
       1,
       5,
       none,
       absl::ZeroDuration(),
       {"CAPACITY", {}, "CAPACITY", "CAPACITY", "", "CAPACITY"}},
      // Deliberate: a move and a growth do not name the selector; they report no room.
      {"no node matches the selection: NODE_SELECTOR at admission and in blockers",
       1,
       1,
       [](PipelineCluster&, Job& j) {
         (*j.spec.mutable_worker_pools(0)->mutable_node_selector())["gpu.type"] = "h100";
       },
       absl::ZeroDuration(),
       {"NODE_SELECTOR", {}, "NODE_SELECTOR", "CAPACITY", "", "CAPACITY"}},
      {"packWithin a rack too small: TOPOLOGY; a move stays in its gang's rack",
       3,
       3,
       [](PipelineCluster&, Job& j) {
         j.spec.mutable_scheduling()->mutable_placement()->set_pack_within("topology.rack");
       },
       absl::ZeroDuration(),
       {"TOPOLOGY", {}, "TOPOLOGY", "", "node-b", ""}},
      {"only windowed nodes have room: MAINTENANCE everywhere",
       1,
       1,
       [](PipelineCluster& c, Job&) {
         for (const char* n : {"node-a", "node-b", "node-c"}) c.Window(n, absl::Hours(1));
       },
       absl::ZeroDuration(),
       {"MAINTENANCE", {}, "MAINTENANCE", "MAINTENANCE", "", "MAINTENANCE"}},
      // Deliberate: a move counts the expected end from the job's start; admission and blockers
      // from now.
      {"a job started 90m ago moves before a window in 3h; a new one would not start",
       1,
       1,
       [](PipelineCluster& c, Job&) {
         for (const char* n : {"node-a", "node-b", "node-c"}) c.Window(n, absl::Hours(3));
       },
       absl::Minutes(90),
       {"MAINTENANCE", {}, "MAINTENANCE", "", "node-b", ""}},
      // Deliberate: a move never goes back to the node it leaves; a growth may use any node.
      {"the best node is the one the replica leaves",
       1,
       1,
       [](PipelineCluster& c, Job&) {
         c.Window("node-b", absl::Hours(1));
         c.Window("node-c", absl::Hours(1));
       },
       absl::ZeroDuration(),
       {"", {"node-a"}, "", "MAINTENANCE", "", ""}},
  };
  for (const Row& row : rows) {
    SECTION(row.name) {
      PipelineCluster c;
      Job job = WaitingJob("j1", row.replicas, row.cpu);
      row.setup(c, job);
      const absl::Time now = kT0 + row.started_ago;
      const Verdicts got = Judge(c, std::move(job), now, kT0);
      CHECK(got.admission == row.want.admission);
      CHECK(got.admitted_on == row.want.admitted_on);
      CHECK(got.blockers == row.want.blockers);
      CHECK(got.move == row.want.move);
      CHECK(got.move_to == row.want.move_to);
      CHECK(got.growth == row.want.growth);
    }
  }
}

TEST_CASE("pipeline: admission and blockers word a shortfall off windowed nodes differently") {
  // Deliberate: admission reports the shortfall of its run off the windowed nodes, blockers the
  // one on every node. Here both runs fail, and the words name different nodes.
  PipelineCluster c;
  c.Window("node-a", absl::Hours(1));
  std::vector<ReplicaDemand> demands = {{"worker-0", {5, 100, 0}, 1}};
  FreeIndex book(c.nodes.FreeNodes());
  const std::vector<NodeWindow> windows = WindowsOf(c.nodes);
  PlacementPipeline pipeline(&book, &windows);
  GangRequest request{nullptr, &demands, kT0 + absl::Hours(2)};
  JobPlacement admission = pipeline.CheckGang(request);
  request.check = MaintenanceCheck::kShortfallFirst;
  JobPlacement blockers = pipeline.CheckGang(request);
  CHECK(admission.kind == PlacementKind::kCapacity);
  CHECK(blockers.kind == PlacementKind::kCapacity);
  CHECK(admission.missing.find("most free: 4 on node-b") != std::string::npos);
  CHECK(blockers.missing.find("most free: 4 on node-a") != std::string::npos);
}

TEST_CASE("pipeline: a job's excluded nodes are never used, by any caller") {
  {
    PipelineCluster c;
    Job job = WaitingJob("j", 2, 3);
    job.excluded_nodes = {"node-b"};
    Verdicts v = Judge(c, job, kT0, kT0);
    CHECK(v.admitted_on == std::vector<std::string>{"node-a", "node-c"});
    CHECK(v.blockers.empty());
    CHECK(v.move_to == "node-c");  // off node-a, never node-b
  }
  {
    // Three ranks of 3 cpu need three nodes: with node-b excluded, none can start.
    PipelineCluster c;
    Job job = WaitingJob("j", 3, 3);
    job.excluded_nodes = {"node-b"};
    Verdicts v = Judge(c, job, kT0, kT0);
    CHECK(v.admitted_on.empty());
    CHECK(v.admission == "CAPACITY");
    CHECK(v.blockers == "CAPACITY");
  }
  {
    // Topology: rack r1 without node-b no longer holds a 2-rank gang packed within a rack.
    PipelineCluster c;
    Job job = WaitingJob("j", 2, 3);
    job.spec.mutable_scheduling()->mutable_placement()->set_pack_within("topology.rack");
    job.excluded_nodes = {"node-b"};
    Verdicts v = Judge(c, job, kT0, kT0);
    CHECK(v.admitted_on.empty());
    CHECK(v.blockers == "TOPOLOGY");
    CHECK(v.move == "CAPACITY");  // worker-0 off node-a may only go to node-b, its rack's other
  }
  // One replica: the pipeline's own request, excluded nodes with the node it leaves.
  PipelineCluster c;
  FreeIndex book(c.nodes.FreeNodes());
  PlacementPipeline pipeline(&book, nullptr);
  v1::JobSpec spec;
  const std::vector<std::string> excluded = {"node-b", "node-c"};
  ReplicaRequest one;
  one.spec = &spec;
  one.demand = {"worker-0", {1, 100, 0}, 1};
  one.exclude = "node-a";
  one.excluded = &excluded;
  CHECK(pipeline.PlaceReplica(one).kind == PlacementKind::kCapacity);
  one.exclude.clear();
  CHECK(pipeline.PlaceReplica(one).node == "node-a");
  std::vector<ReplicaDemand> demands = {{"worker-0", {1, 100, 0}, 1}};
  GangRequest gang{nullptr, &demands};
  gang.excluded = &excluded;
  CHECK(pipeline.CheckGang(gang).nodes == std::vector<std::string>{"node-a"});
}

TEST_CASE("pipeline: CheckGang leaves the book as it was, PlaceGang takes the room") {
  PipelineCluster c;
  FreeIndex book(c.nodes.FreeNodes());
  PlacementPipeline pipeline(&book, nullptr);
  std::vector<ReplicaDemand> demands = {{"worker-0", {3, 100, 0}, 1}, {"worker-1", {3, 100, 0}, 1}};
  REQUIRE(pipeline.CheckGang({nullptr, &demands}).nodes ==
          std::vector<std::string>{"node-a", "node-b"});
  CHECK(book.nodes()[0].free.cpu == 4);
  CHECK(book.TakeTouched().empty());
  REQUIRE(pipeline.PlaceGang({nullptr, &demands}).ok());
  CHECK(book.nodes()[0].free.cpu == 1);
  CHECK(pipeline.CheckGang({nullptr, &demands}).nodes.empty());
}

TEST_CASE("pipeline: would the gang fit if these allocations were gone?") {
  PipelineCluster c;
  FreeIndex book(c.nodes.FreeNodes());
  PlacementPipeline pipeline(&book, nullptr);
  // Two running jobs fill node-a and node-b; node-c holds 1 cpu.
  std::vector<ReplicaDemand> running = {{"worker-0", {4, 100, 0}, 1}, {"worker-1", {4, 100, 0}, 1}};
  std::vector<ReplicaDemand> small = {{"worker-0", {3, 100, 0}, 1}};
  REQUIRE(pipeline.PlaceGang({nullptr, &running}).ok());
  REQUIRE(pipeline.PlaceGang({nullptr, &small}).nodes == std::vector<std::string>{"node-c"});
  const std::vector<NodeFree> before = book.nodes();

  std::vector<ReplicaDemand> want = {{"worker-0", {4, 100, 0}, 1}, {"worker-1", {2, 100, 0}, 1}};
  CHECK(pipeline.CheckGang({nullptr, &want}).kind == PlacementKind::kCapacity);
  // Without the job on node-a: worker-0 there, worker-1 still nowhere.
  const Allocation on_a{"node-a", running[0]};
  const Allocation on_b{"node-b", running[1]};
  const Allocation on_c{"node-c", small[0]};
  CHECK(pipeline.CheckGangWithout({nullptr, &want}, {on_a}).kind == PlacementKind::kCapacity);
  JobPlacement two = pipeline.CheckGangWithout({nullptr, &want}, {on_a, on_c});
  CHECK(two.nodes == std::vector<std::string>{"node-a", "node-c"});
  JobPlacement both = pipeline.CheckGangWithout({nullptr, &want}, {on_a, on_b});
  CHECK(both.nodes == std::vector<std::string>{"node-a", "node-b"});
  // An allocation on a node the book does not hold frees nothing.
  CHECK(!pipeline.CheckGangWithout({nullptr, &want}, {{"node-z", running[0]}}).ok());

  // The book is as it was, node for node, and nothing counts as touched.
  REQUIRE(book.nodes().size() == before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(book.nodes()[i].free.cpu == before[i].free.cpu);
    CHECK(book.nodes()[i].free_ports == before[i].free_ports);
  }
  book.TakeTouched();
  pipeline.CheckGangWithout({nullptr, &want}, {on_a, on_b});
  CHECK(book.TakeTouched().empty());
  CHECK(book.Choose(want[0]) == -1);  // its order is back too: nothing has 4 cpu free
}

TEST_CASE("pipeline: a what-if keeps topology domains current") {
  PipelineCluster c;
  FreeIndex book(c.nodes.FreeNodes());
  PlacementPipeline pipeline(&book, nullptr);
  v1::JobSpec spec;
  spec.add_worker_pools()->set_name("worker");
  spec.mutable_scheduling()->mutable_placement()->set_pack_within("topology.rack");
  std::vector<ReplicaDemand> fill = {{"worker-0", {4, 100, 0}, 1}};
  REQUIRE(pipeline.PlaceGang({nullptr, &fill}).nodes == std::vector<std::string>{"node-a"});
  std::vector<ReplicaDemand> gang = {{"worker-0", {4, 100, 0}, 1}, {"worker-1", {4, 100, 0}, 1}};
  CHECK(pipeline.CheckGang({&spec, &gang}).kind == PlacementKind::kTopology);
  CHECK(pipeline.CheckGangWithout({&spec, &gang}, {{"node-a", fill[0]}}).nodes ==
        std::vector<std::string>{"node-a", "node-b"});
  CHECK(pipeline.CheckGang({&spec, &gang}).kind == PlacementKind::kTopology);
}

TEST_CASE("pipeline: kinds have their words only in BlockerWord") {
  CHECK(std::string(BlockerWord(BlockerOf(PlacementKind::kCapacity))) == "CAPACITY");
  CHECK(std::string(BlockerWord(BlockerOf(PlacementKind::kNodeSelector))) == "NODE_SELECTOR");
  CHECK(std::string(BlockerWord(BlockerOf(PlacementKind::kTopology))) == "TOPOLOGY");
  CHECK(std::string(BlockerWord(BlockerOf(PlacementKind::kMaintenance))) == "MAINTENANCE");
  CHECK(std::string(BlockerWord(BlockerOf(PlacementKind::kNoNodes))) == "NO_NODES");
  CHECK(ReasonText(BlockerKind::kQuota, "x") == "QUOTA: x");
  CHECK(MakeBlocker(BlockerKind::kPriority, "m").kind() == "PRIORITY");
  JobPlacement p;
  p.kind = PlacementKind::kTopology;
  p.missing = "no topology.rack has room";
  CHECK(p.Reason() == "TOPOLOGY: no topology.rack has room");
}

}  // namespace trainctl::sched
