// Preemption end to end, with a real trainctld, agent and replicas: a lender with `reclaim`
// takes its quota back from a borrower's gang, whose replicas checkpoint on the notice; a
// reported checkpoint ends the grace; a replica that ignores the notice is stopped at the
// deadline; a restart of trainctld keeps the decision; a drain gives the same notice file.
#include <signal.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

void Quota(MiniCluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"quota", "set"};
  argv.insert(argv.end(), args.begin(), args.end());
  CliResult r = c.Cli(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

// One node with 4 GPUs; "lender" owns them and reclaims, "borrower" may borrow all 4.
MiniCluster& Lent(MiniCluster& c) {
  Quota(c, {"lender", "--gpus", "4", "--cohort", "research", "--reclaim", "any"});
  Quota(c, {"borrower", "--gpus", "0", "--cohort", "research", "--borrow-gpus", "4"});
  return c;
}

AgentOptions FourGpus() {
  AgentOptions o;
  o.gpus = 4;
  return o;
}

// The borrower's gang: two replicas of 2 GPUs each, training with `command`.
std::string BorrowerGang(const std::string& command, const std::string& scheduling = "") {
  return absl::StrCat(R"(
displayName: borrowed
project: borrower
scheduling: {stopGracePeriod: 2s)",
                      scheduling, R"(}
workerPools:
- name: chief
  replicaCount: 1
  command: )",
                      command, R"(
  resources: {cpu: 0.5, gpus: 2}
- name: worker
  replicaCount: 1
  command: )",
                      command, R"(
  resources: {cpu: 0.5, gpus: 2}
)");
}

// The lender's urgent job: all 4 GPUs, done in a moment.
const char kUrgent[] = R"(
displayName: urgent
project: lender
workerPools:
- {name: chief, replicaCount: 1, command: [/bin/true], resources: {cpu: 0.5, gpus: 4}}
)";

// Waits until the job has trained some steps: its chief's checkpoint file holds a step.
void WaitForSteps(MiniCluster& c, const std::string& id) {
  const std::string ckpt = c.GetJob(id).checkpoint_dir() + "/ckpt-chief-0";
  REQUIRE(Eventually([&] { return std::atoi(ReadTextFile(ckpt).c_str()) > 2; }));
}

int CountEvents(MiniCluster& c, const std::string& id, const std::string& type) {
  return static_cast<int>(c.ListEvents(id, "", type).size());
}

TEST_CASE(
    "preemption: a lender reclaims from a borrower's gang, which checkpoints on the notice and "
    "later runs again from its checkpoint, charged nothing",
    "[integration][preemption]") {
  MiniCluster c(1, FourGpus());
  Lent(c);
  // Exits 0 on the notice: a primary's 0 after the notice is no success.
  const std::string borrowed = c.Submit(c.Spec(
      BorrowerGang("[WORKLOAD, --on-notice, exit, --step-time, '0.05', --train, '100000']")));
  c.WaitForState(borrowed, v1::JOB_STATE_RUNNING);
  WaitForSteps(c, borrowed);

  const std::string urgent = c.Submit(kUrgent);
  // Long before the 5-minute grace: the replicas checkpoint and exit on the notice.
  v1::Job done = c.WaitForEnd(urgent, std::chrono::seconds(60));
  CHECK(done.state() == v1::JOB_STATE_SUCCEEDED);

  v1::Job after = c.WaitForJob(
      borrowed, [](const v1::Job& j) { return j.preemptions() == 1; }, std::chrono::seconds(30));
  REQUIRE(after.attempts_size() >= 1);
  CHECK(after.attempts(0).decision() == "PREEMPT");
  CHECK(after.attempts(0).failure_class() == "PREEMPTED");
  CHECK(after.preemption().preempting_job() == urgent);
  CHECK(after.budgets_used().job_retries() == 0);
  CHECK(after.budgets_used().redispatches() == 0);
  CHECK(CountEvents(c, borrowed, "JobPreempted") == 1);
  CHECK(after.state() != v1::JOB_STATE_SUCCEEDED);

  // Once the lender's job is done, the borrower runs again, from its checkpoint.
  c.WaitForJob(
      borrowed,
      [](const v1::Job& j) { return j.attempts_size() == 2 && j.state() == v1::JOB_STATE_RUNNING; },
      std::chrono::seconds(60));
  REQUIRE(Eventually([&] {
    CliResult logs =
        c.Cli({"logs", borrowed, "--replica", "chief-0", "--attempt", "2", "--restart", "0"});
    return logs.out.find("resumed from step") != std::string::npos;
  }));
  REQUIRE(c.Cli({"cancel", borrowed}).exit_code == 0);
  c.WaitForEnd(borrowed);
}

TEST_CASE("preemption: a reported checkpoint ends the grace while the replicas still run",
          "[integration][preemption]") {
  MiniCluster c(1, FourGpus());
  Lent(c);
  // On the notice each replica writes {"checkpoint": true} to its progress file and trains on.
  const std::string borrowed = c.Submit(c.Spec(
      BorrowerGang("[WORKLOAD, --on-notice, report, --step-time, '0.05', --train, '100000']")));
  c.WaitForState(borrowed, v1::JOB_STATE_RUNNING);
  WaitForSteps(c, borrowed);
  const std::string urgent = c.Submit(kUrgent);
  CHECK(c.WaitForEnd(urgent, std::chrono::seconds(60)).state() == v1::JOB_STATE_SUCCEEDED);
  std::vector<v1::Event> ended = c.ListEvents(borrowed, "", "JobPreempted");
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].reason().find("reported a checkpoint") != std::string::npos);
  REQUIRE(c.Cli({"cancel", borrowed}).exit_code == 0);
  c.WaitForEnd(borrowed);
}

TEST_CASE(
    "preemption: a replica that ignores the notice is stopped at the deadline, and a restart "
    "of trainctld keeps the decision",
    "[integration][preemption]") {
  MiniCluster c(1, FourGpus());
  Lent(c);
  const std::string borrowed = c.Submit(
      c.Spec(BorrowerGang("[WORKLOAD, --ignore-term, --step-time, '0.05', --train, '100000']",
                          ", preemptionGracePeriod: 4s")));
  c.WaitForState(borrowed, v1::JOB_STATE_RUNNING);
  WaitForSteps(c, borrowed);
  const std::string urgent = c.Submit(kUrgent);
  REQUIRE(Eventually([&] { return CountEvents(c, borrowed, "JobPreempting") == 1; }));

  c.KillDaemon(SIGKILL);
  c.StartDaemon();

  CHECK(c.WaitForEnd(urgent, std::chrono::seconds(60)).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(CountEvents(c, borrowed, "JobPreempting") == 1);  // no second preemption
  std::vector<v1::Event> ended = c.ListEvents(borrowed, "", "JobPreempted");
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].reason().find("its grace period ended") != std::string::npos);
  REQUIRE(c.Cli({"cancel", borrowed}).exit_code == 0);
  c.WaitForEnd(borrowed);
}

TEST_CASE("preemption: a drain gives a running replica the same notice file",
          "[integration][preemption]") {
  MiniCluster c(2);
  // Copies the notice when it appears; SIGTERM (the drain's stop) is ignored until then.
  const std::string id = c.Submit(c.Spec(R"(
displayName: drained
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'trap "" TERM; while [ ! -e "$TRAINCTL_PREEMPTION_NOTICE" ]; do sleep 0.05; done; cp "$TRAINCTL_PREEMPTION_NOTICE" DIR/notice-$TRAINCTL_RESTART_COUNT.json; sleep 300']
  resources: {cpu: 0.5}
)"));
  v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const std::string node = running.replicas(0).node();
  CliResult drain =
      c.Cli({"node", "drain", node, "--reason", "kernel upgrade", "--deadline", "2s"});
  INFO(drain.err);
  REQUIRE(drain.exit_code == 0);
  std::string notice;
  REQUIRE(Eventually([&] {
    notice = ReadTextFile(c.dir() + "/notice-0.json");
    return !notice.empty();
  }));
  CHECK(notice.find("\"kind\":\"drain\"") != std::string::npos);
  CHECK(notice.find("kernel upgrade") != std::string::npos);
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
}

}  // namespace
}  // namespace trainctl::testing
