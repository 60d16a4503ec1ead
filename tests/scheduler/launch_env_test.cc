// The environment every replica sees (R3, R10) and the cluster specs.
#include "scheduler/launch_env.h"

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "scheduler/model_proto.h"

namespace trainctl::sched {
namespace {

v1::Job PlacedJob() {
  v1::Job job;
  job.set_id("j-abc");
  job.set_checkpoint_dir("/ckpt/j-abc");
  auto* chief = job.mutable_spec()->add_worker_pools();
  chief->set_name("chief");
  chief->set_replica_count(1);
  chief->add_command("python3");
  chief->add_args("train.py");
  (*chief->mutable_env())["FOO"] = "bar";
  auto* worker = job.mutable_spec()->add_worker_pools();
  worker->set_name("worker");
  worker->set_replica_count(2);
  worker->add_command("python3");
  const char* nodes[] = {"node-a", "node-b", "node-a"};
  // Allocated ports, in no pattern a hash of the job id or the rank would give.
  const int32_t ports[] = {21007, 20400, 21003};
  for (int i = 0; i < 3; ++i) {
    v1::Replica* r = job.add_replicas();
    r->set_pool(i == 0 ? "chief" : "worker");
    r->set_index(i == 0 ? 0 : i - 1);
    r->set_name(absl::StrCat(r->pool(), "-", r->index()));
    r->set_rank(i);
    r->set_node(nodes[i]);
    r->set_port(ports[i]);
  }
  job.mutable_replicas(0)->set_rendezvous_port(21006);
  job.add_attempts()->set_number(2);
  return job;
}

std::map<std::string, Node> Nodes() {
  std::map<std::string, Node> nodes;
  nodes["node-a"].address = "10.0.0.1";
  nodes["node-b"].address = "10.0.0.2";
  return nodes;
}

TEST_CASE("BuildLaunch sets argv, identity, rank and checkpoint variables") {
  v1::Job job = PlacedJob();
  job.mutable_replicas(2)->set_restart_count(3);
  v1::LaunchReplica l = BuildLaunch(*JobFromProto(job), 2, Nodes());
  CHECK(l.run_id() == "j-abc/2/worker-1/3");
  CHECK(l.argv_size() == 1);
  const auto& env = l.env();
  CHECK(env.at("TRAINCTL_JOB_ID") == "j-abc");
  CHECK(env.at("TRAINCTL_ATTEMPT") == "2");
  CHECK(env.at("TRAINCTL_REPLICA_NAME") == "worker-1");
  CHECK(env.at("TRAINCTL_RESTART_COUNT") == "3");
  CHECK(env.at("RANK") == "2");
  CHECK(env.at("WORLD_SIZE") == "3");
  CHECK(env.at("MASTER_ADDR") == "10.0.0.1");
  CHECK(env.at("MASTER_PORT") == "21006");  // the primary's rendezvous port, not its own
  CHECK(env.at("TRAINCTL_CHECKPOINT_DIR") == "/ckpt/j-abc");
  CHECK(env.at("AIP_CHECKPOINT_DIR") == "/ckpt/j-abc");

  v1::LaunchReplica chief = BuildLaunch(*JobFromProto(job), 0, Nodes());
  CHECK(chief.argv(1) == "train.py");
  CHECK(chief.env().at("FOO") == "bar");
}

TEST_CASE(
    "cluster specs list every replica by pool with its own port, in trainctl and Vertex "
    "form") {
  v1::Job job = PlacedJob();
  CHECK(ClusterSpecJson(*JobFromProto(job), 1, Nodes(), false) ==
        "{\"cluster\":{\"chief\":[\"10.0.0.1:21007\"],\"worker\":[\"10.0.0.2:20400\","
        "\"10.0.0.1:21003\"]},\"task\":{\"type\":\"worker\",\"index\":0},\"job\":{\"id\":"
        "\"j-abc\",\"attempt\":2}}");
  CHECK(ClusterSpecJson(*JobFromProto(job), 0, Nodes(), true) ==
        "{\"cluster\":{\"workerpool0\":[\"10.0.0.1:21007\"],\"workerpool1\":[\"10.0.0.2:20400\","
        "\"10.0.0.1:21003\"]},\"task\":{\"type\":\"workerpool0\",\"index\":0},\"environment\":"
        "\"cloud\",\"job\":{\"id\":\"j-abc\"}}");
  // The launches carry the same specs, and every replica the same MASTER_PORT.
  for (int i = 0; i < 3; ++i) {
    INFO("replica " << i);
    v1::LaunchReplica l = BuildLaunch(*JobFromProto(job), i, Nodes());
    CHECK(l.env().at("TRAINCTL_CLUSTER_SPEC") ==
          ClusterSpecJson(*JobFromProto(job), i, Nodes(), false));
    CHECK(l.env().at("CLUSTER_SPEC") == ClusterSpecJson(*JobFromProto(job), i, Nodes(), true));
    CHECK(l.env().at("MASTER_PORT") == "21006");
  }
}

}  // namespace
}  // namespace trainctl::sched
