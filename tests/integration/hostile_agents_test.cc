// Agent streams from a client that is not a real agent: a claim on a connected node's name, and
// a registration with absurd values. Neither may disturb the cluster. And an agent's own
// environment (its credentials) never reaches a job.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "tests/integration/mini_cluster.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::testing {
namespace {

constexpr char kJob[] = R"(
displayName: steady
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --wait-file, DIR/go]
  resources: {cpu: 0.1, memoryMb: 16}
)";

// Opens an agent stream to the cluster, sends `reg` and returns how the scheduler ended it (or
// OK when it answered with a RegisterAck instead).
grpc::Status RegisterAs(MiniCluster& c, const v1::Register& reg) {
  auto stub = v1::AgentService::NewStub(
      grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->Connect(&ctx);
  v1::AgentMessage msg;
  msg.set_seq(1);
  *msg.mutable_register_() = reg;
  REQUIRE(stream->Write(msg));
  v1::SchedulerMessage in;
  while (stream->Read(&in)) {
    if (in.has_register_ack()) {
      ctx.TryCancel();
      stream->Finish().ok();
      return grpc::Status::OK;
    }
  }
  return stream->Finish();
}

v1::Register Rogue(const std::string& node) {
  v1::Register reg;
  reg.set_node(node);
  reg.set_address("203.0.113.7");
  reg.mutable_capacity()->set_cpu(512);
  reg.mutable_capacity()->set_memory_mb(1 << 22);
  *reg.mutable_allocatable() = reg.capacity();
  reg.set_agent_instance("rogue");
  return reg;
}

TEST_CASE("a second stream claiming a connected node's name is refused, and its replicas run on",
          "[integration][security]") {
  MiniCluster c(1);
  const std::string id = c.Submit(c.Spec(kJob));
  const v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const int64_t pid = running.replicas(0).pid();

  grpc::Status refused = RegisterAs(c, Rogue("node-0"));
  CHECK(refused.error_code() == grpc::StatusCode::ALREADY_EXISTS);
  CHECK_THAT(refused.error_message(),
             Catch::Contains("node node-0 is connected through a live stream of another agent"));

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
