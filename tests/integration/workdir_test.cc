// Jobs shipped with their working directory (`trainctl submit --workdir DIR`): replicas on two
// agents run ./train.sh from a read-only copy of DIR; a restarted replica and a retried attempt
// see the bytes of the submit even after DIR changed; .trainctlignore and the size cap decide
// what ships, with errors naming the files. Real processes, real gRPC over loopback.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// Writes `content` to dir/name, mode `mode`.
void PutFile(const std::string& dir, const std::string& name, const std::string& content,
             mode_t mode = 0644) {
  const std::string path = dir + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::trunc) << content;
  REQUIRE(chmod(path.c_str(), mode) == 0);
}

// A script that prints what it sees: the data file, whether it can write where it runs, and
// its run count, kept in the checkpoint dir; then it runs on (KEEP_RUNNING: the worker, stopped
// with its job), or fails until its FAIL_UNTIL-th run (the chief).
constexpr char kTrainScript[] = R"sh(#!/bin/sh
n=$(cat "$TRAINCTL_CHECKPOINT_DIR/count-$TRAINCTL_REPLICA_NAME" 2>/dev/null || echo 0)
n=$((n+1))
echo $n > "$TRAINCTL_CHECKPOINT_DIR/count-$TRAINCTL_REPLICA_NAME"
if touch ./written 2>/dev/null; then w=writable; else w=read-only; fi
echo "run=$n replica=$TRAINCTL_REPLICA_NAME data=$(cat data/value.txt) cwd=$w lib=$(cat lib.txt)"
echo ok > "$TRAINCTL_RUN_DIR/progress-check"
[ -n "$KEEP_RUNNING" ] && exec sleep 600
[ "$FAIL_UNTIL" -le "$n" ]
)sh";

std::string ShippedJob(const std::string& fail_until) {
  return absl::StrCat(R"(
displayName: shipped
workerPools:
- name: chief
  replicaCount: 1
  command: [./train.sh]
  env: {FAIL_UNTIL: ")",
                      fail_until, R"("}
  resources: {cpu: 0.6, memoryMb: 32}
- name: worker
  replicaCount: 1
  command: [./train.sh]
  env: {FAIL_UNTIL: "0", KEEP_RUNNING: "1"}
  resources: {cpu: 0.6, memoryMb: 32}
scheduling:
  restartPolicy: RESTART_POLICY_ON_FAILURE
  maxReplicaRestarts: 1
  maxJobRetries: 1
  restartBackoff: {initial: 0.1s}
  retryBackoff: {initial: 0.1s}
)");
}

std::string Trimmed(const std::string& s) { return std::string(absl::StripAsciiWhitespace(s)); }

TEST_CASE("a job runs ./train.sh from its shipped workdir on two agents",
          "[integration][workdir]") {
  // Replicas run as the agents' default user, not root: the copy must be readable, not writable.
  AgentOptions agents;
  agents.cpus = 1;
  agents.root_replicas = false;
  MiniCluster c(2, agents);
  const std::string src = c.dir() + "/src";
  PutFile(src, "train.sh", kTrainScript, 0755);
  PutFile(src, "data/value.txt", "v1");
  PutFile(src, "lib.txt", "shipped");
  PutFile(src, ".trainctlignore", "*.ckpt\noutputs/\n");
  PutFile(src, "old.ckpt", std::string(3 << 20, 'x'));  // ignored: not counted by the cap
  PutFile(src, "outputs/run.log", "ignored");

  // Fails twice (run 1 and its in-place restart), then attempt 2 succeeds.
  CliResult submitted = c.Cli({"submit", "-f", c.WriteFile("job.yaml", ShippedJob("3")),
                               "--workdir", src, "--max-workdir-mb", "1"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id = Trimmed(submitted.out);
  CHECK(absl::StrContains(submitted.err, "uploading " + src));
  // What runs is what was submitted, whatever DIR holds afterwards.
  PutFile(src, "data/value.txt", "v2");

  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED, std::chrono::seconds(90));
  REQUIRE(absl::StartsWith(job.spec().workdir(), "sha256:"));
  std::set<std::string> nodes;
  for (const v1::Replica& r : job.replicas()) nodes.insert(r.node());
  CHECK(nodes.size() == 2);
  // The chief's runs: attempt 1 and its restart fail, attempt 2 succeeds; all see the same bytes.
  for (const auto& [attempt, restart, run] : std::vector<std::tuple<std::string, std::string, int>>{
           {"1", "0", 1}, {"1", "1", 2}, {"2", "0", 3}}) {
    CliResult logs =
        c.Cli({"logs", id, "-r", "chief-0", "--attempt", attempt, "--restart", restart});
    INFO("attempt " << attempt << " restart " << restart << ": " << logs.out << logs.err
                    << c.Cli({"describe", id}).out);
    CHECK(absl::StrContains(logs.out, absl::StrCat("run=", run,
                                                   " replica=chief-0 data=v1 cwd=read-only "
                                                   "lib=shipped")));
  }
  // The worker, on the other node, saw them too.
  CliResult worker = c.Cli({"logs", id, "-r", "worker-0", "--attempt", "1", "--restart", "0"});
  INFO(worker.out << worker.err);
  CHECK(absl::StrContains(worker.out, "run=1 replica=worker-0 data=v1 cwd=read-only lib=shipped"));
  // The ignored files never reached a node; the tree is there, read-only, once per job.
  for (int i = 0; i < 2; ++i) {
    const std::string tree = c.AgentWorkDir(i) + "/workdirs/" + id;
    CHECK(std::filesystem::exists(tree + "/train.sh"));
    CHECK_FALSE(std::filesystem::exists(tree + "/old.ckpt"));
    CHECK_FALSE(std::filesystem::exists(tree + "/outputs"));
    CHECK_FALSE(std::filesystem::exists(tree + "/written"));
  }

  // The same bytes again: nothing is uploaded, the project holds them.
  PutFile(src, "data/value.txt", "v1");
  CliResult again =
      c.Cli({"submit", "-f", c.WriteFile("job2.yaml", ShippedJob("0")), "--workdir", src});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(absl::StrContains(again.err, "holds " + src + " already"));
  CHECK(c.WaitForState(Trimmed(again.out), v1::JOB_STATE_SUCCEEDED).spec().workdir() ==
        job.spec().workdir());
}

TEST_CASE("submit --workdir refuses what it cannot ship, naming it", "[integration][workdir]") {
  MiniCluster c(1);
  const std::string spec = c.WriteFile("job.yaml", ShippedJob("0"));
  // A missing directory.
  CliResult missing = c.Cli({"submit", "-f", spec, "--workdir", c.dir() + "/nowhere"});
  CHECK(missing.exit_code == 2);
  CHECK(absl::StrContains(missing.err, c.dir() + "/nowhere"));
  // Over the cap: the largest files are named, and nothing was submitted.
  const std::string src = c.dir() + "/big";
  PutFile(src, "train.sh", kTrainScript, 0755);
  PutFile(src, "weights.bin", std::string(2 << 20, 'w'));
  CliResult big = c.Cli({"submit", "-f", spec, "--workdir", src, "--max-workdir-mb", "1"});
  INFO(big.err);
  CHECK(big.exit_code == 2);
  CHECK(absl::StrContains(big.err, "weights.bin"));
  CHECK(absl::StrContains(big.err, ".trainctlignore"));
  // Ignoring it makes it fit.
  PutFile(src, ".trainctlignore", "weights.bin\n");
  CliResult fits = c.Cli({"submit", "-f", spec, "--workdir", src, "--max-workdir-mb", "1"});
  INFO(fits.err);
  CHECK(fits.exit_code == 0);
  // An unreadable file, named (root reads everything: the test drops it with chmod only when
  // it runs as another user).
  if (geteuid() != 0) {
    PutFile(src, "secret.txt", "x", 0000);
    CliResult unreadable = c.Cli({"submit", "-f", spec, "--workdir", src});
    CHECK(unreadable.exit_code == 2);
    CHECK(absl::StrContains(unreadable.err, "secret.txt"));
  }
  // A spec naming an upload the project does not hold.
  CliResult unknown =
      c.Cli({"submit", "-f",
             c.WriteFile("bad.yaml",
                         ShippedJob("0") + "workdir: sha256:" + std::string(64, 'a') + "\n")});
  CHECK(unknown.exit_code == 2);
  CHECK(absl::StrContains(unknown.err, "holds no upload sha256:aaaa"));
}

}  // namespace
}  // namespace trainctl::testing
