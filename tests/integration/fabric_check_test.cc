// The fabric check before a multi-node gang starts (docs/operators/gang-health.md), end to end:
// a real trainctld and three real agents whose check listeners are on fixed ports. In a network
// namespace of the test's own (netns_link.h), an nft rule blocks one node's check port: the
// built-in check finds that node (with two nodes, through the third outside the gang), it is
// ISOLATED and the job runs on the other two, charged to no user budget; blocking every node's
// port fails the job, after one re-dispatch, with the results. On loopback, an operator program
// that fails on one node blames that node, and a healthy gang's check passes and is timed. A
// PyTorch gloo all-reduce (examples/fabric-check/gloo_check.py) as the check program passes on
// healthy nodes and fails the job when its rendezvous port is blocked.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"
#include "tests/integration/netns_link.h"

namespace trainctl::testing {
namespace fabric_check_test {

// Each agent's --gang-check-port inside the namespace: node-i listens on 7110 + 10 i, and a
// check program's MASTER_PORT is the first node's port plus one.
int CheckPort(int i) { return 7110 + 10 * i; }

// A gang of `replicas` ranks, each taking a whole node (the agents have 4 cpus), that sleeps.
std::string Gang(const MiniCluster& c, int replicas, const std::string& extra = "") {
  std::string spec =
      "displayName: fabric\nworkerPools:\n- name: chief\n  replicaCount: 1\n"
      "  command: [/bin/sh, -c, 'sleep 300']\n  resources: {cpu: 4, memoryMb: 64}\n";
  if (replicas > 1) {
    absl::StrAppend(
        &spec, "- name: worker\n  replicaCount: ", replicas - 1,
        "\n  command: [/bin/sh, -c, 'sleep 300']\n  resources: {cpu: 4, memoryMb: 64}\n");
  }
  return c.Spec(spec + "scheduling: {stopGracePeriod: 1s}\n" + extra);
}

// Three agents in `link`'s namespace, each with its check listener on CheckPort(i); `extra`
// goes to every agent.
ClusterOptions InNamespace(const NetnsLink& link, const std::vector<std::string>& extra = {}) {
  ClusterOptions o;
  o.agents = 3;
  o.listen_host = link.host_address();
  o.daemon_args = {"--insecure-allow-plaintext", "--gang-check-timeout", "30s"};
  o.agent.extra_args = {"--insecure-allow-plaintext"};
  o.agent.extra_args.insert(o.agent.extra_args.end(), extra.begin(), extra.end());
  for (int i = 0; i < 3; ++i) {
    o.agent_prefix[i] = link.Exec();
    o.agent_args[i] = {"--address", link.ns_address(), "--gang-check-port",
                       absl::StrCat(CheckPort(i))};
  }
  return o;
}

// Why a namespace test cannot run here ("" when it can).
std::string NetnsUnavailable() {
  std::string why = NetnsLink::Unavailable();
  if (why.empty()) why = NetnsLink::NftUnavailable();
  return why;
}

// The job once RUNNING with every replica running, within `timeout`.
v1::Job WaitRunning(MiniCluster& c, const std::string& id,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  return c.WaitForJob(
      id,
      [](const v1::Job& j) {
        if (j.state() != v1::JOB_STATE_RUNNING) return false;
        for (const v1::Replica& r : j.replicas()) {
          if (r.state() != v1::REPLICA_STATE_RUNNING) return false;
        }
        return true;
      },
      timeout);
}

TEST_CASE("fabric check: a node whose check port is blocked is isolated, the job runs elsewhere",
          "[integration][netns][fabric]") {
  if (std::string why = NetnsUnavailable(); !why.empty()) {
    WARN(why);
    return;
  }
  NetnsLink link;
  MiniCluster c(InNamespace(link));
  // Every node is as free as the others: the gang of two takes node-0 and node-1 (by name).
  link.DropTcpPort(CheckPort(1));
  const std::string id = c.Submit(Gang(c, 2));
  const v1::Job job = WaitRunning(c, id);
  INFO(c.Cli({"describe", id}).out);
  REQUIRE(job.attempts_size() == 2);
  const v1::FabricCheck& first = job.attempts(0).fabric_check();
  CHECK(first.result() == "ISOLATED");
  CHECK(first.culprit() == NodeName(1));
  CHECK_THAT(first.summary(), Catch::Contains("outside the gang"));
  CHECK(job.attempts(1).fabric_check().result() == "PASSED");
  for (const v1::Replica& r : job.replicas()) CHECK(r.node() != NodeName(1));
  CHECK(c.GetNode(NodeName(1)).state() == v1::NODE_STATE_ISOLATED);
  // A host fault: only the re-dispatch budget is charged.
  CHECK(job.budgets_used().redispatches() == 1);
  CHECK(job.budgets_used().job_retries() == 0);
  CHECK(job.budgets_used().internal_retries() == 0);
  for (const v1::Replica& r : job.replicas()) CHECK(r.restart_count() == 0);
  CHECK(c.ListEvents(id, "", "FabricCheckProbing").size() == 1);
  CHECK_FALSE(c.ListEvents("", NodeName(1), "NodeIsolated").empty());
  CliResult describe = c.Cli({"describe", id});
  CHECK_THAT(describe.out, Catch::Contains("Fabric checks") && Catch::Contains("ISOLATED") &&
                               Catch::Contains("PASSED"));
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
}

TEST_CASE("fabric check: a check that fails on every pair fails the job with the results",
          "[integration][netns][fabric]") {
  if (std::string why = NetnsUnavailable(); !why.empty()) {
    WARN(why);
    return;
  }
  NetnsLink link;
  ClusterOptions o = InNamespace(link);
  o.daemon_args = {"--insecure-allow-plaintext", "--gang-check-timeout", "8s"};
  MiniCluster c(o);
  for (int i = 0; i < 3; ++i) link.DropTcpPort(CheckPort(i));
  const std::string id = c.Submit(Gang(c, 3));
  const v1::Job job = c.WaitForEnd(id, std::chrono::seconds(90));
  INFO(c.Cli({"describe", id}).out);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK_THAT(job.error().message(),
             Catch::Contains("The fabric check between the gang's nodes failed") &&
                 Catch::Contains("node-0-node-1") && Catch::Contains("node-1-node-2") &&
                 Catch::Contains("The previous attempt's check failed too"));
  REQUIRE(job.attempts_size() == 2);
  CHECK(job.attempts(0).fabric_check().result() == "FAILED");
  CHECK(job.attempts(1).fabric_check().result() == "FAILED");
  for (int i = 0; i < 3; ++i) CHECK(c.GetNode(NodeName(i)).state() == v1::NODE_STATE_READY);
  for (const v1::Replica& r : job.replicas()) CHECK(r.restart_count() == 0);
}

TEST_CASE("fabric check: an operator program that fails on one node blames that node",
          "[integration][fabric]") {
  ClusterOptions o;
  o.agents = 3;
  o.agent_args[0] = {"--gang-check-program", "echo '{\"gbps\": 12.5}'"};
  o.agent_args[1] = {"--gang-check-program", "echo NCCL: unhandled system error; exit 3"};
  o.agent_args[2] = {"--gang-check-program", "echo '{\"gbps\": 11}'"};
  MiniCluster c(o);
  const std::string id = c.Submit(Gang(c, 2));
  const v1::Job job = WaitRunning(c, id);
  INFO(c.Cli({"describe", id}).out);
  REQUIRE(job.attempts_size() == 2);
  CHECK(job.attempts(0).fabric_check().result() == "ISOLATED");
  CHECK(job.attempts(0).fabric_check().culprit() == NodeName(1));
  CHECK_THAT(job.attempts(0).fabric_check().summary(),
             Catch::Contains("exited with status 3") && Catch::Contains("unhandled system error"));
  const v1::FabricCheck& passed = job.attempts(1).fabric_check();
  CHECK(passed.result() == "PASSED");
  REQUIRE(passed.programs_size() == 2);
  CHECK(passed.programs(0).gbps() > 0);
  CHECK(c.GetNode(NodeName(1)).state() == v1::NODE_STATE_ISOLATED);
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
}

TEST_CASE("fabric check: a healthy gang's check passes and is timed", "[integration][fabric]") {
  ClusterOptions o;
  o.agents = 3;
  MiniCluster c(o);
  const std::string id = c.Submit(Gang(c, 3));
  const v1::Job job = WaitRunning(c, id);
  REQUIRE(job.attempts_size() == 1);
  const v1::FabricCheck& check = job.attempts(0).fabric_check();
  CHECK(check.result() == "PASSED");
  CHECK(check.probes_size() == 6);
  for (const v1::FabricProbe& p : check.probes()) {
    CHECK(p.ok());
    CHECK(p.latency_ms() > 0);
    CHECK(p.gbps() > 0);
  }
  const int64_t ms = check.duration().seconds() * 1000 + check.duration().nanos() / 1'000'000;
  WARN("a healthy 3-node fabric check took " << ms << " ms: " << check.summary());
  CHECK_FALSE(c.ListEvents(id, "", "FabricCheckPassed").empty());
  // OFF starts at once, with no check.
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
  const std::string off = c.Submit(Gang(c, 2, "faultTolerance: {gangCheck: OFF}\n"));
  CHECK_FALSE(WaitRunning(c, off).attempts(0).has_fabric_check());
  REQUIRE(c.Cli({"cancel", off}).exit_code == 0);
  c.WaitForEnd(off);
}

TEST_CASE("fabric check: a PyTorch gloo all-reduce as the check program",
          "[integration][netns][fabric][torch]") {
  if (!HaveTorch()) return;
  if (std::string why = NetnsUnavailable(); !why.empty()) {
    WARN(why);
    return;
  }
  NetnsLink link;
  const std::string program =
      absl::StrCat("/usr/bin/python3 ", TRAINCTL_SOURCE_DIR,
                   "/examples/fabric-check/gloo_check.py --mb 4 ", "--timeout 8");
  ClusterOptions o = InNamespace(link, {"--gang-check-program", program});
  MiniCluster c(o);
  const std::string healthy = c.Submit(Gang(c, 2));
  const v1::Job job = WaitRunning(c, healthy, std::chrono::seconds(90));
  INFO(c.Cli({"describe", healthy}).out);
  const v1::FabricCheck& check = job.attempts(0).fabric_check();
  CHECK(check.result() == "PASSED");
  REQUIRE(check.programs_size() == 2);
  for (const v1::FabricProgramRun& run : check.programs()) {
    CHECK(run.ok());
    CHECK(run.gbps() > 0);
  }
  REQUIRE(c.Cli({"cancel", healthy}).exit_code == 0);
  c.WaitForEnd(healthy);

  // The program's rendezvous on node-0 is blocked: the all-reduce fails on both nodes, no single
  // node is to blame, and after one re-dispatch the job fails naming the program's failures.
  link.DropTcpPort(CheckPort(0) + 1);
  const std::string blocked = c.Submit(Gang(c, 2));
  const v1::Job failed = c.WaitForEnd(blocked, std::chrono::seconds(120));
  INFO(c.Cli({"describe", blocked}).out);
  CHECK(failed.state() == v1::JOB_STATE_FAILED);
  CHECK_THAT(failed.error().message(), Catch::Contains("the check program failed on 2 of 2 nodes"));
  REQUIRE(failed.attempts_size() == 2);
  CHECK(failed.attempts(0).fabric_check().result() == "FAILED");
}

}  // namespace fabric_check_test
}  // namespace trainctl::testing
