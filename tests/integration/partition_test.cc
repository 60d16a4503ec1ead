// Network partitions between the scheduler and one agent (docs/operators/host-health.md): the
// agent runs in a network namespace of its own (netns_link.h), trainctld listens on the host end
// of its veth pair, and a second agent runs on the host side. A cut shorter than the fence time
// is invisible to the job; a longer one makes the node LOST, the agent fences its replica, and
// only then does the scheduler start it on the host-side agent. A one-way cut does the same.
// No two runs of the replica ever overlap: each holds one exclusive lock file (workload
// --exclusive), and a second holder would leave a line in its .violations file.
//
// Lost timeout 4s and heartbeats every 200ms: fence after 3.2s, SIGTERM grace and margin 800ms,
// the move at 4.8s. The tests need root; without it they pass with a warning.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"
#include "tests/integration/netns_link.h"

namespace trainctl::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kLost(4'000);
constexpr milliseconds kMargin(800);
// node-0 runs on the host side, node-1 in the namespace.
constexpr char kHostNode[] = "node-0";
constexpr char kCutNode[] = "node-1";

ClusterOptions PartitionOptions(const NetnsLink& link) {
  ClusterOptions o;
  o.agents = 2;
  // A restart keeps the port: the agents, the namespace's among them, dial it again.
  o.listen_host = link.host_address();
  o.daemon_args = {"--insecure-allow-plaintext", "--node-lost-timeout", "4s",
                   "--heartbeat-interval", "200ms"};
  // Off loopback: plaintext, as a test on one host may.
  o.agent.extra_args = {"--insecure-allow-plaintext"};
  o.agent_prefix[1] = link.Exec();
  o.agent_args[1] = {"--address", link.ns_address()};
  return o;
}

// One replica that holds DIR/chief.lock while it lives, writes its pid to
// DIR/pid-<restart count>, and exits 0 once DIR/go exists.
std::string LockJob(const MiniCluster& c) {
  return c.Spec(
      "displayName: partitioned\nworkerPools:\n- name: chief\n  replicaCount: 1\n"
      "  command: [/bin/sh, -c, 'exec WORKLOAD --exclusive DIR/chief.lock --pidfile "
      "DIR/pid-$TRAINCTL_RESTART_COUNT --wait-file DIR/go --exit 0']\n"
      "  resources: {cpu: 0.5, memoryMb: 64}\n"
      "scheduling:\n  maxReplicaRestarts: 0\n");
}

struct Running {
  std::string id;
  pid_t pid = 0;
};

// Submits LockJob with node-0 cordoned, so that it runs on node-1, in the namespace; then
// uncordons node-0, where a move may go.
Running StartOnCutNode(MiniCluster& c) {
  c.CordonNode(kHostNode);
  Running out;
  out.id = c.Submit(LockJob(c));
  const v1::Job job = c.WaitForState(out.id, v1::JOB_STATE_RUNNING);
  REQUIRE(job.replicas(0).node() == kCutNode);
  REQUIRE(Eventually([&] { return ReadPidFile(c.dir() + "/pid-0") > 0; }));
  out.pid = ReadPidFile(c.dir() + "/pid-0");
  c.UncordonNode(kHostNode);
  return out;
}

// True, with a warning that says why, when this host cannot run the test (no root, no `nft`).
bool Skipped(bool needs_nft) {
  std::string why = NetnsLink::Unavailable();
  if (why.empty() && needs_nft) why = NetnsLink::NftUnavailable();
  if (!why.empty()) WARN(why);
  return !why.empty();
}

// The namespace, the cluster, and LockJob running on node-1.
struct Partitioned {
  // First: it outlives the cluster, whose agent runs in it.
  NetnsLink link;
  MiniCluster c{PartitionOptions(link)};
  Running run = StartOnCutNode(c);
};

// After a cut of the kind `cut` makes: node-1 is LOST, its agent fenced the replica, and the
// replica runs on node-0 without any overlap; once the link heals, node-1 is back and the job
// succeeds.
void ExpectFencedAndMoved(Partitioned& p) {
  MiniCluster& c = p.c;
  const Running& run = p.run;
  c.WaitForNodeState(kCutNode, v1::NODE_STATE_LOST, seconds(15));
  const v1::Job moved = c.WaitForJob(
      run.id,
      [](const v1::Job& j) {
        return j.replicas(0).node() == kHostNode &&
               j.replicas(0).state() == v1::REPLICA_STATE_RUNNING;
      },
      seconds(15));
  CHECK(moved.state() == v1::JOB_STATE_RUNNING);
  CHECK(moved.replicas(0).charged_restarts() == 0);
  // The new run took the lock: the fenced process was gone before it started.
  REQUIRE(Eventually([&] { return ReadPidFile(c.dir() + "/pid-1") > 0; }));
  CHECK(!PidAlive(run.pid));
  CHECK(!std::filesystem::exists(c.dir() + "/chief.lock.violations"));
  CHECK(Contains(c.AgentLog(1), "fenced: no word from the scheduler for"));
  const std::vector<v1::Event> fenced = c.ListEvents("", kCutNode, "NodeFenced");
  REQUIRE(fenced.size() == 1);
  CHECK(Contains(fenced[0].reason(), "more for its agent to fence its replicas"));
  const std::vector<v1::Event> moves = c.ListEvents(run.id, "", "ReplicaMoved");
  REQUIRE(moves.size() == 1);
  CHECK(Contains(moves[0].reason(), "for its agent to fence"));

  p.link.Heal();
  c.WaitForNodeState(kCutNode, v1::NODE_STATE_READY, seconds(30));
  c.WriteFile("go", "");
  const v1::Job done = c.WaitForEnd(run.id);
  CHECK(done.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(done.replicas(0).node() == kHostNode);
  CHECK(!std::filesystem::exists(c.dir() + "/chief.lock.violations"));
}

TEST_CASE("a network cut shorter than the fence time is invisible to the job",
          "[integration][partition]") {
  if (Skipped(/*needs_nft=*/false)) return;
  Partitioned p;
  MiniCluster& c = p.c;
  const Running& run = p.run;

  p.link.Down();
  // The cut's length (the fault itself, not a wait for a condition): 1s of the 3.2s fence time.
  const auto cut_start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(seconds(1));
  p.link.Up();

  // Until the move would have happened, nothing changes: the same run, the same process.
  const auto watch_until = cut_start + kLost + kMargin + seconds(1);
  while (std::chrono::steady_clock::now() < watch_until) {
    const v1::Job job = c.GetJob(run.id);
    REQUIRE(job.state() == v1::JOB_STATE_RUNNING);
    REQUIRE(job.replicas(0).node() == kCutNode);
    REQUIRE(job.replicas(0).restart_count() == 0);
    REQUIRE(job.replicas(0).pid() == run.pid);
    REQUIRE(PidAlive(run.pid));
    REQUIRE(c.GetNode(kCutNode).state() == v1::NODE_STATE_READY);
    std::this_thread::sleep_for(milliseconds(50));
  }
  CHECK(c.ListEvents("", kCutNode, "NodeLost").empty());
  CHECK(!Contains(c.AgentLog(1), "fenced:"));

  c.WriteFile("go", "");
  const v1::Job done = c.WaitForEnd(run.id);
  CHECK(done.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(done.replicas(0).restart_count() == 0);
}

TEST_CASE(
    "a network cut longer than the lost timeout fences the replica, then moves it with no "
    "overlap",
    "[integration][partition]") {
  if (Skipped(/*needs_nft=*/false)) return;
  Partitioned p;
  p.link.Down();
  ExpectFencedAndMoved(p);
}

TEST_CASE("a one-way cut (nothing reaches the agent) fences and moves the replica too",
          "[integration][partition]") {
  if (Skipped(/*needs_nft=*/true)) return;
  Partitioned p;
  // The agent's messages still leave; no answer comes back.
  p.link.DropIncoming();
  ExpectFencedAndMoved(p);
}

}  // namespace
}  // namespace trainctl::testing
