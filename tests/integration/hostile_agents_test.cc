// Agent streams from a client that is not a real agent: a claim on a connected node's name, and
// a registration with absurd values. Neither may disturb the cluster. And an agent's own
// environment (its credentials) never reaches a job.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/integration/fake_agent.h"
#include "tests/integration/mini_cluster.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::testing {
namespace {

constexpr char kHostileJob[] = R"(
displayName: steady
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --wait-file, DIR/go]
  resources: {cpu: 0.1, memoryMb: 16}
)";

// Registers `reg` over a stream of its own, closed at once: OK when a RegisterAck came, else how
// the scheduler ended the stream.
grpc::Status RegisterAs(MiniCluster& c, const v1::Register& reg) {
  return FakeAgent(c.address()).Register(reg);
}

v1::Register Rogue(const std::string& node) { return RogueRegistration(node); }

TEST_CASE("a second stream claiming a connected node's name is refused, and its replicas run on",
          "[integration][security]") {
  MiniCluster c(1);
  const std::string id = c.Submit(c.Spec(kHostileJob));
  const v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const int64_t pid = running.replicas(0).pid();

  grpc::Status refused = RegisterAs(c, Rogue("node-0"));
  CHECK(refused.error_code() == grpc::StatusCode::ALREADY_EXISTS);
  CHECK_THAT(refused.error_message(),
             Catch::Contains("node node-0 is connected through a live stream of another agent"));
  // The refusal names nothing of the real agent's identity (its process instance).
  CHECK_THAT(refused.error_message(), !Catch::Contains("instance"));

  // Nothing changed: the node is the real agent's, the replica runs as before.
  const v1::Node node = c.GetNode("node-0");
  CHECK(node.connected());
  CHECK(node.address() == "127.0.0.1");
  const v1::Job after = c.GetJob(id);
  CHECK(after.state() == v1::JOB_STATE_RUNNING);
  CHECK(after.replicas(0).pid() == pid);
  CHECK(PidAlive(static_cast<pid_t>(pid)));

  c.WriteFile("go", "");
  CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("a registration with NaN or absurd resources is refused and stores nothing",
          "[integration][security]") {
  MiniCluster c(1);
  v1::Register nan = Rogue("node-nan");
  nan.mutable_capacity()->set_cpu(std::numeric_limits<double>::quiet_NaN());
  grpc::Status refused = RegisterAs(c, nan);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(refused.error_message() ==
        "register.capacity.cpu must be a finite number 0..65536, got nan");

  v1::Register huge = Rogue("node-huge");
  huge.mutable_capacity()->set_gpus(100000);
  CHECK(RegisterAs(c, huge).error_code() == grpc::StatusCode::INVALID_ARGUMENT);

  // The daemon is up, and neither node exists.
  CliResult nodes = c.Cli({"nodes"});
  CHECK(nodes.exit_code == 0);
  CHECK_THAT(nodes.out, !Catch::Contains("node-nan"));
  CHECK_THAT(nodes.out, !Catch::Contains("node-huge"));
  CHECK(c.daemon().Running());

  // A free name with sane values still registers.
  CHECK(RegisterAs(c, Rogue("node-new")).ok());
}

TEST_CASE("a large spec with many replicas is held once per job, not once per launch",
          "[integration][security]") {
  ClusterOptions o;
  o.agents = 0;
  // Room for 1,201 ports on one node; the fake node binds none of them.
  o.port_range_size = 1280;
  MiniCluster c(o);
  // A node big enough for the whole job, whose stream reads the launches and confirms none.
  FakeAgent fake(c.address(), grpc::InsecureChannelCredentials(), std::chrono::seconds(120));
  REQUIRE(fake.Register(Rogue("node-big")).ok());
  // Heartbeats keep the node READY while the test reads.
  fake.StartHeartbeats();
  const int64_t before = ProcessMemoryKb(c.daemon().pid(), "VmHWM");

  // 1,200 replicas of a pool with 900 KB of env: one copy per launch would be over 1 GB.
  constexpr int kReplicas = 1200;
  v1::CreateJobRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_display_name("wide");
  v1::WorkerPool* chief = spec->add_worker_pools();
  chief->set_name("chief");
  chief->set_replica_count(1);
  chief->add_command("/bin/true");
  v1::WorkerPool* pool = spec->add_worker_pools();
  pool->set_name("worker");
  pool->set_replica_count(kReplicas - 1);
  pool->add_command("/bin/true");
  pool->mutable_resources()->set_cpu(0.1);
  pool->mutable_resources()->set_memory_mb(16);
  for (int i = 0; i < 200; ++i) {
    (*pool->mutable_env())[absl::StrCat("BULK_", i)] = std::string(4500, 'a' + i % 26);
  }
  grpc::ClientContext create_ctx;
  v1::Job job;
  grpc::Status created = c.jobs().CreateJob(&create_ctx, req, &job);
  INFO(created.error_message());
  REQUIRE(created.ok());

  int launches = 0;
  v1::SchedulerMessage in;
  while (launches < kReplicas && fake.Read(&in)) {
    if (!in.has_launch()) continue;
    ++launches;
    // Each launch reaches the agent whole: the pool's argv and env, and its own variables.
    if (in.launch().replica_name() != "chief-0" && launches % 400 == 1) {
      CHECK(in.launch().argv_size() == 1);
      CHECK(in.launch().env().at("BULK_7") == std::string(4500, 'h'));
      CHECK(in.launch().env().at("TRAINCTL_REPLICA_NAME") == in.launch().replica_name());
    }
  }
  INFO("job: " << c.GetJob(job.id()).queue_reason() << c.Cli({"nodes"}).out);
  CHECK(launches == kReplicas);
  const int64_t after = ProcessMemoryKb(c.daemon().pid(), "VmHWM");
  INFO("trainctld's peak RSS: " << before / 1024 << " MiB before, " << after / 1024
                                << " MiB after");
  CHECK(after - before < 400 * 1024);
}

TEST_CASE("a host registers few unknown names, and an admin deletes a node that is gone",
          "[integration][security]") {
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--max-new-nodes-per-peer", "4"};
  MiniCluster c(o);
  // node-0, the real agent, was this host's first new node.
  CHECK(RegisterAs(c, Rogue("fake-1")).ok());
  CHECK(RegisterAs(c, Rogue("fake-2")).ok());
  CHECK(RegisterAs(c, Rogue("fake-3")).ok());
  grpc::Status refused = RegisterAs(c, Rogue("fake-4"));
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(refused.error_message(), Catch::Contains("--max-new-nodes-per-peer"));
  // A name trainctld knows registers again.
  CHECK(RegisterAs(c, Rogue("fake-1")).ok());
  CliResult nodes = c.Cli({"nodes"});
  CHECK_THAT(nodes.out, Catch::Contains("fake-3") && !Catch::Contains("fake-4"));

  // A connected node cannot be deleted.
  CliResult connected = c.Cli({"node", "delete", "node-0"});
  CHECK(connected.exit_code != 0);
  CHECK_THAT(connected.err, Catch::Contains("node-0's agent is connected"));
  // One whose stream ended can, once trainctld has seen it go.
  CliResult deleted;
  CHECK(Eventually([&] {
    deleted = c.Cli({"node", "delete", "fake-2", "--reason", "registered by a test"});
    return deleted.exit_code == 0;
  }));
  CHECK(deleted.out == "node fake-2 deleted\n");
  nodes = c.Cli({"nodes"});
  CHECK_THAT(nodes.out, Catch::Contains("fake-1") && !Catch::Contains("fake-2"));
  CliResult events = c.Cli({"events", "--node", "fake-2"});
  CHECK_THAT(events.out, Catch::Contains("NodeDeleted") &&
                             Catch::Contains("deleted by an operator: registered by a test"));
  CliResult again = c.Cli({"node", "delete", "fake-2"});
  CHECK(again.exit_code != 0);
  CHECK_THAT(again.err, Catch::Contains("node fake-2 not found"));
}

TEST_CASE("a replica sees none of its agent's own environment", "[integration][security]") {
  setenv("AWS_SECRET_ACCESS_KEY", "the-agent's-own", 1);  // the agents inherit it
  MiniCluster c(1);
  unsetenv("AWS_SECRET_ACCESS_KEY");
  const std::string id = c.Submit(c.Spec(R"(
displayName: hostile
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'echo "secret=${AWS_SECRET_ACCESS_KEY:-none} home=${HOME:+set}" > DIR/seen']
)"));
  CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(ReadTextFile(c.dir() + "/seen") == "secret=none home=set\n");
}

}  // namespace
}  // namespace trainctl::testing
