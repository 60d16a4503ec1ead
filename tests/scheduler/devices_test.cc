// GPUs as devices: which ones a replica gets (device_pool.h), and through the core with a fake
// clock, that replicas own disjoint devices, keep them over in-place restarts, give them back
// when they end, and that a job waits naming the free devices when too few are free.
#include <catch2/catch.hpp>
#include <set>

#include "model/model_proto.h"
#include "scheduler/core.h"
#include "scheduler/device_pool.h"
#include "scheduler/launch_env.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

v1::GpuDevice Gpu(int32_t index, int32_t numa = -1, int32_t nvlink = -1) {
  v1::GpuDevice d;
  d.set_index(index);
  d.set_minor(index);
  d.set_numa_node(numa);
  d.set_nvlink_group(nvlink);
  return d;
}

std::vector<v1::GpuDevice> Gpus(std::vector<int32_t> indices, int32_t numa = -1) {
  std::vector<v1::GpuDevice> out;
  for (int32_t i : indices) out.push_back(Gpu(i, numa));
  return out;
}

std::vector<int32_t> Indices(const v1::LaunchReplica& l) {
  return {l.gpu_devices().begin(), l.gpu_devices().end()};
}

TEST_CASE("devices are chosen contiguous, within one NUMA node and NVLink group when known",
          "[devices]") {
  SECTION("without topology: the lowest contiguous run") {
    CHECK(ChooseDevices(Gpus({0, 1, 2, 3, 4, 5, 6, 7}), 4) == std::vector<int32_t>{0, 1, 2, 3});
    // 1 and 3 are held: 4-7 is the first run of four.
    CHECK(ChooseDevices(Gpus({0, 2, 4, 5, 6, 7}), 4) == std::vector<int32_t>{4, 5, 6, 7});
    // No run of three: the tightest span.
    CHECK(ChooseDevices(Gpus({0, 3, 5, 6, 9}), 3) == std::vector<int32_t>{3, 5, 6});
    CHECK(ChooseDevices(Gpus({0, 1}), 0).empty());
  }
  SECTION("one NUMA node, the one with fewest free devices that fits") {
    std::vector<v1::GpuDevice> free = Gpus({0, 1, 2, 3}, 0);
    for (v1::GpuDevice& d : Gpus({5, 6}, 1)) free.push_back(d);
    CHECK(ChooseDevices(free, 2) == std::vector<int32_t>{5, 6});  // leaves node 0's four whole
    CHECK(ChooseDevices(free, 3) == std::vector<int32_t>{0, 1, 2});
    // Larger than any NUMA node: any devices, tightest span.
    CHECK(ChooseDevices(free, 5) == std::vector<int32_t>{0, 1, 2, 3, 5});
  }
  SECTION("an NVLink group before a NUMA node") {
    // 2 and 4 share NVLink across NUMA nodes; 0 and 1 share a NUMA node only.
    std::vector<v1::GpuDevice> free = {Gpu(0, 0), Gpu(1, 0), Gpu(2, 0, 2), Gpu(4, 1, 2)};
    CHECK(ChooseDevices(free, 2) == std::vector<int32_t>{2, 4});
  }
}

TEST_CASE("a device pool holds each device for one replica", "[devices]") {
  DevicePool pool(Gpus({0, 1, 2, 3}));
  CHECK(pool.free() == 4);
  std::optional<std::vector<int32_t>> a = pool.Allocate(3, "j-1/chief-0");
  REQUIRE(a);
  CHECK(*a == std::vector<int32_t>{0, 1, 2});
  CHECK_FALSE(pool.Allocate(2, "j-2/chief-0"));  // one left
  CHECK(pool.free() == 1);
  CHECK_FALSE(pool.Reserve({2, 3}, "j-2/chief-0"));  // 2 is held: all or none
  CHECK_FALSE(pool.InUse(3));
  CHECK_FALSE(pool.Reserve({3, 3}, "j-2/chief-0"));
  CHECK_FALSE(pool.Reserve({9}, "j-2/chief-0"));
  pool.SetRun(*a, "j-1/1/chief-0/0");
  CHECK(pool.devices()[1].holder() == "j-1/chief-0");
  CHECK(pool.devices()[1].run_id() == "j-1/1/chief-0/0");
  pool.Release({1});
  CHECK(pool.FreeIndices() == std::vector<int32_t>{1, 3});
  CHECK(pool.devices()[1].run_id().empty());
  CHECK(pool.Reserve({1, 3}, "j-2/chief-0"));
  CHECK(pool.free() == 0);

  // The agent registers again with one GPU gone: the other holds stay.
  pool.SetDevices(Gpus({0, 1, 2}));
  CHECK(pool.used() == 3);
  CHECK(pool.devices()[0].holder() == "j-1/chief-0");
}

// One node with `gpus` synthetic GPUs, in a core with a fake clock.
struct GpuCluster {
  Core core{TestOptions(7)};
  int64_t now = 1'000'000;
  ~GpuCluster() { CheckUsageOnExit(core); }

  explicit GpuCluster(int gpus, int nodes = 1) {
    Effects fx;
    for (int i = 0; i < nodes; ++i) {
      core.AgentRegistered(Reg(i == 0 ? "node-a" : "node-b", 32, 65536, gpus), FromMs(now), &fx);
    }
  }
  // Submits a job and runs the scheduler; returns its id and the launches sent.
  std::string Submit(const v1::JobSpec& spec, std::vector<v1::LaunchReplica>* launches) {
    Effects fx;
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, FromMs(now), &fx);
    REQUIRE(job.ok());
    const std::string id = (*job)->id;
    core.Schedule(FromMs(now), &fx);
    *launches = Launches(fx);
    for (const v1::LaunchReplica& l : *launches) {
      Effects started;
      core.ReplicaStarted(core.FindJob(id)->FindReplica(l.replica_name())->node,
                          Started(l.run_id()), FromMs(now), &started);
    }
    return id;
  }
};

TEST_CASE("two 4-GPU jobs on one 8-GPU node get disjoint devices", "[devices]") {
  GpuCluster c(8);
  std::vector<v1::LaunchReplica> a, b;
  c.Submit(Spec(0, 1, 100, 4), &a);
  c.Submit(Spec(0, 1, 100, 4), &b);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  CHECK(Indices(a[0]) == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(Indices(b[0]) == std::vector<int32_t>{4, 5, 6, 7});
  CHECK(a[0].env().at("CUDA_VISIBLE_DEVICES") == "0,1,2,3");
  CHECK(a[0].env().at("NVIDIA_VISIBLE_DEVICES") == "0,1,2,3");
  CHECK(a[0].env().at("TRAINCTL_GPUS") == "0,1,2,3");
  CHECK(a[0].env().at("CUDA_DEVICE_ORDER") == "PCI_BUS_ID");
  CHECK(b[0].env().at("CUDA_VISIBLE_DEVICES") == "4,5,6,7");

  // The node's view names each device's holder and run.
  absl::StatusOr<v1::Node> node = c.core.GetNode("node-a");
  REQUIRE(node.ok());
  REQUIRE(node->gpu_devices_size() == 8);
  CHECK(node->gpu_devices(0).holder() == a[0].job_id() + "/chief-0");
  CHECK(node->gpu_devices(0).run_id() == a[0].run_id());
  CHECK(node->gpu_devices(7).run_id() == b[0].run_id());
}

TEST_CASE("a replica without GPUs sees none", "[devices]") {
  GpuCluster c(8);
  std::vector<v1::LaunchReplica> l;
  c.Submit(Spec(0, 1, 100, 0), &l);
  REQUIRE(l.size() == 1);
  CHECK(l[0].gpu_devices().empty());
  CHECK(l[0].env().at("CUDA_VISIBLE_DEVICES").empty());
  CHECK(l[0].env().at("NVIDIA_VISIBLE_DEVICES") == "void");
}

TEST_CASE("an in-place restart keeps the replica's devices", "[devices]") {
  GpuCluster c(8);
  std::vector<v1::LaunchReplica> first, other;
  c.Submit(Spec(0, 1, 100, 2), &other);  // holds 0-1
  const std::string id = c.Submit(Spec(0, 1, 100, 4), &first);
  REQUIRE(Indices(first[0]) == std::vector<int32_t>{2, 3, 4, 5});
  Effects fx;
  v1::ReplicaExited crash = ExitedSignal(first[0].run_id(), 6);  // SIGABRT: transient
  c.core.ReplicaExited("node-a", crash, FromMs(c.now), &fx);
  c.now += 60'000;  // past any backoff
  c.core.Tick(FromMs(c.now), &fx);
  std::vector<v1::LaunchReplica> again = Launches(fx);
  REQUIRE(again.size() == 1);
  CHECK(again[0].restart() == 1);
  CHECK(Indices(again[0]) == std::vector<int32_t>{2, 3, 4, 5});
  CHECK(c.core.FindJob(id)->replicas[0].gpu_devices == std::vector<int32_t>{2, 3, 4, 5});
}

TEST_CASE("devices are released when a job ends and a waiting job gets them", "[devices]") {
  GpuCluster c(8);
  std::vector<v1::LaunchReplica> big, small, waiting;
  const std::string big_id = c.Submit(Spec(0, 1, 100, 5), &big);  // 0-4
  c.Submit(Spec(0, 1, 100, 2), &small);                           // 5-6
  REQUIRE(Indices(small[0]) == std::vector<int32_t>{5, 6});
  const std::string id = c.Submit(Spec(0, 1, 100, 4), &waiting);
  CHECK(waiting.empty());
  const Job* job = c.core.FindJob(id);
  CHECK(job->state == v1::JOB_STATE_QUEUED);
  CHECK(job->queue_reason ==
        "CAPACITY: no node has 4 free gpus for chief-0 (most free: 1 on node-a, GPUs 7)");
  const std::vector<v1::Job> queue = c.core.ListQueue("", 10, FromMs(c.now));
  REQUIRE(queue.size() == 1);
  CHECK(queue[0].queue_status().blockers(0).message() == job->queue_reason);

  Effects fx;
  c.core.ReplicaExited("node-a", ExitedCode(big[0].run_id(), 0), FromMs(c.now), &fx);
  REQUIRE(c.core.FindJob(big_id)->state == v1::JOB_STATE_SUCCEEDED);
  c.core.Schedule(FromMs(c.now), &fx);
  std::vector<v1::LaunchReplica> now_running = Launches(fx);
  REQUIRE(now_running.size() == 1);
  CHECK(now_running[0].job_id() == id);
  CHECK(Indices(now_running[0]) == std::vector<int32_t>{0, 1, 2, 3});
}

TEST_CASE("a scheduler restart keeps who holds which GPU", "[devices]") {
  GpuCluster c(8);
  std::vector<v1::LaunchReplica> a;
  const std::string id = c.Submit(Spec(0, 1, 100, 3), &a);
  REQUIRE(Indices(a[0]) == std::vector<int32_t>{0, 1, 2});

  Core restored{TestOptions(7)};
  restored.Restore({*JobFromProto(View(c.core, id))}, {*c.core.FindNode("node-a")}, {});
  REQUIRE(restored.CheckUsage().ok());
  CHECK(restored.FindJob(id)->replicas[0].gpu_devices == std::vector<int32_t>{0, 1, 2});
  // The inventory came back with the node, and the devices are held again.
  absl::StatusOr<v1::Node> node = restored.GetNode("node-a");
  REQUIRE(node.ok());
  REQUIRE(node->gpu_devices_size() == 8);
  CHECK(node->gpu_devices(2).holder() == id + "/chief-0");
  CHECK(node->gpu_devices(3).holder().empty());

  // The agent comes back; a new job gets GPUs the restored one does not hold.
  Effects fx;
  v1::KnownRun run;
  run.set_run_id(a[0].run_id());
  run.set_running(true);
  restored.AgentRegistered(Reg("node-a", 32, 65536, 8, {run}), FromMs(c.now), &fx);
  absl::StatusOr<const Job*> next = restored.SubmitJob(Spec(0, 1, 100, 4), FromMs(c.now), &fx);
  REQUIRE(next.ok());
  restored.Schedule(FromMs(c.now), &fx);
  std::vector<v1::LaunchReplica> launched = Launches(fx);
  REQUIRE(launched.size() == 1);
  CHECK(Indices(launched[0]) == std::vector<int32_t>{3, 4, 5, 6});
  CHECK(restored.CheckUsage().ok());
}

TEST_CASE("a job that needs more GPUs than are free names the free ones", "[devices]") {
  GpuCluster c(4);
  std::vector<v1::LaunchReplica> one, waiting;
  c.Submit(Spec(0, 1, 100, 1), &one);
  REQUIRE(Indices(one[0]) == std::vector<int32_t>{0});
  const std::string id = c.Submit(Spec(0, 1, 100, 4), &waiting);
  CHECK(waiting.empty());
  CHECK(c.core.FindJob(id)->queue_reason ==
        "CAPACITY: no node has 4 free gpus for chief-0 (most free: 3 on node-a, GPUs 1-3)");
}

TEST_CASE("replicas of one job on one host get LOCAL_RANK 0 and 1 and LOCAL_WORLD_SIZE 2",
          "[devices]") {
  GpuCluster c(8);
  std::vector<v1::LaunchReplica> l;
  c.Submit(Spec(1, 1, 100, 2), &l);  // chief and one worker, both on node-a
  REQUIRE(l.size() == 2);
  std::map<std::string, v1::LaunchReplica> by_name;
  for (const v1::LaunchReplica& x : l) by_name[x.replica_name()] = x;
  const auto& chief = by_name.at("chief-0").env();
  const auto& worker = by_name.at("worker-0").env();
  CHECK(chief.at("LOCAL_RANK") == "0");
  CHECK(worker.at("LOCAL_RANK") == "1");
  CHECK(chief.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(worker.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(chief.at("NODE_RANK") == "0");
  CHECK(worker.at("GROUP_RANK") == "0");
  std::set<std::string> visible = {chief.at("CUDA_VISIBLE_DEVICES"),
                                   worker.at("CUDA_VISIBLE_DEVICES")};
  CHECK(visible == std::set<std::string>{"0,1", "2,3"});
}

TEST_CASE("host-local ranks follow the nodes in rank order", "[devices]") {
  Job job;
  const std::vector<std::string> nodes = {"b", "a", "b", "c", "a"};
  for (int i = 0; i < 5; ++i) {
    Replica r;
    r.name = "worker-" + std::to_string(i);
    r.rank = i;
    r.node = nodes[i];
    job.replicas.push_back(r);
  }
  // Node b holds rank 0, so it is node 0; a is 1, c is 2.
  struct Want {
    int local_rank, local_world_size, node_rank;
  };
  const Want want[] = {{0, 2, 0}, {0, 2, 1}, {1, 2, 0}, {0, 1, 2}, {1, 2, 1}};
  for (int i = 0; i < 5; ++i) {
    INFO("replica " << i);
    LocalRanks got = LocalRanksOf(job, i);
    CHECK(got.local_rank == want[i].local_rank);
    CHECK(got.local_world_size == want[i].local_world_size);
    CHECK(got.node_rank == want[i].node_rank);
    CHECK(got.nodes == 3);
  }
}

TEST_CASE("a job may not set the device and local-rank variables", "[devices]") {
  GpuCluster c(8);
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LOCAL_RANK",
                           "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK"}) {
    v1::JobSpec spec = Spec(0, 1, 100, 1);
    (*spec.mutable_worker_pools(0)->mutable_env())[name] = "0";
    Effects fx;
    absl::StatusOr<const Job*> job = c.core.SubmitJob(spec, FromMs(c.now), &fx);
    REQUIRE_FALSE(job.ok());
    CHECK(job.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(job.status().message()) ==
          absl::StrCat("workerPools[0].env[\"", name,
                       "\"] is set by trainctl for each replica (its GPUs and host-local ranks)"));
  }
}

TEST_CASE("an agent's inventory replaces synthetic devices when its count matches", "[devices]") {
  Core core(TestOptions(3));
  Effects fx;
  v1::Register reg = Reg("node-a", 8, 8192, 2);
  reg.clear_gpu_devices();
  for (int i = 0; i < 2; ++i) {
    v1::GpuDevice* d = reg.add_gpu_devices();
    d->set_index(i);
    d->set_uuid("GPU-" + std::to_string(i));
    d->set_model("NVIDIA H100 80GB HBM3");
    d->set_holder("stale");  // an agent's holder is ignored
  }
  core.AgentRegistered(reg, FromMs(0), &fx);
  absl::StatusOr<v1::Node> node = core.GetNode("node-a");
  REQUIRE(node.ok());
  REQUIRE(node->gpu_devices_size() == 2);
  CHECK(node->gpu_devices(1).uuid() == "GPU-1");
  CHECK(node->gpu_devices(1).holder().empty());

  reg.mutable_allocatable()->set_gpus(3);  // does not match: three synthetic devices
  core.AgentRegistered(reg, FromMs(0), &fx);
  node = core.GetNode("node-a");
  REQUIRE(node->gpu_devices_size() == 3);
  CHECK(node->gpu_devices(0).uuid().empty());
  CHECK(node->gpu_devices(2).minor() == -1);
}

}  // namespace
}  // namespace trainctl::sched
