// Replicas in container images, end to end: Debian's docker-registry on loopback, a busybox image
// built offline with buildah and pushed there, trainctld and agents that pull it with skopeo,
// unpack it with umoci and run it with runc under each replica's trainctl-shim. Jobs print the
// image's /etc/os-release and their ranks, fail with the user's exit code, are OOM-killed,
// restart in place, outlive an agent restart and are cancelled; a gang of four on two agents
// pulls once per agent; a missing image fails naming it; a stopped registry is retried under the
// capacity budget. Needs root and the container tools (deploy/install-deps.sh): skipped with a
// warning without them.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/agents/oci_registry_fixture.h"
#include "tests/integration/image_registry.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

using ::trainctl::agent::testing::OciTestsUnavailable;

// A job running `script` (busybox sh) in `image`: a chief and `replicas` - 1 workers.
std::string ImageJob(const std::string& image, const std::string& script, int replicas = 1,
                     const std::string& scheduling = "") {
  auto pool = [&](const std::string& name, int count) {
    return absl::StrCat("- name: ", name, "\n  replicaCount: ", count, "\n  image: ", image,
                        "\n  command: [/bin/sh, -c, '", absl::StrReplaceAll(script, {{"'", "''"}}),
                        "']\n  resources: {cpu: 0.5, memoryMb: 64}\n");
  };
  return absl::StrCat("displayName: in-image\nworkerPools:\n", pool("chief", 1),
                      replicas > 1 ? pool("worker", replicas - 1) : "",
                      "scheduling: {restartBackoff: {initial: 0.1s}, retryBackoff: {initial: "
                      "0.1s}",
                      scheduling.empty() ? "" : ", " + scheduling, "}\n");
}

std::string Logs(MiniCluster& c, const std::string& id, const std::string& replica,
                 const std::string& restart = "0") {
  CliResult logs = c.Cli({"logs", id, "-r", replica, "--restart", restart});
  return logs.out + logs.err;
}

#define SKIP_WITHOUT_CONTAINER_TOOLS()                               \
  if (const std::string why = OciTestsUnavailable(); !why.empty()) { \
    WARN("images: " << why << "; skipped");                          \
    return;                                                          \
  }

TEST_CASE("a gang of four in an image on two agents: its os-release, ranks, one pull per agent",
          "[integration][images]") {
  SKIP_WITHOUT_CONTAINER_TOOLS();
  ImageRegistry reg;
  REQUIRE(reg.Start());
  ClusterOptions o = ImageCluster(reg, 2);
  o.agent.cpus = 2;
  MiniCluster c(o);
  for (const char* node : {"node-0", "node-1"}) {
    v1::Node n = c.GetNode(node);
    CHECK(n.labels().at("trainctl.io/images") == "true");
  }

  const std::string id = c.Submit(ImageJob(
      reg.image,
      "cat /etc/os-release; echo rank=$RANK world=$WORLD_SIZE var=$IMAGE_VAR; "
      "echo step > $TRAINCTL_RUN_DIR/written && echo run-dir-writable; "
      "echo {\"step\": 5} > $TRAINCTL_PROGRESS_FILE; /bin/busybox touch "
      "$TRAINCTL_CHECKPOINT_DIR/done-$RANK; "
      // The job ends with its chief: it waits for the workers (the checkpoint dir is shared).
      "while [ $RANK = 0 ]; do set -- $TRAINCTL_CHECKPOINT_DIR/done-*; [ $# -ge 4 ] && break; "
      "/bin/busybox sleep 0.1; done",
      4));
  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED, std::chrono::seconds(120));
  INFO(c.Cli({"describe", id}).out);
  std::set<std::string> nodes;
  for (const v1::Replica& r : job.replicas()) {
    nodes.insert(r.node());
    const std::string out = Logs(c, id, r.name());
    INFO(r.name() << ": " << out);
    CHECK(absl::StrContains(out, "ID=trainctl-test"));
    CHECK(absl::StrContains(out, absl::StrCat("world=4 var=from-image")));
    CHECK(absl::StrContains(out, "run-dir-writable"));
  }
  CHECK(nodes.size() == 2);
  std::set<std::string> ranks;
  for (const v1::Replica& r : job.replicas()) {
    const std::string out = Logs(c, id, r.name());
    const size_t at = out.find("rank=");
    if (at != std::string::npos) ranks.insert(out.substr(at, 6));
  }
  CHECK(ranks == std::set<std::string>{"rank=0", "rank=1", "rank=2", "rank=3"});
  // Two replicas per agent, one pull per agent (each with its own --image-dir).
  for (int i = 0; i < 2; ++i) {
    const std::string log = c.AgentLog(i);
    INFO(log);
    CHECK(Occurrences(log, " copied in ") == 1);
    CHECK(std::filesystem::is_empty(c.AgentWorkDir(i) + "/containers"));
  }
  // The events tell of the pull.
  CliResult events = c.Cli({"events", id});
  INFO(events.out << events.err);
  CHECK(absl::StrContains(events.out, "ImagePulled"));

  // Exit 3 in the image is the user's error, with the replica's output.
  const std::string failed = c.Submit(
      ImageJob(reg.image, "echo bad input >&2; exit 3", 1, "restartPolicy: RESTART_POLICY_NEVER"));
  job = c.WaitForEnd(failed);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().reason() == "USER_ERROR");
  CHECK(job.error().code() == 3);
  CHECK(absl::StrContains(job.error().output_tail(), "bad input"));
}

TEST_CASE("a replica in an image: OOM, in-place restart, agent restart, cancel",
          "[integration][images]") {
  SKIP_WITHOUT_CONTAINER_TOOLS();
  ImageRegistry reg;
  REQUIRE(reg.Start());
  ClusterOptions o = ImageCluster(reg, 1);
  MiniCluster c(o);

  // Over its 64 MiB: the kernel kills it in its container's cgroup, and that is what is said.
  const std::string oom = c.Submit(ImageJob(
      reg.image, "a=$(/bin/busybox head -c 400000000 /dev/zero | /bin/busybox tr \"\\0\" x)", 1,
      "restartPolicy: RESTART_POLICY_NEVER"));
  v1::Job job = c.WaitForEnd(oom, std::chrono::seconds(90));
  INFO(c.Cli({"describe", oom}).out);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().reason() == "OUT_OF_MEMORY");

  // Fails once, restarts in place in a fresh container, sees its checkpoint and succeeds.
  const std::string restart = c.Submit(ImageJob(
      reg.image,
      "n=$(cat $TRAINCTL_CHECKPOINT_DIR/n 2>/dev/null || echo 0); n=$((n+1)); "
      "echo $n > $TRAINCTL_CHECKPOINT_DIR/n; echo run=$n; ls /scratch-of-run-1 2>/dev/null; "
      "/bin/busybox mkdir /scratch-of-run-$n; [ $n -ge 2 ]",
      1, "restartPolicy: RESTART_POLICY_ON_FAILURE, maxReplicaRestarts: 1"));
  job = c.WaitForState(restart, v1::JOB_STATE_SUCCEEDED, std::chrono::seconds(90));
  CHECK(job.replicas(0).restart_count() == 1);
  const std::string second = Logs(c, restart, "chief-0", "1");
  INFO(second);
  CHECK(absl::StrContains(second, "run=2"));
  // Its writable layer went with the first run.
  CHECK_FALSE(absl::StrContains(second, "scratch-of-run-1"));

  // Outlives an agent restart: still the first run when the test lets it finish.
  const std::string lasting = c.Submit(ImageJob(
      reg.image,
      "echo started; while [ ! -e $TRAINCTL_CHECKPOINT_DIR/go ]; do /bin/busybox sleep 0.1; "
      "done; echo finished"));
  job = c.WaitForState(lasting, v1::JOB_STATE_RUNNING, std::chrono::seconds(90));
  c.KillAgent(0, SIGKILL);
  c.StartAgent(0);
  c.WaitForConnectedNodes(1);
  std::ofstream(job.checkpoint_dir() + "/go") << "go\n";
  job = c.WaitForState(lasting, v1::JOB_STATE_SUCCEEDED, std::chrono::seconds(60));
  CHECK(job.replicas(0).restart_count() == 0);
  CHECK(absl::StrContains(Logs(c, lasting, "chief-0"), "finished"));

  // Cancelled: the container is gone, and so is its writable layer.
  const std::string cancelled = c.Submit(ImageJob(reg.image, "/bin/busybox sleep 600"));
  c.WaitForState(cancelled, v1::JOB_STATE_RUNNING, std::chrono::seconds(60));
  REQUIRE(c.Cli({"cancel", cancelled}).exit_code == 0);
  c.WaitForState(cancelled, v1::JOB_STATE_CANCELLED, std::chrono::seconds(60));
  const std::string containers = c.AgentWorkDir(0) + "/containers";
  for (int i = 0; i < 100 && !std::filesystem::is_empty(containers); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(std::filesystem::is_empty(containers));
}

TEST_CASE("a missing image fails naming it, an unreachable registry is a capacity retry",
          "[integration][images]") {
  SKIP_WITHOUT_CONTAINER_TOOLS();
  ImageRegistry reg;
  REQUIRE(reg.Start());
  ClusterOptions o = ImageCluster(reg, 1);
  MiniCluster c(o);

  const std::string missing = reg.registry->host() + "/test/nothere:1";
  std::string id = c.Submit(ImageJob(missing, "true"));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(60));
  INFO(c.Cli({"describe", id}).out);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.error().reason() == "USER_ERROR");
  CHECK(absl::StrContains(job.error().message(), "test/nothere:1"));

  // The registry stops: the launch is retried under maxCapacityRetries, charging nothing else.
  reg.registry->Stop();
  id = c.Submit(ImageJob(reg.image, "true", 1, "maxCapacityRetries: 1"));
  job = c.WaitForEnd(id, std::chrono::seconds(120));
  INFO(c.Cli({"describe", id}).out);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(job.budgets_used().capacity_retries() == 1);
  CHECK(job.budgets_used().job_retries() == 0);
  CHECK(job.budgets_used().internal_retries() == 0);
  CHECK(absl::StrContains(job.error().message(), reg.registry->host()));
}

}  // namespace
}  // namespace trainctl::testing
