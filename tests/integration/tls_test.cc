// A cluster secured the way docs/operators/security.md bootstraps one: `trainctld pki init`, a
// certificate per agent, trainctld serving TLS and authenticating agents. Real processes, real TLS
// over loopback.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "tests/integration/fake_agent.h"
#include "tests/integration/mini_cluster.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::testing {
namespace {

constexpr char kTlsJob[] = R"(
displayName: steady
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --wait-file, DIR/go]
  resources: {cpu: 0.1, memoryMb: 16}
)";

ClusterOptions Tls(int agents) {
  ClusterOptions o;
  o.agents = agents;
  o.tls = true;
  return o;
}

TEST_CASE("a TLS cluster made by pki init runs a job end to end", "[integration][tls]") {
  MiniCluster c(Tls(2));
  c.WriteFile("go", "");
  const std::string id = c.Submit(c.Spec(kTlsJob));
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);

  // Each node shows the certificate its agent registered with.
  CliResult described = c.Cli({"node", "describe", "node-0"});
  INFO(described.err);
  REQUIRE(described.exit_code == 0);
  v1::Node node = c.GetNode("node-0");
  CHECK_FALSE(node.certificate_fingerprint().empty());
  CHECK(absl::StrContains(described.out, node.certificate_fingerprint()));

  // A plaintext client cannot talk to the TLS port, and is told about --ca.
  CliResult plain = c.Run({BinDir() + "/trainctl", "--server", c.address(), "nodes"});
  CHECK(plain.exit_code != 0);
  CHECK(absl::StrContains(plain.err, "--ca"));
}

TEST_CASE("an agent is bound to the node its certificate names", "[integration][tls]") {
  MiniCluster c(Tls(2));
  // node-2 presents node-0's certificate.
  const std::string stolen = c.PkiDir() + "/agents/node-0";
  c.SetAgentArgs(2, {"--tls-cert", stolen + ".crt", "--tls-key", stolen + ".key"});
  c.StartAgent(2);
  REQUIRE(Eventually([&] { return !c.ListEvents("", "node-2", "AgentRefused").empty(); }));
  std::vector<v1::Event> refused = c.ListEvents("", "node-2", "AgentRefused");
  CHECK(absl::StrContains(refused[0].reason(),
                          "the client certificate is for node 'node-0'; it cannot register as "
                          "'node-2'"));
  REQUIRE(Eventually([&] { return absl::StrContains(c.AgentLog(2), "refused this agent"); }));
  CHECK(Eventually([&] {
    return absl::StrContains(ReadTextFile(c.dir() + "/trainctld.log"),
                             "claiming node node-2 refused");
  }));
  // The real node-0 is untouched.
  CHECK(c.GetNode("node-0").connected());

  // A stream without a client certificate may not register at all.
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ReadTextFile(c.PkiDir() + "/ca.crt");
  v1::Register reg;
  reg.set_node("node-9");
  reg.set_address("127.0.0.1");
  reg.mutable_capacity()->set_cpu(1);
  reg.mutable_capacity()->set_memory_mb(1024);
  *reg.mutable_allocatable() = reg.capacity();
  grpc::Status status = FakeAgent(c.address(), grpc::SslCredentials(tls)).Register(reg);
  CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(absl::StrContains(status.error_message(), "--tls-cert"));
  v1::Node absent;
  grpc::ClientContext get;
  v1::GetNodeRequest req;
  req.set_name("node-9");
  CHECK(c.cluster().GetNode(&get, req, &absent).error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE("a revoked node's certificate is refused, across restarts, until a new one is issued",
          "[integration][tls]") {
  MiniCluster c(Tls(2));
  const std::string id = c.Submit(c.Spec(kTlsJob));
  v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const std::string victim = running.replicas(0).node();
  const int index = victim == "node-0" ? 0 : 1;
  const std::string old_fp = c.GetNode(victim).certificate_fingerprint();
  REQUIRE_FALSE(old_fp.empty());

  CliResult revoked = c.Cli({"node", "revoke", victim, "--reason", "host stolen"});
  INFO(revoked.err);
  REQUIRE(revoked.exit_code == 0);
  CHECK(absl::StrContains(revoked.out, "LOST"));
  v1::Node node = c.GetNode(victim);
  CHECK(node.cordoned());
  CHECK(node.revoked_certificates_size() == 1);
  CHECK(node.revoked_certificates(0) == old_fp);
  REQUIRE(c.ListEvents("", victim, "NodeRevoked").size() == 1);

  // Its replica moves to the other node; its agent is refused when it reconnects.
  c.WaitForJob(id, [&](const v1::Job& j) {
    return j.replicas(0).node() != victim && j.replicas(0).state() == v1::REPLICA_STATE_RUNNING;
  });
  REQUIRE(Eventually([&] { return absl::StrContains(c.AgentLog(index), "was revoked"); }));
  CHECK_FALSE(c.GetNode(victim).connected());

  // The revocation is in the store: a restarted trainctld still refuses it.
  c.KillDaemon(SIGTERM);
  c.StartDaemon();
  REQUIRE(Eventually([&] { return !c.ListEvents("", victim, "AgentRefused").empty(); }));
  CHECK_FALSE(c.GetNode(victim).connected());

  // A new certificate lets the host back in, cordoned until an operator uncordons it.
  c.KillAgent(index, SIGTERM);
  CliResult issued = c.Pki({"issue-agent", c.PkiDir(), victim});
  REQUIRE(issued.exit_code == 0);
  c.StartAgent(index);
  v1::Node back = c.WaitForNode(victim, [](const v1::Node& n) { return n.connected(); });
  CHECK(back.certificate_fingerprint() != old_fp);
  CHECK(back.cordoned());
  c.WriteFile("go", "");
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("trainctld refuses plaintext off loopback without the escape hatch",
          "[integration][tls]") {
  MiniCluster c(0);
  CliResult refused =
      c.Run({BinDir() + "/trainctld", "--data-dir", c.dir() + "/other", "--listen", "0.0.0.0:0"});
  CHECK(refused.exit_code == 2);
  CHECK(absl::StrContains(refused.err, "--tls-cert"));
  CHECK(absl::StrContains(refused.err, "--insecure-allow-plaintext"));
  CliResult half = c.Run({BinDir() + "/trainctld", "--data-dir", c.dir() + "/other", "--tls-cert",
                          c.dir() + "/missing.crt", "--tls-key", c.dir() + "/missing.key",
                          "--agent-ca", c.dir() + "/missing.crt"});
  CHECK(half.exit_code == 2);
  CHECK(absl::StrContains(half.err, "--tls-cert " + c.dir() + "/missing.crt: cannot read it"));
}

}  // namespace
}  // namespace trainctl::testing
