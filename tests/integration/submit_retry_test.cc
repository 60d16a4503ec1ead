// `trainctl submit` and request ids: a submit made while trainctld is down gets through once it
// is back, and a pipeline step run twice with the same --request-id creates one job.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

constexpr const char* kSpec = R"(
displayName: retried
workerPools:
- name: main
  replicaCount: 1
  command: [/bin/sh, -c, 'sleep 300']
  resources: {cpu: 0.1, memoryMb: 64}
)";

int CountJobs(MiniCluster& c, const std::string& name) {
  v1::ListJobsRequest req;
  v1::ListJobsResponse resp;
  grpc::ClientContext ctx;
  REQUIRE(c.jobs().ListJobs(&ctx, req, &resp).ok());
  int n = 0;
  for (const v1::Job& j : resp.jobs()) n += j.display_name() == name;
  return n;
}

TEST_CASE("a submit made while trainctld is down gets through once it is back, once",
          "[integration][rest]") {
  MiniCluster c(1);
  const std::string spec = c.WriteFile("retried.yaml", kSpec);
  c.KillDaemon(SIGKILL);
  Process submit({BinDir() + "/trainctl", "--server", c.address(), "submit", "-f", spec},
                 c.dir() + "/submit.log");
  // It is retrying: its note names the request id it keeps.
  REQUIRE(Eventually(
      [&] { return absl::StrContains(ReadTextFile(submit.log_path()), "retrying in"); }));
  c.StartDaemon();
  const int status = submit.Wait(std::chrono::seconds(60));
  const std::string log = ReadTextFile(submit.log_path());
  INFO(log);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::vector<std::string> lines = absl::StrSplit(absl::StripSuffix(log, "\n"), '\n');
  const std::string id = lines.back();
  CHECK(absl::StartsWith(id, "j-"));
  CHECK(c.GetJob(id).request_id().size() == 36);
  CHECK(CountJobs(c, "retried") == 1);
}

TEST_CASE("a pipeline step run twice with the same --request-id creates one job",
          "[integration][rest]") {
  MiniCluster c(1);
  const std::string spec = c.WriteFile("retried.yaml", kSpec);
  CliResult first = c.Cli({"submit", "-f", spec, "--request-id", "nightly-2026-11-26"});
  REQUIRE(first.exit_code == 0);
  CliResult second = c.Cli({"submit", "-f", spec, "--request-id", "nightly-2026-11-26"});
  REQUIRE(second.exit_code == 0);
  CHECK(second.out == first.out);
  CHECK(CountJobs(c, "retried") == 1);
  CliResult bad = c.Cli({"submit", "-f", spec, "--request-id", "not ok"});
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Catch::Contains("INVALID_ARGUMENT") &&
                          Catch::Contains("requestId may hold only letters"));
}

}  // namespace
}  // namespace trainctl::testing
