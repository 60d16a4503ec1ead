// Secret env entries of a job: the replica gets the real values; no read shows them, before or
// after a restart of trainctld. Real processes, real gRPC over loopback.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// Neither secret appears in `text`, and something was redacted.
void CheckRedacted(const std::string& what, const std::string& text) {
  INFO(what << ": " << text);
  CHECK_FALSE(absl::StrContains(text, "hf_real_value"));
  CHECK_FALSE(absl::StrContains(text, "custom_value"));
  // JSON writes "<redacted>" as "\u003credacted\u003e".
  CHECK(absl::StrContains(text, "redacted"));
}

TEST_CASE("secret env values reach the replica and no read", "[integration][secrets]") {
  MiniCluster c(1);
  v1::CreateJobRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_display_name("secretive");
  v1::WorkerPool* pool = spec->add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  for (const char* arg : {"sh", "-c", "echo \"HF_TOKEN=$HF_TOKEN CUSTOM=$CUSTOM LR=$LR\""}) {
    pool->add_command(arg);
  }
  (*pool->mutable_env())["HF_TOKEN"] = "hf_real_value";  // a secret by the default patterns
  (*pool->mutable_env())["CUSTOM"] = "custom_value";     // one by secretEnv
  (*pool->mutable_env())["LR"] = "0.125";
  pool->add_secret_env("CUSTOM");
  pool->mutable_resources()->set_cpu(0.1);
  grpc::ClientContext ctx;
  v1::Job created;
  REQUIRE(c.jobs().CreateJob(&ctx, req, &created).ok());
  CheckRedacted("CreateJob", created.DebugString());
  CHECK(created.spec().worker_pools(0).env().at("LR") == "0.125");
  const std::string id = created.id();
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);

  CliResult logs = c.Cli({"logs", id});
  REQUIRE(logs.exit_code == 0);
  CHECK(absl::StrContains(logs.out, "HF_TOKEN=hf_real_value CUSTOM=custom_value LR=0.125"));

  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    CheckRedacted("get", c.Cli({"get", id, "-o", "json"}).out);
    CheckRedacted("list", c.Cli({"list", "-o", "yaml"}).out);
    CheckRedacted("GetJob", c.WaitForJob(id, [](const v1::Job&) { return true; }).DebugString());
    CHECK(absl::StrContains(c.Cli({"get", id, "-o", "json"}).out, "0.125"));
    for (const v1::Event& e : c.ListEvents(id, "", "")) {
      CHECK_FALSE(absl::StrContains(e.reason(), "hf_real_value"));
    }
    // The store keeps the real values (a restart relaunches with them); reads stay redacted.
    c.KillDaemon(SIGKILL);
    c.StartDaemon();
  }
}

}  // namespace
}  // namespace trainctl::testing
