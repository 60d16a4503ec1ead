// Users with roles on a TLS cluster: the first admin token, tokens made with `trainctl admin
// token`, each role's permissions (backups an admin's alone), project scopes, the actor of events,
// revocation, and tokens kept across a restart. Real processes, real TLS over loopback.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/sync_stream.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "tests/integration/mini_cluster.h"
#include "tests/integration/reflection_client.h"

namespace trainctl::testing {
namespace {

constexpr char kAuthJob[] = R"(
displayName: held
project: PROJECT
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --wait-file, DIR/never]
  resources: {cpu: 0.1, memoryMb: 16}
)";

ClusterOptions Tls() {
  ClusterOptions o;
  o.agents = 1;
  o.tls = true;
  return o;
}

// `trainctl admin token create ARGS` as the admin; REQUIREs success, returns the bearer token.
std::string CreateToken(MiniCluster& c, std::vector<std::string> args) {
  args.insert(args.begin(), {"admin", "token", "create"});
  CliResult r = c.Cli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string token(absl::StripAsciiWhitespace(r.out));
  REQUIRE(absl::StartsWith(token, "tct_"));
  return token;
}

std::string SpecFile(MiniCluster& c, const std::string& project) {
  std::string spec = c.Spec(kAuthJob);
  spec.replace(spec.find("PROJECT"), 7, project);
  static int n = 0;
  return c.WriteFile("auth-spec-" + std::to_string(++n) + ".yaml", spec);
}

// The CLI failed with this gRPC code, its message containing `text`.
void CheckRefused(const CliResult& r, const std::string& code, const std::string& text) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(absl::StrContains(r.err, "error: " + code + ": "));
  CHECK(absl::StrContains(r.err, text));
}

TEST_CASE("roles and projects decide what a token may do", "[integration][tls][auth]") {
  MiniCluster c(Tls());
  // The first admin token is the owner's alone.
  const auto owner_rw = std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;
  CHECK((std::filesystem::status(c.AdminTokenPath()).permissions() & std::filesystem::perms::all) ==
        owner_rw);
  CliResult me = c.Cli({"whoami"});
  REQUIRE(me.exit_code == 0);
  CHECK(absl::StrContains(me.out, "admin"));

  // No token, or a wrong one: UNAUTHENTICATED, saying how to get one.
  CheckRefused(c.CliAs("", {"list"}), "UNAUTHENTICATED", "--token");
  CheckRefused(c.CliAs("tct_0000000000000000_" + std::string(64, '0'), {"list"}), "UNAUTHENTICATED",
               "not known");

  const std::string viewer = CreateToken(c, {"--owner", "vic", "--role", "viewer"});
  const std::string alice =
      CreateToken(c, {"--owner", "alice", "--role", "member", "--project", "team-a"});
  const std::string bob =
      CreateToken(c, {"--owner", "bob", "--role", "member", "--project", "team-b"});
  const std::string ops = CreateToken(c, {"--owner", "ops", "--role", "operator"});

  // A viewer reads but submits nothing.
  CHECK(c.CliAs(viewer, {"list"}).exit_code == 0);
  CheckRefused(c.CliAs(viewer, {"submit", "-f", SpecFile(c, "team-a")}), "PERMISSION_DENIED",
               "vic's token (role viewer) lacks the permission submit");
  // A backup is an admin's alone (the copy holds secrets); any token may ask for the version.
  const std::string denied_backup = c.dir() + "/viewer-backup.db";
  CheckRefused(c.CliAs(viewer, {"admin", "backup", denied_backup}), "PERMISSION_DENIED",
               "vic's token (role viewer) lacks the permission backup");
  CHECK_FALSE(std::filesystem::exists(denied_backup));
  CliResult version = c.CliAs(viewer, {"version"});
  CHECK(version.exit_code == 0);
  CHECK(absl::StrContains(version.out, "\ntrainctld "));
  CliResult backup = c.Cli({"admin", "backup", c.dir() + "/admin-backup.db"});
  INFO(backup.err);
  CHECK(backup.exit_code == 0);

  // A member submits in its project only.
  CliResult submitted = c.CliAs(alice, {"submit", "-f", SpecFile(c, "team-a")});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id(absl::StripAsciiWhitespace(submitted.out));
  CheckRefused(c.CliAs(alice, {"submit", "-f", SpecFile(c, "team-b")}), "PERMISSION_DENIED",
               "alice's token lacks the permission submit in project team-b");
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  // The job records who submitted it.
  CHECK(c.GetJob(id).creator() == "alice");
  CHECK(absl::StrContains(c.Cli({"describe", id}).out, "alice"));

  // Another project's member sees the job but may not cancel it or read its logs.
  CHECK(c.CliAs(bob, {"get", id}).exit_code == 0);
  CheckRefused(c.CliAs(bob, {"cancel", id}), "PERMISSION_DENIED",
               "bob's token lacks the permission cancel in project team-a");
  CheckRefused(c.CliAs(bob, {"logs", id}), "PERMISSION_DENIED",
               "lacks the permission read-logs in project team-a");
  CheckRefused(c.CliAs(viewer, {"logs", id}), "PERMISSION_DENIED", "read-logs");

  // An operator drives nodes but sets no quota and makes no tokens.
  CHECK(c.CliAs(ops, {"node", "cordon", "node-0", "--reason", "bios update"}).exit_code == 0);
  CHECK(c.CliAs(ops, {"logs", id}).exit_code == 0);
  CheckRefused(c.CliAs(ops, {"quota", "set", "team-a", "--gpus", "4"}), "PERMISSION_DENIED",
               "set-quota");
  CheckRefused(c.CliAs(ops, {"admin", "token", "list"}), "PERMISSION_DENIED", "manage-tokens");
  CheckRefused(c.CliAs(ops, {"node", "delete", "node-0"}), "PERMISSION_DENIED", "delete-nodes");

  // The owner of the token is the actor of the events its calls caused.
  REQUIRE(c.CliAs(alice, {"cancel", id}).exit_code == 0);
  CliResult by_alice = c.Cli({"events", "--actor", "alice", "-o", "json"});
  REQUIRE(by_alice.exit_code == 0);
  CHECK(absl::StrContains(by_alice.out, "\"JobQueued\""));
  CHECK(absl::StrContains(by_alice.out, "\"actor\": \"alice\""));
  CHECK_FALSE(absl::StrContains(by_alice.out, "NodeCordoned"));
  CliResult by_ops = c.Cli({"events", "--actor", "ops"});
  CHECK(absl::StrContains(by_ops.out, "NodeCordoned"));
  CHECK(absl::StrContains(by_ops.out, "ops"));

  // The list names every token and shows no secret.
  CliResult list = c.Cli({"admin", "token", "list"});
  REQUIRE(list.exit_code == 0);
  for (const char* owner : {"admin", "vic", "alice", "bob", "ops"}) {
    CHECK(absl::StrContains(list.out, owner));
  }
  CHECK_FALSE(absl::StrContains(list.out, alice.substr(21)));

  // A revoked token is refused from then on.
  const std::string vic_id = viewer.substr(4, 16);
  REQUIRE(c.Cli({"admin", "token", "revoke", vic_id}).exit_code == 0);
  CheckRefused(c.CliAs(viewer, {"list"}), "UNAUTHENTICATED", "was revoked");
}

// One ServerReflectionInfo exchange asking for the service list over a TLS channel with
// `token` ("" for none); the raw response bytes, or the error.
absl::StatusOr<std::string> ListServicesByReflection(MiniCluster& c, const std::string& token) {
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ReadTextFile(c.PkiDir() + "/ca.crt");
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(tls);
  if (!token.empty()) {
    creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(token));
  }
  return ReflectionExchange(grpc::CreateChannel(c.address(), creds), ListServicesRequest());
}

TEST_CASE("a replica reports its progress with its job's token, and may do nothing else",
          "[integration][tls][auth]") {
  MiniCluster c(Tls());
  std::string spec = c.Spec(R"(
displayName: reporter
workerPools:
- name: chief
  replicaCount: 1
  command:
  - sh
  - -c
  - |
    BIN/trainctl progress --step 7 --message warmup > DIR/progress.out 2>&1
    echo $? > DIR/progress.rc
    BIN/trainctl cancel $TRAINCTL_JOB_ID > DIR/cancel.out 2>&1
    BIN/trainctl progress --job j-notmine > DIR/other.out 2>&1
    echo done > DIR/reported
    exec WORKLOAD --wait-file DIR/never
  resources: {cpu: 0.1, memoryMb: 512}
)");
  spec = absl::StrReplaceAll(spec, {{"BIN", BinDir()}});
  const std::string id = c.Submit(spec);
  CHECK(Eventually([&] { return std::filesystem::exists(c.dir() + "/reported"); },
                   std::chrono::seconds(30)));
  const auto read = [&](const std::string& name) { return ReadTextFile(c.dir() + "/" + name); };
  INFO(read("progress.out"));
  INFO(c.GetJob(id).error().message());
  CHECK(read("progress.rc") == "0\n");
  // The progress reached the job, with its step.
  CHECK(c.GetJob(id).replicas(0).has_last_progress_time());
  CHECK(c.GetJob(id).replicas(0).step() == 7);
  // The token does nothing else: not even cancel its own job, nor report for another one.
  CHECK_THAT(read("cancel.out"),
             Catch::Contains("PERMISSION_DENIED") && Catch::Contains("allows only ReportProgress"));
  CHECK_THAT(read("other.out"), Catch::Contains("PERMISSION_DENIED") &&
                                    Catch::Contains("its own job only, not j-notmine"));
  CHECK(c.GetJob(id).state() == v1::JOB_STATE_RUNNING);
  // A forged token is no token.
  CliResult forged = c.CliAs("tcr_" + id + "_" + std::string(64, '0'), {"get", id});
  CHECK(forged.exit_code == 2);
  CHECK_THAT(forged.err, Catch::Contains("UNAUTHENTICATED"));
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
}

TEST_CASE("server reflection needs a token when authentication is on", "[integration][tls][auth]") {
  MiniCluster c(Tls());
  absl::StatusOr<std::string> anonymous = ListServicesByReflection(c, "");
  CHECK(anonymous.status().code() == absl::StatusCode::kUnauthenticated);
  CHECK(absl::StrContains(anonymous.status().message(), "requires a token"));
  const std::string viewer = CreateToken(c, {"--owner", "vic", "--role", "viewer"});
  absl::StatusOr<std::string> listed = ListServicesByReflection(c, viewer);
  INFO(listed.status().ToString());
  REQUIRE(listed.ok());
  CHECK(absl::StrContains(*listed, "trainctl.v1.JobService"));
  // The gate leaves every other call to its service: a viewer still cannot submit.
  CHECK(c.CliAs(viewer, {"whoami"}).exit_code == 0);
}

TEST_CASE("tokens survive a restart, and the first admin token is written once",
          "[integration][tls][auth]") {
  MiniCluster c(Tls());
  const std::string first = ReadTextFile(c.AdminTokenPath());
  const std::string alice = CreateToken(
      c, {"--owner", "alice", "--role", "member", "--project", "team-a", "--ttl", "720h"});
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  CHECK(ReadTextFile(c.AdminTokenPath()) == first);
  CliResult me = c.CliAs(alice, {"whoami"});
  INFO(me.err);
  REQUIRE(me.exit_code == 0);
  CHECK(absl::StrContains(me.out, "alice"));
  CHECK(absl::StrContains(me.out, "team-a"));
  CHECK(absl::StrContains(me.out, "Expires"));
}

TEST_CASE("a plaintext cluster on loopback asks for no token", "[integration][auth]") {
  MiniCluster c(1);
  CliResult me = c.Cli({"whoami"});
  REQUIRE(me.exit_code == 0);
  CHECK(absl::StrContains(me.out, "anonymous"));
  CHECK(absl::StrContains(me.out, "does not authenticate"));
  CHECK_FALSE(std::filesystem::exists(c.dir() + "/scheduler/admin.token"));
}

}  // namespace
}  // namespace trainctl::testing
