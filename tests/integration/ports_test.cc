// Allocated ports end to end: many jobs running at once on two agents never share a port on a
// node, and what each replica sees (MASTER_PORT, its cluster spec) is what the API shows.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// Each replica writes what it sees to DIR/env-<job>-<replica> (whole, by a rename), then runs
// until DIR/go exists.
constexpr char kPortsJob[] = R"(
displayName: ports
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c]
  args: ['f=DIR/env-$TRAINCTL_JOB_ID-$TRAINCTL_REPLICA_NAME; WORKLOAD --env > $f.tmp && mv $f.tmp $f && exec WORKLOAD --wait-file DIR/go']
  resources: {cpu: 0.05, memoryMb: 16}
- name: worker
  replicaCount: 1
  command: [/bin/sh, -c]
  args: ['f=DIR/env-$TRAINCTL_JOB_ID-$TRAINCTL_REPLICA_NAME; WORKLOAD --env > $f.tmp && mv $f.tmp $f && exec WORKLOAD --wait-file DIR/go']
  resources: {cpu: 0.05, memoryMb: 16}
)";

TEST_CASE("40 jobs running at once on two nodes never share a port", "[integration][ports]") {
  constexpr int kJobs = 40;
  ClusterOptions o;
  o.agents = 2;
  o.port_range_size = 128;  // 128 ports a node for about 60
  MiniCluster c(o);
  const int kLo = c.ports().lo();
  const int kHi = c.ports().hi();
  REQUIRE(kHi - kLo + 1 == 128);
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) ids.push_back(c.Submit(c.Spec(kPortsJob)));
  for (const std::string& id : ids)
    c.WaitForState(id, v1::JOB_STATE_RUNNING, std::chrono::seconds(90));

  // Every (node, port) any live replica holds, from the API, while all of them run.
  std::set<std::pair<std::string, int32_t>> held;
  int32_t count = 0;
  std::map<std::string, v1::Job> jobs;
  for (const std::string& id : ids) {
    const v1::Job job = c.GetJob(id);
    REQUIRE(job.state() == v1::JOB_STATE_RUNNING);
    REQUIRE(job.replicas_size() == 2);
    for (const v1::Replica& r : job.replicas()) {
      INFO(id << " " << r.name() << " on " << r.node());
      REQUIRE(r.state() == v1::REPLICA_STATE_RUNNING);
      std::vector<int32_t> ports = {r.port()};
      if (r.rank() == 0) ports.push_back(r.rendezvous_port());
      const bool primary = r.rank() == 0;
      CHECK((r.rendezvous_port() != 0) == primary);
      for (int32_t port : ports) {
        CHECK(port >= kLo);
        CHECK(port <= kHi);
        held.insert({r.node(), port});
        ++count;
      }
    }
    jobs[id] = job;
  }
  CHECK(count == kJobs * 3);
  CHECK(static_cast<int32_t>(held.size()) == count);  // no two the same

  // What each replica saw: MASTER_PORT is its primary's rendezvous port, and its cluster spec
  // lists every replica of its job at its own port.
  auto env_file = [&c](const std::string& id, const std::string& replica) {
    return absl::StrCat(c.dir(), "/env-", id, "-", replica);
  };
  REQUIRE(Eventually(
      [&] {
        for (const auto& [id, job] : jobs) {
          for (const v1::Replica& r : job.replicas()) {
            if (ReadTextFile(env_file(id, r.name())).empty()) return false;
          }
        }
        return true;
      },
      std::chrono::seconds(60)));
  std::set<std::pair<std::string, std::string>> master_ports;  // (node, MASTER_PORT) per job
  for (const auto& [id, job] : jobs) {
    const v1::Replica& chief = job.replicas(0);
    const v1::Replica& worker = job.replicas(1);
    master_ports.insert({chief.node(), absl::StrCat(chief.rendezvous_port())});
    for (const v1::Replica& r : job.replicas()) {
      INFO(id << " " << r.name());
      std::map<std::string, std::string> env = ParseEnvLines(ReadTextFile(env_file(id, r.name())));
      CHECK(env["TRAINCTL_NODE"] == r.node());
      CHECK(env["MASTER_PORT"] == absl::StrCat(chief.rendezvous_port()));
      const std::string& spec = env["TRAINCTL_CLUSTER_SPEC"];
      CHECK_THAT(spec, Catch::Contains(absl::StrCat("\"chief\":[\"", env["MASTER_ADDR"], ":",
                                                    chief.port(), "\"]")));
      CHECK_THAT(spec, Catch::Contains(absl::StrCat(":", worker.port(), "\"]")));
      CHECK_THAT(env["CLUSTER_SPEC"], Catch::Contains(absl::StrCat(":", chief.port(), "\"]")));
    }
  }
  CHECK(static_cast<int>(master_ports.size()) == kJobs);

  // `describe` shows them.
  CliResult describe = c.Cli({"describe", ids[0]});
  CHECK_THAT(describe.out,
             Catch::Contains(absl::StrCat(jobs[ids[0]].replicas(0).port(), " (rendezvous ",
                                          jobs[ids[0]].replicas(0).rendezvous_port(), ")")));

  c.WriteFile("go", "");
  for (const std::string& id : ids) CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
}

}  // namespace
}  // namespace trainctl::testing
