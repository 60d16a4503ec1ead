// The fabric check before a multi-node gang starts (scheduler/fabric_checks.h), through Core:
// a healthy gang waits CHECKING and launches once every probe and program passed; a node that
// fails with every partner is isolated and the job re-dispatched (charged to jobRetryNum only);
// with two nodes a node outside the gang decides; a program failing on one node blames it; a
// check with no single culprit re-dispatches once, then fails the job naming what failed; a node
// that does not answer fails its probes at the deadline; a node that leaves abandons the check,
// charged to nothing; gangCheck OFF and one-node jobs start at once; a cancel during the check
// ends the job with no stop sent.
#include "scheduler/fabric_checks.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

// A cluster of `nodes` agents with fabric check listeners; each node holds one replica (4 cpus).
struct FabricFixture {
  Core core{TestOptions(7)};
  int64_t now = 1'000'000;

  explicit FabricFixture(const std::vector<std::string>& nodes) {
    Effects fx;
    int port = 7090;
    for (const std::string& n : nodes) {
      v1::Register reg = Reg(n);
      reg.set_fabric_port(port++);
      core.AgentRegistered(reg, FromMs(now), &fx);
    }
  }

  // Submits a job of `replicas` replicas, one per node, and places it.
  std::string SubmitAndPlace(int replicas, Effects* fx,
                             v1::GangCheck gang_check = v1::GANG_CHECK_UNSPECIFIED) {
    v1::JobSpec spec = Spec(replicas - 1, /*cpu=*/4);
    spec.mutable_fault_tolerance()->set_gang_check(gang_check);
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, FromMs(now), fx);
    REQUIRE(job.ok());
    const std::string id = (*job)->id;
    core.Schedule(FromMs(now), fx);
    return id;
  }

  const Job& J(const std::string& id) { return *core.FindJob(id); }
};

// The CheckFabric commands in `fx`, by node.
std::map<std::string, v1::CheckFabric> Checks(const Effects& fx) {
  std::map<std::string, v1::CheckFabric> out;
  for (const Command& c : fx.commands) {
    if (c.message.has_check_fabric()) out[c.node] = c.message.check_fabric();
  }
  return out;
}

// Answers every check in `checks`: a probe from -> to passes unless `fails(from, to)`; the
// program (where asked) passes unless `program_fails(node)`.
void Answer(FabricFixture& f, const std::map<std::string, v1::CheckFabric>& checks,
            const std::function<bool(const std::string&, const std::string&)>& fails, Effects* fx,
            const std::function<bool(const std::string&)>& program_fails = nullptr) {
  for (const auto& [node, req] : checks) {
    v1::FabricReport report;
    report.set_request_id(req.request_id());
    for (const v1::FabricPeer& peer : req.targets()) {
      v1::FabricProbe* p = report.add_probes();
      p->set_to(peer.node());
      p->set_ok(!fails(node, peer.node()));
      if (p->ok()) {
        p->set_latency_ms(0.2);
        p->set_gbps(9.5);
      } else {
        p->set_detail("connect to " + peer.address() + ": Connection timed out");
      }
    }
    if (req.program()) {
      v1::FabricProgramRun* run = report.mutable_program();
      run->set_ok(program_fails == nullptr || !program_fails(node));
      if (!run->ok()) run->set_detail("exited with status 1: NCCL error");
    }
    f.core.FabricReported(node, report, FromMs(++f.now), fx);
  }
}

bool NoFailure(const std::string&, const std::string&) { return false; }

int CountState(const Job& job, v1::ReplicaState s) {
  int n = 0;
  for (const Replica& r : job.replicas) n += r.state == s;
  return n;
}

TEST_CASE("fabric check: a healthy gang waits CHECKING and launches once every probe passed") {
  FabricFixture f({"node-a", "node-b", "node-c"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(3, &fx);
  CHECK(Launches(fx).empty());
  CHECK(CountState(f.J(id), v1::REPLICA_STATE_CHECKING) == 3);
  CHECK(HasEvent(fx, "FabricCheckStarted", "checking the fabric between node-a, node-b, node-c"));
  const auto checks = Checks(fx);
  REQUIRE(checks.size() == 3);
  const v1::CheckFabric& a = checks.at("node-a");
  CHECK(a.targets_size() == 2);
  CHECK(a.targets(0).address() == "node-b.local:7091");
  CHECK(a.program());
  CHECK(a.env().at("RANK") == "0");
  CHECK(a.env().at("WORLD_SIZE") == "3");
  CHECK(a.env().at("MASTER_ADDR") == "node-a.local");
  CHECK(a.env().at("MASTER_PORT") == "7091");  // the first node's listener port + 1
  CHECK(checks.at("node-c").env().at("TRAINCTL_CHECK_RANK") == "2");
  CHECK(a.timeout_ms() == 60'000);

  Effects answered;
  Answer(f, checks, NoFailure, &answered);
  CHECK(Launches(answered).size() == 3);
  CHECK(CountState(f.J(id), v1::REPLICA_STATE_STARTING) == 3);
  CHECK(HasEvent(answered, "FabricCheckPassed", "3 pairs, latency at most 0.20 ms"));
  const v1::FabricCheck& record = *f.J(id).attempts.back().fabric_check;
  CHECK(record.result() == "PASSED");
  CHECK(record.probes_size() == 6);
  CHECK(record.programs_size() == 3);
  CHECK(record.has_duration());
  CHECK(answered.tally.fabric_checks.size() == 1);
  CHECK(f.core.FabricChecksUnderWay() == 0);
}

TEST_CASE("fabric check: a node that fails with every partner is isolated, the job re-dispatched") {
  FabricFixture f({"node-a", "node-b", "node-c", "node-d"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(3, &fx);
  const std::vector<std::string> nodes = f.J(id).attempts.back().nodes;
  REQUIRE(nodes.size() == 3);
  const std::string bad = nodes[1];
  // Its listener is unreachable: every probe to it fails; its own probes pass.
  Effects answered;
  Answer(
      f, Checks(fx), [&](const std::string&, const std::string& to) { return to == bad; },
      &answered);
  CHECK(Launches(answered).empty());
  CHECK(HasEvent(answered, "FabricCheckFailed", "node " + bad + " is isolated"));
  CHECK(HasEvent(answered, "NodeIsolated", "fabric check failed"));
  CHECK(f.core.FindNode(bad)->status.state == v1::NODE_STATE_ISOLATED);
  const Job& job = f.J(id);
  CHECK(job.state == v1::JOB_STATE_QUEUED);
  CHECK(job.budgets_used.redispatches == 1);
  CHECK(job.budgets_used.job_retries == 0);
  CHECK(job.attempts.back().fabric_check->result() == "ISOLATED");
  CHECK(job.attempts.back().fabric_check->culprit() == bad);
  CHECK(Stops(answered).empty());  // nothing was launched
  CHECK(CountState(job, v1::REPLICA_STATE_STOPPED) == 3);

  // The next attempt goes to the three other nodes and is checked again.
  Effects next;
  f.core.Schedule(FromMs(++f.now), &next);
  const std::vector<std::string> again = f.J(id).attempts.back().nodes;
  CHECK(std::count(again.begin(), again.end(), bad) == 0);
  Effects passed;
  Answer(f, Checks(next), NoFailure, &passed);
  CHECK(Launches(passed).size() == 3);
}

TEST_CASE("fabric check: with two nodes, a node outside the gang tells which one is at fault") {
  FabricFixture f({"node-a", "node-b", "node-c"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(2, &fx);
  const std::vector<std::string> nodes = f.J(id).attempts.back().nodes;
  REQUIRE(nodes.size() == 2);
  const std::string bad = nodes[0];
  auto fails = [&](const std::string&, const std::string& to) { return to == bad; };
  Effects round;
  Answer(f, Checks(fx), fails, &round);
  // One pair failed: both are probed against the third node, which probes them back.
  const auto outside = Checks(round);
  REQUIRE(outside.size() == 3);
  std::string outsider;
  for (const auto& [node, req] : outside) {
    if (std::count(nodes.begin(), nodes.end(), node) == 0) outsider = node;
    CHECK_FALSE(req.program());
  }
  CHECK(outside.at(outsider).targets_size() == 2);
  CHECK(HasEvent(round, "FabricCheckProbing", "probing each against " + outsider));
  Effects decided;
  Answer(f, outside, fails, &decided);
  CHECK(HasEvent(decided, "FabricCheckFailed", "node " + bad + " is isolated"));
  CHECK(f.core.FindNode(bad)->status.state == v1::NODE_STATE_ISOLATED);
  CHECK(f.J(id).state == v1::JOB_STATE_QUEUED);
}

TEST_CASE("fabric check: a check program that fails on one node blames that node") {
  FabricFixture f({"node-a", "node-b", "node-c"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(3, &fx);
  Effects answered;
  Answer(f, Checks(fx), NoFailure, &answered,
         [](const std::string& node) { return node == "node-b"; });
  CHECK(HasEvent(answered, "FabricCheckFailed",
                 "node node-b is isolated: the check program failed on node-b while it passed on "
                 "the others: exited with status 1: NCCL error"));
  CHECK(f.core.FindNode("node-b")->status.state == v1::NODE_STATE_ISOLATED);
  CHECK(f.J(id).budgets_used.redispatches == 1);
}

TEST_CASE("fabric check: with no single culprit the job is re-dispatched once, then fails") {
  FabricFixture f({"node-a", "node-b", "node-c"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(3, &fx);
  auto all = [](const std::string&, const std::string&) { return true; };
  Effects first;
  Answer(f, Checks(fx), all, &first);
  CHECK(HasEvent(first, "FabricCheckFailed", "no single node to blame"));
  CHECK(f.J(id).state == v1::JOB_STATE_QUEUED);
  CHECK(f.J(id).attempts.back().fabric_check->result() == "FAILED");
  for (const char* n : {"node-a", "node-b", "node-c"}) {
    CHECK(f.core.FindNode(n)->status.state == v1::NODE_STATE_READY);
  }
  Effects second;
  f.core.Schedule(FromMs(++f.now), &second);
  Answer(f, Checks(second), all, &second);
  const Job& job = f.J(id);
  CHECK(job.state == v1::JOB_STATE_FAILED);
  CHECK_THAT(job.error.message,
             Catch::Contains("The fabric check between the gang's nodes failed") &&
                 Catch::Contains("node-a-node-b (node-a->node-b: connect to") &&
                 Catch::Contains("The previous attempt's check failed too"));
}

TEST_CASE("fabric check: a node that does not answer fails its probes at the deadline") {
  FabricFixture f({"node-a", "node-b", "node-c"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(3, &fx);
  auto checks = Checks(fx);
  checks.erase("node-c");
  Effects partial;
  Answer(f, checks, NoFailure, &partial);
  CHECK(f.J(id).state == v1::JOB_STATE_PENDING);  // still waiting
  Effects late;
  f.now += 60'000;
  f.core.Tick(FromMs(f.now), &late);
  // a and b reached c, but c never said it reached them: every pair with c failed.
  CHECK(HasEvent(late, "FabricCheckFailed", "node node-c is isolated"));
  CHECK_THAT(f.J(id).attempts.back().fabric_check->summary(),
             Catch::Contains("the agent of node-c gave no answer within 1m"));
}

TEST_CASE("fabric check: an agent that registers again during the check is asked again") {
  FabricFixture f({"node-a", "node-b"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(2, &fx);
  auto checks = Checks(fx);
  const v1::CheckFabric lost = checks.at("node-b");
  checks.erase("node-b");
  Effects partial;
  Answer(f, checks, NoFailure, &partial);
  // node-b's agent restarted and lost the request: its registration brings it again.
  Effects again;
  v1::Register reg = Reg("node-b");
  reg.set_fabric_port(7091);
  reg.set_agent_instance("instance-2");
  f.core.AgentRegistered(reg, FromMs(++f.now), &again);
  const auto resent = Checks(again);
  REQUIRE(resent.size() == 1);
  CHECK(resent.at("node-b").request_id() == lost.request_id());
  CHECK(resent.at("node-b").env().at("RANK") == "1");
  Effects passed;
  Answer(f, resent, NoFailure, &passed);
  CHECK(Launches(passed).size() == 2);
  CHECK(f.J(id).attempts.back().fabric_check->result() == "PASSED");
}

TEST_CASE("fabric check: a node that leaves abandons the check, charged to nothing") {
  FabricFixture f({"node-a", "node-b", "node-c"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(2, &fx);
  const std::string gone = f.J(id).attempts.back().nodes[1];
  Effects drained;
  REQUIRE(f.core.DrainNode(gone, "kernel upgrade", absl::ZeroDuration(), FromMs(++f.now), &drained)
              .ok());
  f.core.Tick(FromMs(++f.now), &drained);
  CHECK(HasEvent(drained, "FabricCheckAbandoned", "node " + gone + " left during the check"));
  const Job& job = f.J(id);
  CHECK(job.state == v1::JOB_STATE_QUEUED);
  CHECK(job.budgets_used.redispatches == 0);
  CHECK(job.attempts.back().fabric_check->result() == "ABANDONED");
  // A late answer to the abandoned check changes nothing.
  Effects late;
  Answer(f, Checks(fx), NoFailure, &late);
  CHECK(Launches(late).empty());
}

TEST_CASE("fabric check: gangCheck OFF and one-node jobs start at once, cancel ends a check") {
  FabricFixture f({"node-a", "node-b", "node-c"});
  Effects off;
  f.SubmitAndPlace(2, &off, v1::GANG_CHECK_OFF);
  CHECK(Launches(off).size() == 2);
  CHECK(Checks(off).empty());

  Effects one;
  f.SubmitAndPlace(1, &one);
  CHECK(Launches(one).size() == 1);
  CHECK(Checks(one).empty());

  FabricFixture g({"node-a", "node-b"});
  Effects fx;
  const std::string id = g.SubmitAndPlace(2, &fx);
  REQUIRE(Checks(fx).size() == 2);
  Effects cancel;
  REQUIRE(g.core.CancelJob(id, FromMs(++g.now), &cancel).ok());
  CHECK(g.J(id).state == v1::JOB_STATE_CANCELLED);
  CHECK(Stops(cancel).empty());
  Effects late;
  Answer(g, Checks(fx), NoFailure, &late);
  CHECK(Launches(late).empty());
}

TEST_CASE("fabric check: a gang restart onto another node checks the new set first") {
  FabricFixture f({"node-a", "node-b", "node-c"});
  Effects fx;
  const std::string id = f.SubmitAndPlace(2, &fx);
  Effects passed;
  Answer(f, Checks(fx), NoFailure, &passed);
  const std::vector<v1::LaunchReplica> launches = Launches(passed);
  REQUIRE(launches.size() == 2);
  for (const v1::LaunchReplica& l : launches) {
    Effects started;
    f.core.ReplicaStarted(f.J(id).FindReplica(l.replica_name())->node, Started(l.run_id()),
                          FromMs(++f.now), &started);
  }
  REQUIRE(f.J(id).state == v1::JOB_STATE_RUNNING);
  const std::string drained = f.J(id).replicas[1].node;
  // The drain moves worker-0: the gang restarts, and its new set of nodes is checked first.
  Effects moved;
  REQUIRE(
      f.core.DrainNode(drained, "kernel upgrade", absl::Seconds(1), FromMs(++f.now), &moved).ok());
  for (const v1::StopReplica& stop : Stops(moved)) {
    const Replica* r = nullptr;
    for (const Replica& x : f.J(id).replicas) {
      if (f.J(id).RunIdOf(x) == stop.run_id()) r = &x;
    }
    REQUIRE(r != nullptr);
    f.core.ReplicaExited(r->node, ExitedSignal(stop.run_id(), 15), FromMs(++f.now), &moved);
  }
  f.core.Tick(FromMs(++f.now), &moved);
  CHECK(Launches(moved).empty());
  CHECK(CountState(f.J(id), v1::REPLICA_STATE_CHECKING) == 2);
  const auto checks = Checks(moved);
  REQUIRE(checks.size() == 2);
  CHECK(checks.count(drained) == 0);
  Effects relaunched;
  Answer(f, checks, NoFailure, &relaunched);
  CHECK(Launches(relaunched).size() == 2);
  CHECK(f.J(id).attempts.size() == 1);
  CHECK(f.J(id).attempts.back().fabric_check->result() == "PASSED");
}

TEST_CASE("fabric check: every pair both ways up to 16 nodes, O(n log n) probes beyond") {
  std::vector<std::string> small;
  for (int i = 0; i < 16; ++i) small.push_back("n" + std::to_string(i));
  for (const auto& [node, peers] : FabricChecks::Targets(small)) CHECK(peers.size() == 15);
  std::vector<std::string> large;
  for (int i = 0; i < 100; ++i) large.push_back("n" + std::to_string(i));
  const auto targets = FabricChecks::Targets(large);
  CHECK(targets.at("n0") == std::vector<std::string>{"n1", "n2", "n4", "n8", "n16", "n32", "n64"});
  CHECK(targets.at("n99").front() == "n0");
}

}  // namespace
}  // namespace trainctl::sched
