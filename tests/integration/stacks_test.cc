// Stacks before the kill, end to end with real agents, real replicas and real gdb: a Python
// replica blocked in a function the test names is judged hung, and the stacks its agent captured
// before stopping it name that function (`trainctl stacks`, `describe`, REST); a native program
// stopped because its attempt ended has its C stack captured, and `describe` groups the replicas
// that agree; `trainctl stacks --now` captures them from a running job, which keeps running,
// and refuses a member of another project.
#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "tests/integration/http_client.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace stacks_test {

// A Python replica that blocks in load_batch (its helper thread elsewhere), never reporting
// progress: hangTimeout judges it hung.
constexpr char kHungPython[] = R"(
displayName: hung
project: PROJECT
workerPools:
- name: chief
  replicaCount: 1
  resources: {cpu: 0.1, memoryMb: 64}
  command:
  - /usr/bin/python3
  - -c
  - "import threading, time\ndef load_batch():\n    time.sleep(100000)\nthreading.Thread(target=lambda: time.sleep(100000), daemon=True).start()\nload_batch()\n"
scheduling:
  hangTimeout: HANG
  maxReplicaRestarts: 0
  maxJobRetries: 0
)";

std::string HungPython(const MiniCluster& c, const std::string& project, const std::string& hang) {
  std::string spec = c.Spec(kHungPython);
  spec.replace(spec.find("PROJECT"), 7, project);
  spec.replace(spec.find("HANG"), 4, hang);
  return spec;
}

TEST_CASE(
    "stacks: a Python replica blocked in load_batch is judged hung, and the stacks captured "
    "before its stop name load_batch",
    "[integration][stacks]") {
  MiniCluster c(1);
  const std::string id = c.Submit(HungPython(c, "p", "3s"));
  const v1::Job job = c.WaitForEnd(id, std::chrono::seconds(90));
  REQUIRE(job.state() == v1::JOB_STATE_FAILED);
  CHECK_THAT(job.error().reason(), Catch::Contains("HUNG") || Catch::Contains("TRANSIENT"));

  CliResult stacks = c.Cli({"stacks", id});
  INFO(stacks.out << stacks.err);
  REQUIRE(stacks.exit_code == 0);
  CHECK_THAT(stacks.out, Catch::Contains("=== chief-0 (attempt 1") && Catch::Contains(": hung"));
  CHECK_THAT(stacks.out, Catch::Contains("in load_batch (<string>:3)"));
  // The Python stack and the native one of both threads.
  CHECK_THAT(stacks.out, Catch::Contains("Traceback (most recent call first)") &&
                             Catch::Contains("line 3, in load_batch") &&
                             Catch::Contains("Thread 2") && Catch::Contains("#0 "));

  CliResult describe = c.Cli({"describe", id});
  REQUIRE(describe.exit_code == 0);
  CHECK_THAT(describe.out, Catch::Contains("Stacks (attempt 1, captured before the stop: hung)") &&
                               Catch::Contains("chief-0 in load_batch (<string>:3)") &&
                               Catch::Contains("trainctl stacks " + id));
  CHECK_THAT(describe.out, Catch::Contains("StacksCaptured"));

  // REST answers the same, and --summary only the line per replica.
  httplib::Result rest = Http(c)->Get("/v1/jobs/" + id + "/stacks");
  REQUIRE(rest);
  REQUIRE(rest->status == 200);
  v1::GetStacksResponse over_rest;
  REQUIRE(google::protobuf::util::JsonStringToMessage(rest->body, &over_rest).ok());
  REQUIRE(over_rest.stacks_size() == 1);
  CHECK(over_rest.attempt() == 1);
  CHECK(over_rest.stacks(0).replica() == "chief-0");
  CHECK(over_rest.stacks(0).summary() == "load_batch (<string>:3)");
  CHECK(over_rest.stacks(0).processes(0).python());
  CliResult summary = c.Cli({"stacks", id, "--summary"});
  CHECK(summary.out == "chief-0 in load_batch (<string>:3)\n");

  // Kept with the job: a restarted trainctld serves them from its store.
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  CliResult again = c.Cli({"stacks", id, "--replica", "chief-0"});
  CHECK_THAT(again.out, Catch::Contains("in load_batch"));
  CliResult none = c.Cli({"stacks", id, "--attempt", "2"});
  CHECK(none.exit_code == 0);
  CHECK_THAT(none.err, Catch::Contains("No stacks kept for job " + id + " attempt 2"));
}

// Three replicas of a native program wait in trainctl_workload_wait_for_peer; a fourth fails
// after a second, which ends the attempt (a user error: no retry): the others are stopped, their
// stacks captured first.
constexpr char kNativeGang[] = R"(
displayName: native
workerPools:
- {name: chief, replicaCount: 1, command: [WORKLOAD, --hang], resources: {cpu: 0.1, memoryMb: 32}}
- {name: worker, replicaCount: 2, command: [WORKLOAD, --hang], resources: {cpu: 0.1, memoryMb: 32}}
- name: loader
  replicaCount: 1
  command: [WORKLOAD, --wait-file, DIR/go, --exit, '3']
  resources: {cpu: 0.1, memoryMb: 32}
scheduling: {maxReplicaRestarts: 0, maxJobRetries: 0}
)";

TEST_CASE(
    "stacks: the native stacks of a gang whose attempt ended are captured, and describe groups "
    "the replicas that agree",
    "[integration][stacks]") {
  MiniCluster c(2);
  const std::string id = c.Submit(c.Spec(kNativeGang));
  c.WaitForJob(id, [](const v1::Job& j) {
    int running = 0;
    for (const v1::Replica& r : j.replicas()) running += r.state() == v1::REPLICA_STATE_RUNNING;
    return running == 4;
  });
  c.WriteFile("go", "");
  // The job fails at once; its replicas' stops follow their captures, whose reports come before
  // their exits.
  const v1::Job job = c.WaitForJob(
      id,
      [](const v1::Job& j) {
        for (const v1::Replica& r : j.replicas()) {
          if (r.state() == v1::REPLICA_STATE_STOPPING) return false;
        }
        return j.state() == v1::JOB_STATE_FAILED;
      },
      std::chrono::seconds(90));
  REQUIRE(job.state() == v1::JOB_STATE_FAILED);

  CliResult describe = c.Cli({"describe", id});
  INFO(describe.out);
  CHECK_THAT(describe.out,
             Catch::Contains("Stacks (attempt 1, captured before the stop: attempt ended)") &&
                 Catch::Contains("3 replicas in trainctl_workload_wait_for_peer (workload.cc:") &&
                 Catch::Contains("chief-0, worker-0, worker-1"));
  CliResult stacks = c.Cli({"stacks", id, "--replica", "worker-1"});
  INFO(stacks.out);
  CHECK_THAT(stacks.out, Catch::Contains("=== worker-1") &&
                             Catch::Contains("trainctl_workload_wait_for_peer") &&
                             !Catch::Contains("=== chief-0"));
}

TEST_CASE(
    "stacks: --now captures a running job's stacks, which keeps running, for its project's "
    "members and not another project's",
    "[integration][stacks][tls][auth]") {
  ClusterOptions o;
  o.agents = 1;
  o.tls = true;
  MiniCluster c(o);
  const std::string id = c.Submit(HungPython(c, "team-a", "1h"));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);

  auto token = [&](const std::string& project) {
    CliResult r = c.Cli({"admin", "token", "create", "--owner", project + "-user", "--role",
                         "member", "--project", project});
    REQUIRE(r.exit_code == 0);
    return std::string(absl::StripAsciiWhitespace(r.out));
  };
  const std::string member = token("team-a");
  const std::string stranger = token("team-b");

  // Until the replica reached load_batch, a capture may find Python still starting.
  CliResult now;
  CHECK(Eventually(
      [&] {
        now = c.CliAs(member, {"stacks", id, "--now"});
        return now.exit_code == 0 && absl::StrContains(now.out, "in load_batch (<string>:3)");
      },
      std::chrono::seconds(30)));
  INFO(now.out << now.err);
  CHECK_THAT(now.out, Catch::Contains(": requested"));
  CHECK(c.GetJob(id).state() == v1::JOB_STATE_RUNNING);
  // Nothing is kept from a capture on request.
  CliResult kept = c.CliAs(member, {"stacks", id});
  CHECK_THAT(kept.err, Catch::Contains("No stacks kept"));

  CliResult refused = c.CliAs(stranger, {"stacks", id, "--now"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("PERMISSION_DENIED"));
  CliResult refused_kept = c.CliAs(stranger, {"stacks", id});
  CHECK(refused_kept.exit_code == 2);
  CHECK_THAT(refused_kept.err, Catch::Contains("PERMISSION_DENIED"));

  CliResult not_running = c.Cli({"stacks", id, "--now", "--replica", "worker-9"});
  CHECK_THAT(not_running.err, Catch::Contains("has no replica worker-9"));
  REQUIRE(c.Cli({"cancel", id}).exit_code == 0);
  c.WaitForEnd(id);
}

}  // namespace stacks_test
}  // namespace trainctl::testing
