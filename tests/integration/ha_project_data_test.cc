// What projects keep in trainctld outlives a failover (docs/operators/postgresql-ha.md): two
// trainctld on one PostgreSQL database, sharing one --secret-key-file; a working directory
// uploaded to the first leader and a secret set there serve a job submitted after the leader was
// SIGKILLed, from the standby that took over; and a replica's log shipped to the first leader
// reads whole from the next one once its host is gone too. Runs in ctest's PostgreSQL pass
// (TRAINCTL_TEST_PG).
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/integration/ha_cluster.h"
#include "tests/storage/test_store.h"

namespace trainctl::testing {
namespace {

constexpr char kShippedJob[] = R"(
displayName: shipped-across-failover
workerPools:
- name: chief
  replicaCount: 1
  command: [./train.sh]
  secretRefs: {API_KEY: api-key}
  resources: {cpu: 0.1, memoryMb: 16}
)";

bool Succeeded(const v1::Job& j) { return j.state() == v1::JOB_STATE_SUCCEEDED; }

std::string LastLine(const std::string& text) {
  const std::string trimmed(absl::StripTrailingAsciiWhitespace(text));
  return trimmed.substr(trimmed.rfind('\n') + 1);
}

std::string SubmitShipped(HaCluster& c, const std::string& src, const std::string& name) {
  const std::string spec = absl::StrCat(c.dir(), "/", name, ".yaml");
  std::ofstream(spec) << kShippedJob;
  CliResult r = c.Cli({"submit", "-f", spec, "--workdir", src});
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  // The id is the last line (the CLI's notes on the upload come before it).
  return LastLine(r.out);
}

TEST_CASE("HA: an upload and a project secret serve jobs after a failover",
          "[integration][postgres][workdir][secrets]") {
  HaOptions o;
  o.store = storage::NewPgDatabase();
  // One key for every trainctld of the database, made by the operator.
  const std::string key =
      std::filesystem::temp_directory_path() / absl::StrCat("trainctl-ha-key-", getpid());
  {
    std::ofstream out(key, std::ios::binary);
    out << std::string(32, '\x5a');
  }
  REQUIRE(chmod(key.c_str(), 0600) == 0);
  o.daemon_args = {"--secret-key-file", key};
  HaCluster c(o);
  const int leader = c.WaitForLeader();
  REQUIRE(leader >= 0);

  const std::string src = c.dir() + "/src";
  std::filesystem::create_directories(src);
  std::ofstream(src + "/data.txt") << "shipped-bytes";
  std::ofstream(src + "/train.sh") << "#!/bin/sh\necho \"data=$(cat data.txt) key=$API_KEY\"\n";
  REQUIRE(chmod((src + "/train.sh").c_str(), 0755) == 0);
  CliResult set =
      c.Cli({"secret", "set", "api-key", "--project", "default", "--from-literal", "k-41c9"});
  INFO(set.out);
  REQUIRE(set.exit_code == 0);
  const std::string first = SubmitShipped(c, src, "first");
  c.WaitForJob(first, Succeeded);
  CHECK(absl::StrContains(c.Cli({"logs", first}).out, "data=shipped-bytes key=k-41c9"));

  c.daemon(leader).Signal(SIGKILL);
  REQUIRE(c.daemon(leader).Wait(std::chrono::seconds(10)) != -1);
  const int next = c.WaitForLeader(std::chrono::seconds(10), leader);
  REQUIRE(next >= 0);
  c.WaitForConnectedNodes(2);

  // The new leader holds the upload (nothing is sent again) and opens the secret.
  const std::string spec = c.dir() + "/second.yaml";
  std::ofstream(spec) << kShippedJob;
  CliResult second = c.Cli({"submit", "-f", spec, "--workdir", src});
  INFO(second.out);
  REQUIRE(second.exit_code == 0);
  CHECK(absl::StrContains(second.out, "holds " + src + " already"));
  const std::string id = LastLine(second.out);
  c.WaitForJob(id, Succeeded);
  CHECK(absl::StrContains(c.Cli({"logs", id}).out, "data=shipped-bytes key=k-41c9"));
  std::filesystem::remove(key);
}

TEST_CASE("HA: a replica's log outlives a failover and its host", "[integration][postgres][logs]") {
  HaOptions o;
  o.store = storage::NewPgDatabase();
  o.agents = 1;
  HaCluster c(o);
  const int leader = c.WaitForLeader();
  REQUIRE(leader >= 0);
  const std::string id = c.Submit(R"(
displayName: logged
workerPools:
- name: main
  replicaCount: 1
  command: [/bin/sh, -c, "seq -f 'line %06g' 1 5000"]
  resources: {cpu: 0.1, memoryMb: 16}
)");
  c.WaitForJob(id, Succeeded);
  std::string want;
  for (int n = 1; n <= 5000; ++n) want += absl::StrFormat("line %06d\n", n);
  // Read at `offset` from trainctld k.
  auto read = [&](int k, int64_t offset, v1::ReadLogsResponse* resp) {
    v1::ReadLogsRequest req;
    req.set_job_id(id);
    req.set_replica("main-0");
    req.set_offset(offset);
    req.set_max_bytes(4 << 20);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return c.jobs(k).ReadLogs(&ctx, req, resp).ok();
  };
  // The whole log reached the copy.
  REQUIRE(Eventually([&] {
    v1::ReadLogsResponse resp;
    return read(leader, static_cast<int64_t>(want.size()), &resp) && resp.central() &&
           resp.complete();
  }));
  c.daemon(leader).Signal(SIGKILL);
  REQUIRE(c.daemon(leader).Wait(std::chrono::seconds(10)) != -1);
  const int next = c.WaitForLeader(std::chrono::seconds(10), leader);
  REQUIRE(next >= 0);
  // The host goes too: only the database holds the log now.
  c.agent(0).Signal(SIGKILL);
  REQUIRE(c.agent(0).Wait(std::chrono::seconds(10)) != -1);
  std::filesystem::remove_all(c.AgentWorkDir(0));
  v1::ReadLogsResponse resp;
  REQUIRE(read(next, 0, &resp));
  CHECK(resp.central());
  CHECK(resp.complete());
  CHECK(resp.data() == want);
  CHECK(c.Cli({"logs", id}).out == want);
}

}  // namespace
}  // namespace trainctl::testing
