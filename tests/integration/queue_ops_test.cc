// Hold, release, update, requeue and dependencies end to end: a real trainctld and one real agent
// whose 4 cpus hold one job at a time, every operation through the CLI. A held job at its
// project's head holds back nobody and runs once released; an update moves a queued job ahead;
// a requeue sends a running job back to the queue (its replica gets the notice) and it runs again
// as attempt 2, charged to nothing; B, which needs A to succeed, ends at once when A fails and
// never runs, while C, which needs A to fail, runs; a dependency on a job that ended before a
// restart of trainctld (and left its memory) resolves from the store.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace queue_ops_test {

// A job that takes the whole node and runs until DIR/go-<its id> exists, then exits `code`.
std::string Gated(const MiniCluster& c, int code = 0, const std::string& extra = "") {
  return c.Spec(absl::StrCat(
      "displayName: gated\nworkerPools:\n- name: chief\n  replicaCount: 1\n"
      "  command: [/bin/sh, -c, 'while [ ! -e DIR/go-$TRAINCTL_JOB_ID ]; do sleep 0.05; done; "
      "exit ",
      code, "']\n  resources: {cpu: 4, memoryMb: 64}\n", extra));
}

void Go(MiniCluster& c, const std::string& id) { c.WriteFile("go-" + id, ""); }

ClusterOptions OneAgent() {
  ClusterOptions o;
  o.agents = 1;
  return o;
}

TEST_CASE("queue ops: a held job holds back nobody and runs once released, update moves a job",
          "[integration][queue]") {
  MiniCluster c(OneAgent());
  const std::string first = c.Submit(Gated(c));
  c.WaitForState(first, v1::JOB_STATE_RUNNING);
  const std::string held = c.Submit(Gated(c, 0, "priority: 10\n"));
  const std::string next = c.Submit(Gated(c));
  const std::string last = c.Submit(Gated(c));
  CliResult hold = c.Cli({"hold", held, "--reason", "waiting for the dataset"});
  INFO(hold.out << hold.err);
  REQUIRE(hold.exit_code == 0);
  CHECK(c.GetJob(held).held());
  // `last` goes ahead of `next`.
  CliResult update = c.Cli({"update", last, "--priority", "5"});
  INFO(update.out << update.err);
  REQUIRE(update.exit_code == 0);
  CHECK(c.GetJob(last).spec().priority() == 5);
  Go(c, first);
  c.WaitForState(last, v1::JOB_STATE_RUNNING);
  CHECK(c.GetJob(held).state() == v1::JOB_STATE_QUEUED);
  CHECK(c.GetJob(next).state() == v1::JOB_STATE_QUEUED);
  CliResult describe = c.Cli({"describe", held});
  CHECK_THAT(describe.out, Catch::Contains("HELD") && Catch::Contains("waiting for the dataset"));
  // Updating a running job is refused with its state.
  CliResult refused = c.Cli({"update", last, "--priority", "1"});
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("is RUNNING: only a QUEUED job can be updated"));
  REQUIRE(c.Cli({"release", held}).exit_code == 0);
  Go(c, last);
  c.WaitForState(held, v1::JOB_STATE_RUNNING);  // priority 10: before `next`
  CHECK(c.GetJob(next).state() == v1::JOB_STATE_QUEUED);
  CHECK_FALSE(c.ListEvents(held, "", "JobHeld").empty());
  CHECK_FALSE(c.ListEvents(held, "", "JobReleased").empty());
  CHECK_FALSE(c.ListEvents(last, "", "JobUpdated").empty());
  for (const std::string& id : {held, next}) {
    REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
    c.WaitForEnd(id);
  }
}

TEST_CASE("queue ops: a requeued job gets the notice, waits and runs again, charged to nothing",
          "[integration][queue]") {
  MiniCluster c(OneAgent());
  const std::string id = c.Submit(Gated(c, 0, "scheduling: {preemptionGracePeriod: 5s}\n"));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  CliResult requeue = c.Cli({"requeue", id, "--reason", "make room for maintenance"});
  INFO(requeue.out << requeue.err);
  REQUIRE(requeue.exit_code == 0);
  // The replica's shell ends with SIGTERM; the attempt ends and the job runs again.
  const v1::Job again = c.WaitForJob(id, [](const v1::Job& j) {
    return j.attempts_size() == 2 && j.state() == v1::JOB_STATE_RUNNING;
  });
  CHECK(again.attempts(0).failure_class() == "PREEMPTED");
  CHECK(again.budgets_used().job_retries() == 0);
  CHECK(again.budgets_used().redispatches() == 0);
  const std::vector<v1::Event> events = c.ListEvents(id, "", "JobRequeued");
  REQUIRE(events.size() == 1);
  CHECK_THAT(events[0].reason(), Catch::Contains("make room for maintenance"));
  Go(c, id);
  CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("dependencies: afterok ends at once when its job fails, afternotok runs",
          "[integration][queue]") {
  MiniCluster c(OneAgent());
  const std::string a = c.Submit(Gated(c, 3));
  c.WaitForState(a, v1::JOB_STATE_RUNNING);
  const std::string b =
      c.Submit(Gated(c, 0, "dependsOn: [{job: " + a + ", condition: SUCCEEDED}]\n"));
  const std::string cc =
      c.Submit(Gated(c, 0, "dependsOn: [{job: " + a + ", condition: FAILED}]\n"));
  CHECK_THAT(c.GetJob(b).queue_status().blockers(0).message(),
             Catch::Contains("DEPENDENCY: waiting for " + a + " to succeed"));
  Go(c, a);
  CHECK(c.WaitForEnd(a).state() == v1::JOB_STATE_FAILED);
  const v1::Job failed = c.WaitForEnd(b);
  CHECK(failed.state() == v1::JOB_STATE_FAILED);
  CHECK_THAT(failed.error().message(), Catch::Contains("Dependency " + a + " ended FAILED"));
  CHECK(failed.attempts_size() == 0);
  c.WaitForState(cc, v1::JOB_STATE_RUNNING);
  Go(c, cc);
  CHECK(c.WaitForEnd(cc).state() == v1::JOB_STATE_SUCCEEDED);
  // An unknown job is refused at submit, naming the field.
  CliResult unknown =
      c.Cli({"submit", "-f", c.WriteFile("bad.yaml", Gated(c, 0, "dependsOn: [{job: j-nope}]\n"))});
  CHECK(unknown.exit_code != 0);
  CHECK_THAT(unknown.err, Catch::Contains("spec.dependsOn[0].job: no job j-nope"));
}

TEST_CASE("dependencies: a job that ended before a restart of trainctld resolves from the store",
          "[integration][queue]") {
  ClusterOptions o = OneAgent();
  // Ended jobs leave trainctld's memory at once: only the store remembers them.
  o.daemon_args = {"--finished-job-cache", "0s"};
  MiniCluster c(o);
  const std::string a = c.Submit(Gated(c));
  c.WaitForState(a, v1::JOB_STATE_RUNNING);
  Go(c, a);
  CHECK(c.WaitForEnd(a).state() == v1::JOB_STATE_SUCCEEDED);
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  const std::string b = c.Submit(Gated(c, 0, "dependsOn: [{job: " + a + "}]\n"));
  const v1::Job running = c.WaitForState(b, v1::JOB_STATE_RUNNING);
  REQUIRE(running.dependencies_size() == 1);
  CHECK(running.dependencies(0).met());
  CHECK(running.dependencies(0).ended() == v1::JOB_STATE_SUCCEEDED);
  Go(c, b);
  c.WaitForEnd(b);
}

}  // namespace queue_ops_test
}  // namespace trainctl::testing
