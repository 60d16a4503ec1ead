// Node selection and topology end to end: agents with --labels, jobs with nodeSelector and
// scheduling.placement.packWithin through the CLI, and where their replicas really run.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// Four agents of 4 cpu: node-0 and node-1 in rack r1, node-2 and node-3 in rack r2; node-3 is
// the only one with gpu.type=a100.
ClusterOptions RackedCluster() {
  ClusterOptions o;
  o.agents = 4;
  o.agent_args[0] = {"--labels", "topology.rack=r1"};
  o.agent_args[1] = {"--labels", "topology.rack=r1"};
  o.agent_args[2] = {"--labels", "topology.rack=r2"};
  o.agent_args[3] = {"--labels", "topology.rack=r2,gpu.type=a100"};
  return o;
}

// A job of a chief and `workers` workers of `cpu` each that run until DIR/go-<job id> exists,
// with `extra` appended to each pool and `scheduling` as its scheduling section.
std::string RackJob(int workers, double cpu, const std::string& pool_extra,
                    const std::string& scheduling) {
  auto pool = [&](const std::string& name, int count) {
    return absl::StrCat("- name: ", name, "\n  replicaCount: ", count,
                        "\n  command: [/bin/sh, -c, 'while [ ! -e DIR/go-$TRAINCTL_JOB_ID ]; do "
                        "sleep 0.05; done']\n  resources: {cpu: ",
                        cpu, "}\n", pool_extra);
  };
  std::string spec = absl::StrCat("displayName: racked\nworkerPools:\n", pool("chief", 1));
  if (workers > 0) spec += pool("worker", workers);
  if (!scheduling.empty()) spec += absl::StrCat("scheduling:\n  ", scheduling, "\n");
  return spec;
}

std::set<std::string> NodesOf(const v1::Job& job) {
  std::set<std::string> nodes;
  for (const v1::Replica& r : job.replicas()) nodes.insert(r.node());
  return nodes;
}

TEST_CASE("placement: a packWithin gang lands in one rack, the tighter one when one is partly used",
          "[integration][placement]") {
  MiniCluster c(RackedCluster());
  // 4 replicas of 2 cpu fill one rack exactly; spread alone would use all four nodes.
  const std::string packed =
      c.Submit(c.Spec(RackJob(3, 2, "", "placement: {packWithin: topology.rack}")));
  const v1::Job first = c.WaitForState(packed, v1::JOB_STATE_RUNNING);
  CHECK(NodesOf(first) == std::set<std::string>{"node-0", "node-1"});  // equal racks: r1
  c.WriteFile("go-" + packed, "");
  c.WaitForEnd(packed);

  // r2 gets 2 cpu used; a gang of 6 cpu then fits both racks, and r2 is the tighter fit.
  const std::string filler =
      c.Submit(c.Spec(RackJob(0, 2, "  nodeSelector: {gpu.type: a100}\n", "")));
  CHECK(NodesOf(c.WaitForState(filler, v1::JOB_STATE_RUNNING)) == std::set<std::string>{"node-3"});
  const std::string tight = c.Submit(
      c.Spec(RackJob(2, 2, "", "placement: {packWithin: topology.rack, policy: BINPACK}")));
  const std::set<std::string> used = NodesOf(c.WaitForState(tight, v1::JOB_STATE_RUNNING));
  for (const std::string& n : used) CHECK((n == "node-2" || n == "node-3"));
  c.WriteFile("go-" + filler, "");
  c.WriteFile("go-" + tight, "");
  c.WaitForEnd(filler);
  c.WaitForEnd(tight);
}

TEST_CASE("placement: a selector no node satisfies keeps the job QUEUED with a blocker naming it",
          "[integration][placement]") {
  MiniCluster c(RackedCluster());
  const std::string id = c.Submit(c.Spec(RackJob(0, 1, "  nodeSelector: {gpu.type: h100}\n", "")));
  const v1::Job queued = c.WaitForJob(
      id, [](const v1::Job& j) { return absl::StartsWith(j.queue_reason(), "NODE_SELECTOR: "); });
  CHECK(queued.state() == v1::JOB_STATE_QUEUED);
  CHECK(absl::StrContains(queued.queue_reason(), "gpu.type=h100"));
  bool named = false;
  const v1::Job again = c.GetJob(id);
  for (const v1::Blocker& b : again.queue_status().blockers()) {
    named |= b.kind() == "NODE_SELECTOR" && absl::StrContains(b.message(), "gpu.type=h100");
  }
  CHECK(named);
  // A bad selector is refused with its field.
  const std::string bad_spec = c.WriteFile(
      "bad.yaml",
      c.Spec(RackJob(0, 1, "  nodeAffinity: [{key: zone, operator: Gt, values: [\"1\"]}]\n", "")));
  CliResult bad = c.Cli({"submit", "-f", bad_spec});
  CHECK(bad.exit_code != 0);
  CHECK(absl::StrContains(bad.err, "workerPools[0].nodeAffinity[0].operator: must be In, NotIn"));
}

}  // namespace
}  // namespace trainctl::testing
