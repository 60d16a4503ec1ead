// GPUs end to end with synthetic devices (`trainctl-agent --gpus 8`, no GPU needed): what each
// replica sees (CUDA_VISIBLE_DEVICES, LOCAL_RANK, ...) is the devices the scheduler gave it, two
// jobs on one host never share one, devices come back when a job ends, and `trainctl node
// describe` shows who holds each. And the CPU a replica asked for is the CFS quota of its cgroup.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agents/cgroup_fs.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

using std::chrono::seconds;

// A job of a chief and `workers` workers, each with `gpus` GPUs: each run writes what it sees to
// DIR/env-<job>-<replica>-<restart> (whole, by a rename), then runs until DIR/go-<tag> exists;
// with `crash_once`, the first run aborts instead.
std::string Job(const std::string& tag, int gpus, int workers = 0, bool crash_once = false) {
  const std::string crash =
      crash_once ? "if [ $TRAINCTL_RESTART_COUNT = 0 ]; then kill -ABRT $$; fi; " : "";
  auto pool = [&](const std::string& name, int count) {
    return absl::StrCat(
        "- name: ", name, "\n  replicaCount: ", count,
        "\n  command: [/bin/sh, -c]\n  args: ['f=DIR/env-$TRAINCTL_JOB_ID-$TRAINCTL_REPLICA_NAME-"
        "$TRAINCTL_RESTART_COUNT; WORKLOAD --env > $f.tmp && mv $f.tmp $f; ",
        crash, "exec WORKLOAD --wait-file DIR/go-", tag,
        "']\n  resources: {cpu: 0.1, memoryMb: 16, gpus: ", gpus, "}\n");
  };
  return absl::StrCat("displayName: ", tag, "\nworkerPools:\n", pool("chief", 1),
                      workers > 0 ? pool("worker", workers) : "");
}

ClusterOptions OneGpuHost() {
  ClusterOptions o;
  o.agents = 1;
  o.agent.gpus = 8;
  return o;
}

// What run `restart` of `replica` of `job` saw, once it has written it.
std::map<std::string, std::string> SeenBy(MiniCluster& c, const std::string& job,
                                          const std::string& replica, int restart = 0) {
  const std::string path = absl::StrCat(c.dir(), "/env-", job, "-", replica, "-", restart);
  REQUIRE(Eventually([&] { return !ReadTextFile(path).empty(); }, seconds(30)));
  return ParseEnvLines(ReadTextFile(path));
}

std::string Joined(const v1::Replica& r) { return absl::StrJoin(r.gpu_devices(), ","); }

TEST_CASE("two 4-GPU jobs on one 8-GPU host see disjoint GPUs", "[integration][devices]") {
  MiniCluster c(OneGpuHost());
  const std::string a = c.Submit(c.Spec(Job("a", 4)));
  const std::string b = c.Submit(c.Spec(Job("b", 4)));
  c.WaitForState(a, v1::JOB_STATE_RUNNING);
  c.WaitForState(b, v1::JOB_STATE_RUNNING);
  const std::map<std::string, std::string> seen_a = SeenBy(c, a, "chief-0");
  const std::map<std::string, std::string> seen_b = SeenBy(c, b, "chief-0");
  std::set<std::string> all;
  for (const auto* seen : {&seen_a, &seen_b}) {
    const std::vector<std::string> gpus = absl::StrSplit(seen->at("CUDA_VISIBLE_DEVICES"), ',');
    CHECK(gpus.size() == 4);
    all.insert(gpus.begin(), gpus.end());
    CHECK(seen->at("NVIDIA_VISIBLE_DEVICES") == seen->at("CUDA_VISIBLE_DEVICES"));
    CHECK(seen->at("TRAINCTL_GPUS") == seen->at("CUDA_VISIBLE_DEVICES"));
    CHECK(seen->at("CUDA_DEVICE_ORDER") == "PCI_BUS_ID");
  }
  CHECK(all.size() == 8);  // disjoint
  // What they saw is what the API says they own.
  CHECK(seen_a.at("CUDA_VISIBLE_DEVICES") == Joined(c.GetJob(a).replicas(0)));
  CHECK(seen_b.at("CUDA_VISIBLE_DEVICES") == Joined(c.GetJob(b).replicas(0)));

  // The node lists each device and the run holding it; describe shows each replica's GPUs.
  const v1::Node node = c.GetNode("node-0");
  REQUIRE(node.gpu_devices_size() == 8);
  for (const v1::GpuDevice& d : node.gpu_devices()) {
    CHECK_FALSE(d.holder().empty());
    CHECK_FALSE(d.run_id().empty());
  }
  CliResult described = c.Cli({"node", "describe", "node-0"});
  INFO(described.out);
  CHECK(described.exit_code == 0);
  CHECK_THAT(described.out, Catch::Contains("GPUs:"));
  CHECK_THAT(described.out, Catch::Contains(absl::StrCat(a, "/chief-0")));
  CHECK_THAT(described.out, Catch::Contains(absl::StrCat(a, "/1/chief-0/0")));
  CliResult job = c.Cli({"describe", a});
  CHECK_THAT(job.out, Catch::Contains("GPUS"));

  c.WriteFile("go-a", "");
  c.WriteFile("go-b", "");
  CHECK(c.WaitForEnd(a).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(c.WaitForEnd(b).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("an in-place restart keeps the replica's GPUs", "[integration][devices]") {
  MiniCluster c(OneGpuHost());
  const std::string other = c.Submit(c.Spec(Job("other", 3)));
  c.WaitForState(other, v1::JOB_STATE_RUNNING);
  const std::string id = c.Submit(c.Spec(Job("crash", 4, 0, /*crash_once=*/true)));
  const std::string before = SeenBy(c, id, "chief-0", 0).at("CUDA_VISIBLE_DEVICES");
  const std::string after = SeenBy(c, id, "chief-0", 1).at("CUDA_VISIBLE_DEVICES");
  CHECK(before == after);
  CHECK(std::vector<std::string>(absl::StrSplit(after, ',')).size() == 4);
  const v1::Job job = c.WaitForState(id, v1::JOB_STATE_RUNNING);
  CHECK(job.replicas(0).restart_count() == 1);
  CHECK(Joined(job.replicas(0)) == after);
  c.WriteFile("go-crash", "");
  c.WriteFile("go-other", "");
  CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(c.WaitForEnd(other).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("a job waits for GPUs naming the free ones, and gets them when a job ends",
          "[integration][devices]") {
  MiniCluster c(OneGpuHost());
  const std::string big = c.Submit(c.Spec(Job("big", 5)));
  c.WaitForState(big, v1::JOB_STATE_RUNNING);
  const std::string held = Joined(c.GetJob(big).replicas(0));
  REQUIRE(held == "0,1,2,3,4");
  const std::string waiting = c.Submit(c.Spec(Job("waiting", 4)));
  const v1::Job queued = c.WaitForJob(waiting, [](const v1::Job& j) {
    return j.state() == v1::JOB_STATE_QUEUED && absl::StrContains(j.queue_reason(), "CAPACITY");
  });
  CHECK(queued.queue_reason() ==
        "CAPACITY: no node has 4 free gpus for chief-0 (most free: 3 on node-0, GPUs 5-7)");

  c.WriteFile("go-big", "");
  CHECK(c.WaitForEnd(big).state() == v1::JOB_STATE_SUCCEEDED);
  c.WaitForState(waiting, v1::JOB_STATE_RUNNING);
  const std::string got = SeenBy(c, waiting, "chief-0").at("CUDA_VISIBLE_DEVICES");
  CHECK(got == "0,1,2,3");  // the lowest run of four, freed by the job that ended
  c.WriteFile("go-waiting", "");
  CHECK(c.WaitForEnd(waiting).state() == v1::JOB_STATE_SUCCEEDED);
  // Nothing is held once every job ended.
  CHECK(Eventually([&] {
    const v1::Node node = c.GetNode("node-0");
    for (const v1::GpuDevice& d : node.gpu_devices()) {
      if (!d.holder().empty()) return false;
    }
    return true;
  }));
}

TEST_CASE("two replicas of one job on one host get LOCAL_RANK 0 and 1", "[integration][devices]") {
  MiniCluster c(OneGpuHost());
  const std::string id = c.Submit(c.Spec(Job("local", 2, 1)));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const std::map<std::string, std::string> w0 = SeenBy(c, id, "chief-0");
  const std::map<std::string, std::string> w1 = SeenBy(c, id, "worker-0");
  CHECK(w0.at("LOCAL_RANK") == "0");
  CHECK(w1.at("LOCAL_RANK") == "1");
  CHECK(w0.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(w1.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(w0.at("NODE_RANK") == "0");
  CHECK(w1.at("GROUP_RANK") == "0");
  CHECK(w0.at("CUDA_VISIBLE_DEVICES") != w1.at("CUDA_VISIBLE_DEVICES"));
  c.WriteFile("go-local", "");
  CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("a job that sets CUDA_VISIBLE_DEVICES itself is refused", "[integration][devices]") {
  MiniCluster c(OneGpuHost());
  const std::string path =
      c.WriteFile("bad.yaml",
                  "displayName: cuda\nworkerPools:\n- {name: chief, replicaCount: 1, command: "
                  "[/bin/true], env: {CUDA_VISIBLE_DEVICES: '0'}, resources: {gpus: 1}}\n");
  CliResult r = c.Cli({"submit", "-f", path});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::Contains("INVALID_ARGUMENT: workerPools[0].env[\"CUDA_VISIBLE_DEVICES\"] "
                             "is set by trainctl for each replica"));
}

// The directory of `pid`'s cgroup in the hierarchy holding `controller`, or "" when none holds it.
std::string CgroupDirOf(pid_t pid, const std::string& controller) {
  const std::string self = ReadTextFile(absl::StrCat("/proc/", pid, "/cgroup"));
  for (const agent::CgroupMount& m :
       agent::ParseCgroupMounts(ReadTextFile("/proc/self/mountinfo"))) {
    const std::string own = agent::OwnCgroup(self, m);
    if (own.empty() || m.root != "/") continue;
    const std::string dir = m.mount_point + own;
    const bool holds =
        m.version == agent::CgroupVersion::kV1
            ? std::find(m.controllers.begin(), m.controllers.end(), controller) !=
                  m.controllers.end()
            : agent::ListsWord(ReadTextFile(dir + "/cgroup.controllers"), controller);
    if (holds) return dir;
  }
  return "";
}

TEST_CASE("a running replica's cgroup holds its cpu request as a CFS quota, and pids.max",
          "[integration][devices]") {
  MiniCluster c(OneGpuHost());
  const std::string id = c.Submit(c.Spec(R"(
displayName: devices
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --wait-file, DIR/go]
  resources: {cpu: 0.5, memoryMb: 64}
)"));
  const v1::Job job = c.WaitForJob(id, [](const v1::Job& j) {
    return j.replicas(0).state() == v1::REPLICA_STATE_RUNNING && j.replicas(0).pid() > 0;
  });
  const pid_t pid = static_cast<pid_t>(job.replicas(0).pid());
  const std::string cpu = CgroupDirOf(pid, "cpu");
  const std::string pids = CgroupDirOf(pid, "pids");
  if (cpu.find("trainctl-agent-") == std::string::npos ||
      pids.find("trainctl-agent-") == std::string::npos) {
    WARN("skipped: the agent has no cpu and pids cgroups here (" << cpu << ", " << pids << ")");
    c.WriteFile("go", "");
    return;
  }
  INFO(cpu);
  if (ReadTextFile(cpu + "/cpu.max").empty()) {  // cgroup v1
    CHECK(ReadTextFile(cpu + "/cpu.cfs_period_us") == "100000\n");
    CHECK(ReadTextFile(cpu + "/cpu.cfs_quota_us") == "50000\n");
  } else {
    CHECK(ReadTextFile(cpu + "/cpu.max") == "50000 100000\n");
  }
  CHECK(ReadTextFile(pids + "/pids.max") == "32768\n");
  c.WriteFile("go", "");
  CHECK(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
}

}  // namespace
}  // namespace trainctl::testing
