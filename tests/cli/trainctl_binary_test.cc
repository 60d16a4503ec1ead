// Runs the trainctl binary against an in-process fake server (fake_server.h) and checks what
// it prints and its exit status: the contract scripts rely on (ids alone on stdout,
// "error: CODE: message" on stderr, 0/1/2 exit statuses), paging, reconnecting watches and log
// following.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/spec_parse.h"
#include "tests/cli/fake_server.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

TEST_CASE("submit prints the job id alone, get shows it in every format", "[binary]") {
  Result submit = Fake().Run("submit -f examples/hello.yaml");
  INFO(submit.err);
  REQUIRE(submit.exit_status == 0);
  CHECK_THAT(submit.out, Catch::Matches("j-[0-9]+\n"));
  const std::string id = submit.out.substr(0, submit.out.size() - 1);

  for (const char* format : {"json", "yaml"}) {
    Result get = Fake().Run(absl::StrCat("get ", id, " -o ", format));
    REQUIRE(get.exit_status == 0);
    v1::Job job;  // JSON and YAML both read back through the spec parser
    REQUIRE(ParseYamlToMessage(get.out, &job).ok());
    CHECK(job.id() == id);
    CHECK(job.state() == v1::JOB_STATE_QUEUED);
    CHECK(job.spec().worker_pools(1).replica_count() == 3);
  }
  Result table = Fake().Run(absl::StrCat("get ", id));
  CHECK_THAT(table.out, Catch::Contains("State:     QUEUED\n"));
  CHECK_THAT(table.out, Catch::Contains("chief-0   0      -      PENDING"));
}

TEST_CASE("every example spec parses", "[binary]") {
  for (const char* name : {"hello", "fails", "long", "elastic"}) {
    INFO(name);
    absl::StatusOr<v1::JobSpec> spec =
        ParseJobSpecFile(absl::StrCat(TRAINCTL_SOURCE_DIR, "/examples/", name, ".yaml"));
    REQUIRE(spec.ok());
    CHECK(spec->worker_pools(0).replica_count() == 1);
  }
}

TEST_CASE("errors go to stderr as CODE: message with exit status 2", "[binary]") {
  Result bad = Fake().Run("submit -f -", "workerPools: [{replicaCount: 0}]");
  CHECK(bad.exit_status == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err == "error: INVALID_ARGUMENT: workerPools[0].replicaCount must be 1..4096, got 0\n");

  Result malformed = Fake().Run("submit -f -", "a: [b\n");
  CHECK(malformed.exit_status == 2);
  CHECK_THAT(malformed.err,
             Catch::StartsWith("error: INVALID_ARGUMENT: <stdin>: invalid YAML at line "));

  Result missing = Fake().Run("get j-nope");
  CHECK(missing.exit_status == 2);
  CHECK(missing.err == "error: NOT_FOUND: job j-nope not found\n");

  Result usage = Fake().Run("get");
  CHECK(usage.exit_status == 2);
  CHECK_THAT(usage.err, Catch::StartsWith("error: INVALID_ARGUMENT: \"get\" needs ID\n"));

  Result down = Fixture::RunBinary("--server 127.0.0.1:1 list");
  CHECK(down.exit_status == 2);
  CHECK_THAT(down.err, Catch::StartsWith(
                           "error: UNAVAILABLE: cannot reach the trainctl server at 127.0.0.1:1"));
}

TEST_CASE("list follows page tokens up to --limit and filters", "[binary]") {
  for (int i = 0; i < 3; ++i) REQUIRE(Fake().Run("submit -f examples/long.yaml").exit_status == 0);
  Result all = Fake().Run("list -o json");
  REQUIRE(all.exit_status == 0);
  v1::ListJobsResponse listed;
  REQUIRE(ParseYamlToMessage(all.out, &listed).ok());
  CHECK(listed.jobs_size() >= 7);  // 4 seeded + 3 submitted here, in pages of 2

  Result limited = Fake().Run("list --limit 3");
  CHECK_THAT(limited.out, Catch::StartsWith("ID "));
  CHECK(std::count(limited.out.begin(), limited.out.end(), '\n') == 4);  // header + 3

  Result queued = Fake().Run("list --state queued,QUEUED -o yaml");
  REQUIRE(ParseYamlToMessage(queued.out, &listed).ok());
  CHECK(listed.jobs_size() >= 3);
  for (const v1::Job& job : listed.jobs()) CHECK(job.state() == v1::JOB_STATE_QUEUED);

  Result none = Fake().Run("list --project nobody");
  CHECK(none.exit_status == 0);
  CHECK(none.out.empty());
  CHECK(none.err == "No jobs found.\n");
}

TEST_CASE("wait exits 0, 1 or 2 and rides out a broken stream", "[binary]") {
  Result ok = Fake().Run("wait j-ok");
  CHECK(ok.exit_status == 0);
  CHECK(ok.out == "j-ok SUCCEEDED\n");

  Result failed = Fake().Run("wait j-fail");
  CHECK(failed.exit_status == 1);
  CHECK(failed.out == "j-fail FAILED: Replica worker-1 exited with a non-zero status of 3.\n");

  Result flaky = Fake().Run("wait j-flaky");
  CHECK(flaky.exit_status == 0);
  CHECK(flaky.out == "j-flaky SUCCEEDED\n");
  CHECK_THAT(flaky.err, Catch::Contains("reconnecting"));

  Result slow = Fake().Run("wait j-slow --timeout 300ms");
  CHECK(slow.exit_status == 2);
  CHECK(slow.err ==
        "error: DEADLINE_EXCEEDED: timed out after 300ms waiting for job j-slow (last state "
        "RUNNING)\n");

  CHECK(Fake().Run("wait j-nope").exit_status == 2);
}

TEST_CASE("logs reads to the end, and -f follows through transient errors", "[binary]") {
  Result logs = Fake().Run("logs j-ok --replica chief-0");
  CHECK(logs.exit_status == 0);
  CHECK(logs.out == "hello\nworld\n");

  Result follow = Fake().Run("logs j-ok -f --replica growing");
  CHECK(follow.exit_status == 0);
  CHECK(follow.out == "line 1\nline 2\nline 3\n");

  Result missing = Fake().Run("logs j-ok --replica nope");
  CHECK(missing.exit_status == 2);
  CHECK(missing.err == "error: NOT_FOUND: no replica nope\n");
}

TEST_CASE("cancel prints the id and the new state", "[binary]") {
  Result submit = Fake().Run("submit -f examples/long.yaml");
  REQUIRE(submit.exit_status == 0);
  const std::string id = submit.out.substr(0, submit.out.size() - 1);
  Result cancel = Fake().Run("cancel " + id);
  CHECK(cancel.exit_status == 0);
  CHECK(cancel.out == id + " CANCELLED\n");
}

TEST_CASE("progress sends the step and a finished checkpoint", "[binary]") {
  Result plain = Fake().Run("progress --job j-ok --replica worker-0 --step 120");
  INFO(plain.err);
  REQUIRE(plain.exit_status == 0);
  CHECK(plain.out.empty());
  v1::ReportProgressRequest sent = Fake().LastProgressRequest();
  CHECK(sent.job_id() == "j-ok");
  CHECK(sent.replica() == "worker-0");
  CHECK(sent.step() == 120);
  CHECK_FALSE(sent.checkpoint());

  Result checkpoint = Fake().Run("progress --job j-ok --replica worker-0 --step 130 --checkpoint");
  INFO(checkpoint.err);
  REQUIRE(checkpoint.exit_status == 0);
  sent = Fake().LastProgressRequest();
  CHECK(sent.step() == 130);
  CHECK(sent.checkpoint());

  Result help = Fake().Run("progress --help");
  CHECK(help.exit_status == 0);
  CHECK_THAT(help.out + help.err, Catch::Contains("--checkpoint"));

  Result bad = Fake().Run("progress --job j-ok --replica worker-0 --checkpoint=maybe");
  CHECK(bad.exit_status == 2);
}

}  // namespace
}  // namespace trainctl::cli
