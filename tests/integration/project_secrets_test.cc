// Secrets a project keeps in trainctld (`trainctl secret`, workerPools[].secretRefs), on a TLS
// cluster with project members: a secret set in team-a reaches its replica's environment, a
// changed one the next launch; no read returns it (get, describe, REST, events, list); team-b
// can neither manage nor reference it; a deleted one fails the submit; and the value is in no
// file of the database. Real processes, real TLS over loopback.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/http_client.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

constexpr char kFirstValue[] = "wb-first-6f1d2c";
constexpr char kSecondValue[] = "wb-second-93a7e0";

std::string Token(MiniCluster& c, std::vector<std::string> args) {
  args.insert(args.begin(), {"admin", "token", "create"});
  CliResult r = c.Cli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return std::string(absl::StripAsciiWhitespace(r.out));
}

std::string SpecFile(MiniCluster& c, const std::string& project, const std::string& name) {
  static int n = 0;
  return c.WriteFile(absl::StrCat("secret-job-", ++n, ".yaml"), absl::StrCat(R"(
displayName: uses-a-secret
project: )",
                                                                             project, R"(
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'echo "key=$WANDB_API_KEY"']
  secretRefs: {WANDB_API_KEY: )",
                                                                             name, R"(}
  resources: {cpu: 0.1, memoryMb: 16}
)"));
}

// Neither value appears in `text`.
void CheckNoValue(const std::string& what, const std::string& text) {
  INFO(what << ": " << text);
  CHECK_FALSE(absl::StrContains(text, kFirstValue));
  CHECK_FALSE(absl::StrContains(text, kSecondValue));
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("a project's secret reaches its replicas and no reader", "[integration][tls][secrets]") {
  ClusterOptions o;
  o.agents = 1;
  o.tls = true;
  MiniCluster c(o);
  const std::string alice =
      Token(c, {"--owner", "alice", "--role", "member", "--project", "team-a"});
  const std::string bob = Token(c, {"--owner", "bob", "--role", "member", "--project", "team-b"});

  CliResult set = c.CliAs(
      alice, {"secret", "set", "wandb", "--project", "team-a", "--from-literal", kFirstValue});
  INFO(set.err);
  REQUIRE(set.exit_code == 0);
  CHECK(absl::StrContains(set.out, "secret wandb of project team-a set (15 bytes)"));
  // Another project's member may neither manage nor list team-a's secrets.
  CliResult denied =
      c.CliAs(bob, {"secret", "set", "wandb", "--project", "team-a", "--from-literal", "x"});
  CHECK(denied.exit_code == 2);
  CHECK(absl::StrContains(denied.err, "lacks the permission manage-secrets in project team-a"));
  CHECK(c.CliAs(bob, {"secret", "list", "--project", "team-a"}).exit_code == 2);
  CliResult listed = c.CliAs(alice, {"secret", "list", "--project", "team-a", "-o", "json"});
  REQUIRE(listed.exit_code == 0);
  CHECK(absl::StrContains(listed.out, "\"name\": \"wandb\""));
  CheckNoValue("secret list", listed.out);

  // The replica gets the value; reads show the reference only.
  CliResult submitted = c.CliAs(alice, {"submit", "-f", SpecFile(c, "team-a", "wandb")});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id(absl::StripAsciiWhitespace(submitted.out));
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  CHECK(absl::StrContains(c.CliAs(alice, {"logs", id}).out, absl::StrCat("key=", kFirstValue)));
  CliResult got = c.Cli({"get", id, "-o", "json"});
  CHECK(absl::StrContains(got.out, "\"WANDB_API_KEY\": \"wandb\""));
  CheckNoValue("get", got.out);
  CheckNoValue("describe", c.Cli({"describe", id}).out);
  CheckNoValue("events", c.Cli({"events", id}).out);
  CheckNoValue("cluster events", c.Cli({"events", "-o", "json"}).out);
  auto https = Https(c);
  httplib::Headers auth = {{"Authorization", "Bearer " + alice}};
  httplib::Result rest_job = https->Get(("/v1/jobs/" + id).c_str(), auth);
  REQUIRE(rest_job);
  CHECK(rest_job->status == 200);
  CheckNoValue("REST job", rest_job->body);
  httplib::Result rest_list = https->Get("/v1/projects/team-a/secrets", auth);
  REQUIRE(rest_list);
  CHECK(rest_list->status == 200);
  CHECK(absl::StrContains(rest_list->body, "wandb"));
  CheckNoValue("REST secrets", rest_list->body);

  // A changed value reaches the next launch, set over REST this time.
  httplib::Result rest_set =
      https->Put("/v1/projects/team-a/secrets/wandb", auth,
                 absl::StrCat("{\"value\": \"", kSecondValue, "\"}"), "application/json");
  REQUIRE(rest_set);
  INFO(rest_set->body);
  CHECK(rest_set->status == 200);
  CheckNoValue("REST set", rest_set->body);
  const std::string second = std::string(absl::StripAsciiWhitespace(
      c.CliAs(alice, {"submit", "-f", SpecFile(c, "team-a", "wandb")}).out));
  c.WaitForState(second, v1::JOB_STATE_SUCCEEDED);
  CHECK(
      absl::StrContains(c.CliAs(alice, {"logs", second}).out, absl::StrCat("key=", kSecondValue)));

  // team-b's jobs cannot refer to it: their project holds no such secret.
  CliResult other = c.CliAs(bob, {"submit", "-f", SpecFile(c, "team-b", "wandb")});
  CHECK(other.exit_code == 2);
  CHECK(absl::StrContains(other.err, "INVALID_ARGUMENT"));
  CHECK(absl::StrContains(other.err, "project team-b has no secret \"wandb\""));

  // Stored sealed: no file of the database holds either value.
  for (const auto& entry : std::filesystem::directory_iterator(c.DataDir())) {
    if (!entry.is_regular_file()) continue;
    CheckNoValue(entry.path().string(), FileBytes(entry.path().string()));
  }
  // The key beside it is its owner's alone.
  CHECK((std::filesystem::status(c.DataDir() + "/secrets.key").permissions() &
         std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));

  // Deleted: a new submit that refers to it is refused.
  CliResult deleted = c.CliAs(alice, {"secret", "delete", "wandb", "--project", "team-a"});
  INFO(deleted.err);
  CHECK(deleted.exit_code == 0);
  CHECK(c.CliAs(alice, {"secret", "list", "--project", "team-a"}).out.empty());
  CliResult gone = c.CliAs(alice, {"submit", "-f", SpecFile(c, "team-a", "wandb")});
  CHECK(gone.exit_code == 2);
  CHECK(absl::StrContains(gone.err, "project team-a has no secret \"wandb\""));
}

TEST_CASE("a secret deleted under a running job fails its next launch, naming it",
          "[integration][secrets]") {
  MiniCluster c(1);
  REQUIRE(c.Cli({"secret", "set", "api", "--project", "default", "--from-literal", kFirstValue})
              .exit_code == 0);
  // Exits 1 once DIR/go exists; its restart needs the secret again.
  CliResult submitted = c.Cli({"submit", "-f", c.WriteFile("restarts.yaml", c.Spec(R"(
displayName: restarts-without-its-secret
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --wait-file, DIR/go, --exit, "1"]
  secretRefs: {API_KEY: api}
  resources: {cpu: 0.1, memoryMb: 16}
scheduling:
  restartPolicy: RESTART_POLICY_ON_FAILURE
  maxReplicaRestarts: 3
  maxJobRetries: 0
)"))});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id(absl::StripAsciiWhitespace(submitted.out));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  CliResult deleted = c.Cli({"secret", "delete", "api", "--project", "default"});
  INFO(deleted.err);
  REQUIRE(deleted.exit_code == 0);
  CHECK(absl::StrContains(deleted.out, "secret api of project default deleted"));
  std::ofstream(c.dir() + "/go") << "go\n";
  const v1::Job failed = c.WaitForState(id, v1::JOB_STATE_FAILED);
  INFO(failed.DebugString());
  CHECK(absl::StrContains(c.Cli({"describe", id}).out, "secret \"api\" for API_KEY"));
  CHECK(absl::StrContains(failed.error().message(), "project default has no secret named api"));
}

}  // namespace
}  // namespace trainctl::testing
