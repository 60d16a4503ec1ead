// The environment every replica sees (R3, R10) and the cluster specs.
#include "scheduler/launch_env.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/model_proto.h"

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
  CHECK(env.at("TF_CONFIG") == TfConfigJson(*JobFromProto(job), 2, Nodes()));

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

// A job with one pool per entry of `pools` ({name, replicas}), its replicas ranked in pool order
// and placed on node-a and node-b in turn.
// The port of the replica of rank r in PlacedPools.
constexpr int32_t kFirstPort = 24000;

v1::Job PlacedPools(const std::vector<std::pair<std::string, int>>& pools) {
  v1::Job job;
  job.set_id("j-tf");
  int rank = 0;
  for (const auto& [name, count] : pools) {
    auto* pool = job.mutable_spec()->add_worker_pools();
    pool->set_name(name);
    pool->set_replica_count(count);
    pool->add_command("python3");
    for (int i = 0; i < count; ++i, ++rank) {
      v1::Replica* r = job.add_replicas();
      r->set_pool(name);
      r->set_index(i);
      r->set_name(absl::StrCat(name, "-", i));
      r->set_rank(rank);
      r->set_node(rank % 2 == 0 ? "node-a" : "node-b");
      r->set_port(kFirstPort + rank);
    }
  }
  job.add_attempts()->set_number(1);
  return job;
}

TEST_CASE("TF_CONFIG names pools by position as Vertex AI does") {
  const int p = kFirstPort;
  // Pool names are the user's; only the position decides the task type.
  v1::Job job =
      PlacedPools({{"main", 1}, {"trainer", 2}, {"params", 1}, {"eval", 1}, {"extra", 1}});
  // The training cluster: chief, worker and ps. Neither the evaluator nor a fifth pool is part of
  // it (Vertex AI leaves evaluators out; TensorFlow has no role for a fifth pool).
  const std::string cluster =
      absl::StrCat("{\"cluster\":{\"chief\":[\"10.0.0.1:", p, "\"],\"worker\":[\"10.0.0.2:", p + 1,
                   "\",\"10.0.0.1:", p + 2, "\"],\"ps\":[\"10.0.0.2:", p + 3, "\"]},");
  const std::string tail = ",\"environment\":\"cloud\",\"job\":{\"id\":\"j-tf\"}}";
  struct Row {
    int replica;
    const char* task;
  };
  const Row rows[] = {
      {0, "{\"type\":\"chief\",\"index\":0}"},        // pool 0: the primary
      {1, "{\"type\":\"worker\",\"index\":0}"},       // pool 1
      {2, "{\"type\":\"worker\",\"index\":1}"},       // the index counts within the pool
      {3, "{\"type\":\"ps\",\"index\":0}"},           // pool 2
      {4, "{\"type\":\"evaluator\",\"index\":0}"},    // pool 3, outside the cluster
      {5, "{\"type\":\"workerpool4\",\"index\":0}"},  // beyond Vertex AI's four pools
  };
  for (const Row& row : rows) {
    INFO("replica " << row.replica);
    CHECK(TfConfigJson(*JobFromProto(job), row.replica, Nodes()) ==
          absl::StrCat(cluster, "\"task\":", row.task, tail));
  }

  // A one-pool job is a cluster of one chief.
  CHECK(TfConfigJson(*JobFromProto(PlacedPools({{"trainer", 1}})), 0, Nodes()) ==
        absl::StrCat("{\"cluster\":{\"chief\":[\"10.0.0.1:", p,
                     "\"]},\"task\":{\"type\":\"chief\",\"index\":0}", tail));
}

TEST_CASE("a launch carries its pool's image, pull policy and mounts, never credentials") {
  v1::Job job = PlacedJob();
  v1::WorkerPool* worker = job.mutable_spec()->mutable_worker_pools(1);
  worker->set_image("registry:5000/team/train:1.4");
  worker->set_image_pull_policy(v1::IMAGE_PULL_POLICY_ALWAYS);
  worker->set_image_pull_secret("registry-creds");
  v1::ImageMount* data = worker->add_mounts();
  data->set_host_path("/datasets/imagenet");
  data->set_path("/data");
  data->set_read_only(true);
  v1::ImageMount* out = worker->add_mounts();
  out->set_host_path("/scratch/out");
  out->set_path("/out");

  for (int i : {1, 2}) {
    INFO("replica " << i);
    v1::LaunchReplica l = BuildLaunch(*JobFromProto(job), i, Nodes());
    CHECK(l.image() == "registry:5000/team/train:1.4");
    CHECK(l.image_pull_always());
    // Resolved from the secret just before the launch is sent (server/launch_secrets.h).
    CHECK(l.image_credentials().empty());
    REQUIRE(l.mounts_size() == 2);
    CHECK(l.mounts(0).host_path() == "/datasets/imagenet");
    CHECK(l.mounts(0).path() == "/data");
    CHECK(l.mounts(0).read_only());
    CHECK(l.mounts(1).path() == "/out");
    CHECK_FALSE(l.mounts(1).read_only());
    CHECK(l.argv(0) == "python3");
  }
  // The chief's pool has none: it runs on the host.
  v1::LaunchReplica chief = BuildLaunch(*JobFromProto(job), 0, Nodes());
  CHECK(chief.image().empty());
  CHECK_FALSE(chief.image_pull_always());
  CHECK(chief.mounts().empty());

  // IF_NOT_PRESENT, and the default, do not ask the registry every time.
  for (v1::ImagePullPolicy policy :
       {v1::IMAGE_PULL_POLICY_IF_NOT_PRESENT, v1::IMAGE_PULL_POLICY_UNSPECIFIED}) {
    worker->set_image_pull_policy(policy);
    CHECK_FALSE(BuildLaunch(*JobFromProto(job), 1, Nodes()).image_pull_always());
  }
}

}  // namespace
}  // namespace trainctl::sched
