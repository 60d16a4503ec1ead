// End to end: the real trainctld, two real trainctl-agents and the real CLI on loopback.
#include <google/protobuf/util/json_util.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// Replicas that record their pids and then wait for DIR/go before exiting 0.
constexpr char kGatedJob[] = R"(
displayName: gated
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'echo $$ > DIR/pid-$TRAINCTL_REPLICA_NAME; while [ ! -e DIR/go ]; do sleep 0.05; done']
  resources: {cpu: 0.5, memoryMb: 64}
- name: worker
  replicaCount: 2
  command: [/bin/sh, -c, 'echo $$ > DIR/pid-$TRAINCTL_REPLICA_NAME; while true; do sleep 0.05; done']
  resources: {cpu: 0.5, memoryMb: 64}
)";

TEST_CASE("a 1+3 replica job runs on two agents and succeeds", "[integration]") {
  MiniCluster c(2);
  // The workers print their environment and mark themselves ready; the chief waits for all
  // three, so the test never depends on which process the OS runs first.
  std::string id = c.Submit(c.Spec(R"(
displayName: hello
project: team-a
labels: {team: vision, stage: prod}
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c]
  args: ['while [ $(ls DIR | grep -c ^ready-) -lt 3 ]; do sleep 0.05; done; exec WORKLOAD --env --print chief-done']
  resources: {cpu: 0.5, memoryMb: 64}
- name: worker
  replicaCount: 3
  command: [/bin/sh, -c]
  args: ['WORKLOAD --env; echo EXTRA=$EXTRA; touch DIR/ready-$TRAINCTL_REPLICA_NAME; exec sleep 30']
  env: {EXTRA: "42"}
  resources: {cpu: 0.5, memoryMb: 64}
)"));
  CliResult wait = c.Cli({"wait", id});
  INFO(wait.err);
  CHECK(wait.exit_code == 0);
  CHECK(wait.out.find("SUCCEEDED") != std::string::npos);

  v1::Job job = c.GetJob(id);
  CHECK(job.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(job.project() == "team-a");
  REQUIRE(job.replicas_size() == 4);
  std::set<std::string> nodes;
  for (const v1::Replica& r : job.replicas()) nodes.insert(r.node());
  CHECK(nodes == std::set<std::string>{"node-0", "node-1"});
  CHECK(job.replicas(0).name() == "chief-0");
  CHECK(job.replicas(0).exit_code() == 0);
  CHECK(job.replicas(0).state() == v1::REPLICA_STATE_SUCCEEDED);
  // The workers were stopped when the primary succeeded (R6), and are gone.
  for (int i = 1; i < 4; ++i) {
    c.WaitForJob(
        id, [i](const v1::Job& j) { return j.replicas(i).state() == v1::REPLICA_STATE_STOPPED; });
  }
  REQUIRE(job.attempts_size() == 1);
  CHECK(job.attempts(0).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(job.has_create_time());
  CHECK(job.has_start_time());
  CHECK(job.has_end_time());

  // get -o json is the protobuf JSON mapping of the Job.
  CliResult get = c.Cli({"get", id, "-o", "json"});
  REQUIRE(get.exit_code == 0);
  v1::Job parsed;
  REQUIRE(google::protobuf::util::JsonStringToMessage(get.out, &parsed).ok());
  CHECK(parsed.id() == id);
  CHECK(get.out.find("\"displayName\": \"hello\"") != std::string::npos);
  CHECK(get.out.find("\"exitCode\": 0") != std::string::npos);
  CHECK(get.out.find("\"restartCount\"") != std::string::npos);

  // Each replica saw its identity, rank, world and checkpoint dir (R3, R10).
  CliResult logs = c.Cli({"logs", id, "--replica", "worker-1"});
  INFO(logs.err);
  REQUIRE(logs.exit_code == 0);
  for (const std::string& want :
       {std::string("TRAINCTL_REPLICA_NAME=worker-1"), std::string("RANK=2"),
        std::string("WORLD_SIZE=4"), std::string("MASTER_ADDR=127.0.0.1"),
        absl::StrCat("TRAINCTL_JOB_ID=", id), std::string("TRAINCTL_ATTEMPT=1"),
        std::string("TRAINCTL_RESTART_COUNT=0"),
        absl::StrCat("TRAINCTL_CHECKPOINT_DIR=", job.checkpoint_dir()),
        absl::StrCat("AIP_CHECKPOINT_DIR=", job.checkpoint_dir()),
        std::string("\"task\":{\"type\":\"worker\",\"index\":1}"), std::string("\"workerpool1\""),
        std::string("EXTRA=42")}) {
    CHECK(logs.out.find(want) != std::string::npos);
  }
  CHECK(std::filesystem::is_directory(job.checkpoint_dir()));
  CliResult chief_logs = c.Cli({"logs", id, "--replica", "chief-0"});
  CHECK(chief_logs.out.find("chief-done") != std::string::npos);

  CliResult list = c.Cli({"list"});
  REQUIRE(list.exit_code == 0);
  CHECK(list.out.find(id) != std::string::npos);
  CHECK(list.out.find("SUCCEEDED") != std::string::npos);
  CHECK(list.out.find("team-a") != std::string::npos);
  // By labels: every KEY=VALUE given must match.
  CliResult selected = c.Cli({"list", "-l", "team=vision,stage=prod"});
  REQUIRE(selected.exit_code == 0);
  CHECK(selected.out.find(id) != std::string::npos);
  CliResult other = c.Cli({"list", "--selector", "team=vision,stage=dev"});
  CHECK(other.out.find(id) == std::string::npos);
  CliResult bad = c.Cli({"list", "-l", "team"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::StartsWith("error: INVALID_ARGUMENT: labelSelector must be "
                                        "KEY=VALUE[,KEY=VALUE...], got \"team\""));
}

TEST_CASE("a worker exiting 1 fails the job with its exit code", "[integration]") {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(R"(
displayName: fails
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'echo $$ > DIR/pid-chief; exec sleep 300']
- name: worker
  replicaCount: 1
  command: [WORKLOAD, --stderr, "loss is nan", --exit, "1"]
)"));
  CliResult wait = c.Cli({"wait", id});
  CHECK(wait.exit_code == 1);
  CHECK(wait.out.find("FAILED") != std::string::npos);
  v1::Job job = c.GetJob(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().code() == 3);
  CHECK(job.error().message() ==
        "Replica worker-0 exited with a non-zero status of 1. Termination reason: Error.");
  CHECK(job.error().replica() == "worker-0");
  CHECK(job.replicas(1).exit_code() == 1);
  CHECK(job.replicas(1).state() == v1::REPLICA_STATE_FAILED);
  // The chief was stopped, and its process is gone.
  pid_t chief = WaitForPidFile(c.dir() + "/pid-chief");
  c.WaitForJob(id,
               [](const v1::Job& j) { return j.replicas(0).state() == v1::REPLICA_STATE_STOPPED; });
  CHECK(Eventually([&] { return !PidAlive(chief); }));
  CliResult logs = c.Cli({"logs", id, "--replica", "worker-0"});
  CHECK(logs.out.find("loss is nan") != std::string::npos);
}

TEST_CASE("cancel of a running job stops every process", "[integration]") {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(R"(
displayName: to-cancel
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'echo $$ > DIR/pid-$TRAINCTL_REPLICA_NAME; sleep 300 & echo $! > DIR/child-$TRAINCTL_REPLICA_NAME; wait']
- name: worker
  replicaCount: 2
  command: [/bin/sh, -c, 'echo $$ > DIR/pid-$TRAINCTL_REPLICA_NAME; sleep 300 & echo $! > DIR/child-$TRAINCTL_REPLICA_NAME; wait']
  resources: {cpu: 1}
)"));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  std::vector<pid_t> pids;
  for (const char* r : {"chief-0", "worker-0", "worker-1"}) {
    pids.push_back(WaitForPidFile(absl::StrCat(c.dir(), "/pid-", r)));
    pids.push_back(WaitForPidFile(absl::StrCat(c.dir(), "/child-", r)));
  }
  for (pid_t p : pids) CHECK(PidAlive(p));

  CliResult cancel = c.Cli({"cancel", id});
  INFO(cancel.err);
  CHECK(cancel.exit_code == 0);
  CliResult wait = c.Cli({"wait", id});
  CHECK(wait.exit_code == 1);
  CHECK(wait.out.find("CANCELLED") != std::string::npos);
  v1::Job job = c.GetJob(id);
  CHECK(job.state() == v1::JOB_STATE_CANCELLED);
  for (const v1::Replica& r : job.replicas()) CHECK(r.state() == v1::REPLICA_STATE_STOPPED);
  // CANCELLED means every process of every replica is gone, children included.
  for (pid_t p : pids) CHECK(Eventually([&] { return !PidAlive(p); }, std::chrono::seconds(5)));
}

TEST_CASE("a SIGKILLed trainctld restarts, re-adopts running replicas and the job completes",
          "[integration]") {
  MiniCluster c(2);
  std::string id = c.Submit(c.Spec(kGatedJob));
  v1::Job running = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  std::vector<pid_t> pids;
  for (const v1::Replica& r : running.replicas()) pids.push_back(static_cast<pid_t>(r.pid()));
  for (pid_t p : pids) REQUIRE(PidAlive(p));

  // A waiter that must ride out the restart.
  Process waiter({BinDir() + "/trainctl", "--server", c.address(), "wait", id},
                 c.dir() + "/waiter.log");
  c.KillDaemon(SIGKILL);
  // The replicas keep running while the scheduler is gone.
  for (pid_t p : pids) CHECK(PidAlive(p));
  c.StartDaemon();
  c.WaitForConnectedNodes(2);

  v1::Job after = c.GetJob(id);
  CHECK(after.state() == v1::JOB_STATE_RUNNING);
  REQUIRE(after.replicas_size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(after.replicas(i).pid() == pids[i]);

  c.WriteFile("go", "");
  v1::Job done = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);
  CHECK(done.attempts_size() == 1);
  CHECK(done.replicas(0).restart_count() == 0);
  int status = waiter.Wait(std::chrono::seconds(30));
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  for (pid_t p : pids) CHECK(Eventually([&] { return !PidAlive(p); }, std::chrono::seconds(5)));
}

TEST_CASE("bad specs are rejected with the field path and nothing is stored", "[integration]") {
  MiniCluster c(1);
  struct Row {
    const char* what;
    const char* yaml;
    const char* code;
    const char* message;
  };
  const Row rows[] = {
      {"malformed YAML", "workerPools: [\n  - name: chief\n  command: [", "INVALID_ARGUMENT", ""},
      {"no displayName", "workerPools:\n- {name: chief, replicaCount: 1, command: [/bin/true]}\n",
       "INVALID_ARGUMENT", "displayName is required"},
      {"unknown field",
       "displayName: bad\nworkerPools:\n- name: chief\n  replicas: 1\n  command: [/bin/true]\n",
       "INVALID_ARGUMENT", "workerPools[0].replicas"},
      {"zero replicas",
       "displayName: bad\nworkerPools:\n- {name: chief, replicaCount: 1, command: [/bin/true]}\n"
       "- {name: worker, replicaCount: 0, command: [/bin/true]}\n",
       "INVALID_ARGUMENT", "workerPools[1].replicaCount must be 1..4096, got 0"},
      {"huge replicas",
       "displayName: bad\nworkerPools:\n- {name: chief, replicaCount: 1, command: [/bin/true]}\n"
       "- {name: worker, replicaCount: 1000000, command: [/bin/true]}\n",
       "INVALID_ARGUMENT", "workerPools[1].replicaCount must be 1..4096, got 1000000"},
      {"empty command",
       "displayName: bad\nworkerPools:\n- {name: chief, replicaCount: 1, command: []}\n",
       "INVALID_ARGUMENT", "workerPools[0].command must name the program to run"},
      {"negative resources",
       "displayName: bad\nworkerPools:\n- {name: chief, replicaCount: 1, command: [/bin/true], "
       "resources: {cpu: -1}}\n",
       "INVALID_ARGUMENT", "workerPools[0].resources.cpu must be 0..4096 cores, got -1"},
      {"checkpoint dir outside the allowed roots",
       "displayName: bad\ncheckpointDir: /tmp/../etc/trainctl\nworkerPools:\n"
       "- {name: chief, replicaCount: 1, command: [/bin/true]}\n",
       "INVALID_ARGUMENT", "checkpointDir must be under one of the allowed roots"},
      {"larger than any host",
       "displayName: bad\nworkerPools:\n- {name: chief, replicaCount: 1, command: [/bin/true], "
       "resources: {gpus: 8}}\n",
       "FAILED_PRECONDITION", "workerPools[0].resources: no registered node is large enough"},
  };
  int n = 0;
  for (const Row& row : rows) {
    SECTION(row.what) {
      std::string path = c.WriteFile(absl::StrCat("bad-", ++n, ".yaml"), row.yaml);
      CliResult r = c.Cli({"submit", "-f", path});
      INFO(r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK(r.err.find(row.code) != std::string::npos);
      CHECK(r.err.find(row.message) != std::string::npos);
      CliResult list = c.Cli({"list", "-o", "json"});
      REQUIRE(list.exit_code == 0);
      CHECK(list.out.find("\"id\"") == std::string::npos);
    }
  }
}

TEST_CASE("a job near the largest spec allowed runs end to end", "[integration]") {
  MiniCluster c(2);
  // About 960 KB of arguments, just under the 1 MiB spec limit: every launch message carries
  // them, and must still fit the agent stream.
  std::string yaml =
      "displayName: large\nworkerPools:\n- name: chief\n  replicaCount: 1\n"
      "  command: [/bin/sh, -c, 'exit 0']\n  args:\n";
  for (int i = 0; i < 16; ++i) absl::StrAppend(&yaml, "  - ", std::string(60'000, 'a' + i), "\n");
  absl::StrAppend(&yaml, "- name: worker\n  replicaCount: 7\n  command: [/bin/true]\n");
  const std::string id = c.Submit(yaml);
  CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);

  // 17 such arguments are over the limit, refused before anything is stored.
  absl::StrAppend(&yaml, "  args: [", std::string(120'000, 'z'), "]\n");
  CliResult r = c.Cli({"submit", "-f", c.WriteFile("too-large.yaml", yaml)});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("bytes, at most 1048576 are allowed"));
}

TEST_CASE("logs -f follows a replica's output until it ends", "[integration]") {
  MiniCluster c(1);
  std::string id = c.Submit(c.Spec(R"(
displayName: chatty
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'for i in 1 2 3; do echo tick $i; sleep 0.2; done; while [ ! -e DIR/go ]; do sleep 0.05; done; echo done >&2']
)"));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  Process follow(
      {BinDir() + "/trainctl", "--server", c.address(), "logs", id, "--replica", "chief-0", "-f"},
      c.dir() + "/follow.log");
  REQUIRE(Eventually(
      [&] { return ReadTextFile(c.dir() + "/follow.log").find("tick 3") != std::string::npos; }));
  CHECK(follow.Running());  // still following: the replica has not ended
  c.WriteFile("go", "");
  int status = follow.Wait(std::chrono::seconds(30));
  REQUIRE(status != -1);
  CHECK(WEXITSTATUS(status) == 0);
  std::string out = ReadTextFile(c.dir() + "/follow.log");
  CHECK(out.find("tick 1\ntick 2\ntick 3\n") != std::string::npos);
  CHECK(out.find("done") != std::string::npos);
}

}  // namespace
}  // namespace trainctl::testing
