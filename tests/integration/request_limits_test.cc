// trainctld's --max-request-bytes: an oversized request is refused before it is parsed, and a
// log read never asks an agent for a reply larger than trainctld accepts. Real processes, real
// gRPC over loopback.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/sync_stream.h>

#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/fake_agent.h"
#include "tests/integration/mini_cluster.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::testing {
namespace {

TEST_CASE("a request over --max-request-bytes is refused and stores nothing",
          "[integration][limits]") {
  MiniCluster c(1);
  v1::CreateJobRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_display_name("huge");
  v1::WorkerPool* pool = spec->add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  pool->add_command("/bin/true");
  (*pool->mutable_env())["PAYLOAD"] = std::string(5 << 20, 'x');
  grpc::ClientContext ctx;
  v1::Job job;
  grpc::Status s = c.jobs().CreateJob(&ctx, req, &job);
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  INFO(s.error_message());
  CHECK(absl::StrContains(s.error_message(), "4194304"));
  // The daemon answers on, and stored no job.
  CliResult list = c.Cli({"list", "-o", "json"});
  REQUIRE(list.exit_code == 0);
  CHECK_FALSE(absl::StrContains(list.out, "huge"));
}

// `wire` with its first `from` replaced by `to` (same length, so lengths stay right).
std::string Patch(std::string wire, const std::string& from, const std::string& to) {
  const size_t at = wire.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(from.size() == to.size());
  wire.replace(at, from.size(), to);
  return wire;
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

TEST_CASE("a request that is not UTF-8 is INVALID_ARGUMENT naming the field",
          "[integration][limits]") {
  MiniCluster c(1);
  auto channel = grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials());
  v1::CreateJobRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_display_name("utf8-test");
  v1::WorkerPool* pool = spec->add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  pool->add_command("/bin/true");
  pool->add_command("ARGUMENT");
  (*pool->mutable_env())["KEY"] = "VALUE";
  const std::string wire = req.SerializeAsString();
  const grpc::internal::RpcMethod create("/trainctl.v1.JobService/CreateJob",
                                         grpc::internal::RpcMethod::NORMAL_RPC);
  auto call = [&](const std::string& bytes) {
    grpc::ClientContext ctx;
    grpc::ByteBuffer out;
    return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
        channel.get(), create, &ctx, Buffer(bytes), &out);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Patch(wire, "utf8-test", "utf8-te\xff\xfe"), "spec.displayName must be valid UTF-8"},
      {Patch(wire, "ARGUMENT", "ARGUM\xc3\x28T"),
       "spec.workerPools[0].command[1] must be valid UTF-8"},
      {Patch(wire, "VALUE", "VA\xe2\x82L"), "spec.workerPools[0].env[\"KEY\"] must be valid UTF-8"},
      {Patch(wire, "KEY", "K\x80Y"), "spec.workerPools[0].env has a key that must be valid UTF-8"},
      {"\xff\xff\xff", "not a valid trainctl.v1.CreateJobRequest message"},
  };
  for (const auto& [bytes, message] : cases) {
    grpc::Status s = call(bytes);
    INFO(message << " / got: " << s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(s.error_message(), message));
  }
  // The untouched bytes are a valid request: the refusals above came from the UTF-8 alone.
  CHECK(call(wire).ok());

  // A server-streaming method says the same.
  v1::WatchJobRequest watch;
  watch.set_id("job-abcdef");
  grpc::ClientContext wctx;
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
          channel.get(),
          grpc::internal::RpcMethod("/trainctl.v1.JobService/WatchJob",
                                    grpc::internal::RpcMethod::SERVER_STREAMING),
          &wctx,
          Buffer(Patch(watch.SerializeAsString(), "abcdef",
                       "ab\xff\xff"
                       "ef"))));
  grpc::ByteBuffer ignored;
  CHECK_FALSE(reader->Read(&ignored));
  grpc::Status ws = reader->Finish();
  CHECK(ws.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(ws.error_message() == "id must be valid UTF-8");

  // Nothing but the one valid job was stored.
  CliResult list = c.Cli({"list", "-o", "json"});
  REQUIRE(list.exit_code == 0);
  CHECK(absl::StrContains(list.out, "utf8-test"));
  CHECK_FALSE(absl::StrContains(list.out, "utf8-te\xff"));
}

TEST_CASE("hostile CreateJob requests are refused with the field, store nothing, cost no memory",
          "[integration][limits]") {
  MiniCluster c(1);
  auto base = [] {
    v1::CreateJobRequest req;
    v1::JobSpec* spec = req.mutable_spec();
    spec->set_display_name("hostile");
    v1::WorkerPool* pool = spec->add_worker_pools();
    pool->set_name("chief");
    pool->set_replica_count(1);
    pool->add_command("/bin/true");
    return req;
  };
  struct Case {
    const char* what;
    v1::CreateJobRequest req;
    grpc::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  {
    v1::CreateJobRequest r = base();
    (*r.mutable_spec()->mutable_worker_pools(0)->mutable_env())["PAYLOAD"] =
        std::string(100 << 20, 'x');
    cases.push_back({"a 100 MB request", r, grpc::StatusCode::RESOURCE_EXHAUSTED, "4194304"});
  }
  {
    v1::CreateJobRequest r = base();
    auto& env = *r.mutable_spec()->mutable_worker_pools(0)->mutable_env();
    for (int i = 0; i < 100000; ++i) env[absl::StrCat("E", i)] = "v";
    cases.push_back({"100,000 env entries", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "the job spec is 1288923 bytes, at most 1048576 are allowed"});
  }
  {
    v1::CreateJobRequest r = base();
    r.mutable_spec()->set_display_name(std::string("bad\0name", 8));
    cases.push_back({"a NUL byte", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "displayName must not contain NUL bytes"});
  }
  {
    v1::CreateJobRequest r = base();
    r.mutable_spec()->mutable_worker_pools(0)->mutable_resources()->set_cpu(
        std::numeric_limits<double>::quiet_NaN());
    cases.push_back({"NaN cpu", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "workerPools[0].resources.cpu must be 0..4096 cores, got nan"});
  }
  {
    v1::CreateJobRequest r = base();
    r.mutable_spec()->mutable_worker_pools(0)->mutable_resources()->set_cpu(
        std::numeric_limits<double>::infinity());
    cases.push_back({"infinite cpu", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "workerPools[0].resources.cpu must be 0..4096 cores, got inf"});
  }
  {
    v1::CreateJobRequest r = base();
    r.mutable_spec()->mutable_scheduling()->mutable_timeout()->set_seconds(int64_t{1} << 60);
    cases.push_back({"an enormous duration", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "scheduling.timeout must be between 0s and 31622400s"});
  }
  {
    v1::CreateJobRequest r = base();
    r.mutable_spec()->mutable_scheduling()->mutable_timeout()->set_nanos(2'000'000'000);
    cases.push_back({"nanos out of range", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "scheduling.timeout must be between 0s and 31622400s, got 0s and "
                     "2000000000ns"});
  }
  const int64_t before = ProcessMemoryKb(c.daemon().pid(), "VmRSS");
  for (const Case& k : cases) {
    grpc::ClientContext ctx;
    v1::Job job;
    grpc::Status s = c.jobs().CreateJob(&ctx, k.req, &job);
    INFO(k.what << ": " << s.error_message());
    CHECK(s.error_code() == k.code);
    CHECK_THAT(s.error_message(), Catch::Contains(k.message));
  }
  // The daemon's memory stays bounded: gRPC buffers an oversized request while it arrives and
  // refuses it whole, and the allocator keeps some of that for the next one, but nine such
  // requests (900 MB in all) leave it nowhere near their sum.
  for (int i = 0; i < 8; ++i) {
    grpc::ClientContext ctx;
    v1::Job job;
    CHECK(c.jobs().CreateJob(&ctx, cases[0].req, &job).error_code() ==
          grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  // Nothing was stored.
  CliResult list = c.Cli({"list", "-o", "json"});
  REQUIRE(list.exit_code == 0);
  CHECK_FALSE(absl::StrContains(list.out, "\"id\""));
  const int64_t after = ProcessMemoryKb(c.daemon().pid(), "VmRSS");
  INFO("trainctld's RSS: " << before / 1024 << " MiB before, " << after / 1024 << " MiB after");
  CHECK(after - before < 256 * 1024);
}

TEST_CASE("log reads fit a lowered --max-request-bytes", "[integration][limits]") {
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--max-request-bytes", "2097152"};
  MiniCluster c(o);
  // 3 MiB of output, more than one message may carry.
  const std::string id = c.Submit(R"(
displayName: chatty
workerPools:
- name: chief
  replicaCount: 1
  command: [sh, -c, "head -c 3145728 /dev/zero | tr '\\0' x"]
  resources: {cpu: 0.1, memoryMb: 16}
)");
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  // Asked for 4 MiB at once, trainctld asks the agent only for what fits 2 MiB.
  v1::ReadLogsRequest read;
  read.set_job_id(id);
  read.set_replica("chief-0");
  read.set_max_bytes(4 << 20);
  grpc::ClientContext ctx;
  v1::ReadLogsResponse chunk;
  grpc::Status s = c.jobs().ReadLogs(&ctx, read, &chunk);
  INFO(s.error_message());
  REQUIRE(s.ok());
  CHECK(chunk.data().size() == (2 << 20) - (64 << 10));
  CHECK_FALSE(chunk.complete());
  // The agent's stream survived, and the CLI reads the whole log in chunks.
  CHECK(c.GetNode("node-0").connected());
  CliResult logs = c.Cli({"logs", id});
  REQUIRE(logs.exit_code == 0);
  CHECK(logs.out == std::string(3145728, 'x'));
}

TEST_CASE("one host's watch and agent streams are bounded", "[integration][limits]") {
  ClusterOptions o;
  o.agents = 2;
  o.daemon_args = {"--max-watches-per-peer", "2", "--max-agent-streams-per-peer", "2"};
  MiniCluster c(o);
  const std::string id = c.Submit(c.Spec(R"(
displayName: watched
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --wait-file, DIR/never]
  resources: {cpu: 0.1, memoryMb: 16}
)"));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  v1::WatchJobRequest req;
  req.set_id(id);
  // Two watches are served: each gets the job's state first.
  grpc::ClientContext ctx1, ctx2;
  auto w1 = c.jobs().WatchJob(&ctx1, req);
  auto w2 = c.jobs().WatchJob(&ctx2, req);
  v1::Job seen;
  REQUIRE(w1->Read(&seen));
  REQUIRE(w2->Read(&seen));
  // A third from the same host is refused, naming the flag.
  {
    grpc::ClientContext ctx3;
    auto w3 = c.jobs().WatchJob(&ctx3, req);
    CHECK_FALSE(w3->Read(&seen));
    grpc::Status s = w3->Finish();
    CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(absl::StrContains(s.error_message(), "--max-watches-per-peer"));
  }
  // Closing one makes room again.
  ctx1.TryCancel();
  w1->Finish();
  CHECK(Eventually([&] {
    grpc::ClientContext ctx4;
    auto w4 = c.jobs().WatchJob(&ctx4, req);
    const bool served = w4->Read(&seen);
    ctx4.TryCancel();
    w4->Finish();
    return served;
  }));
  ctx2.TryCancel();
  w2->Finish();

  // Both agents hold the host's two agent streams: a third stream is refused, and they stay.
  grpc::Status refused = FakeAgent(c.address()).Finish();
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(refused.error_message(), "--max-agent-streams-per-peer"));
  CHECK(c.GetNode("node-0").connected());
  CHECK(c.GetNode("node-1").connected());
}

}  // namespace
}  // namespace trainctl::testing
