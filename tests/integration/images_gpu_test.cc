// GPUs in images through the host's CDI specs, end to end on a host without GPUs: an agent with
// four synthetic GPUs whose CDI spec (a directory of the test's, --cdi-dirs) gives each a
// character device node on a major no driver uses, a file mounted in the container and a
// variable. A replica assigned two GPUs sees exactly those two nodes, files and variables; the
// device cgroup lets it open them (no driver answers: ENXIO, not EPERM). Before the spec exists,
// a GPU job fails saying the node has no CDI spec. Needs root and the container tools.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/agents/oci_registry_fixture.h"
#include "tests/agents/test_util.h"
#include "tests/integration/image_registry.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// A CDI spec of kind example.com/gpu with devices "0".."3": /dev/exdevN (from nodes/exdevN under
// `dir`, major `major_number`, minor N), /mnt/gpuN.txt (from files/gpuN.txt) and EXDEV_N=N.
std::string WriteDevices(const std::string& dir, int major_number) {
  std::filesystem::create_directories(dir + "/nodes");
  std::filesystem::create_directories(dir + "/files");
  std::string spec = "cdiVersion: 0.6.0\nkind: example.com/gpu\ndevices:\n";
  for (int i = 0; i < 4; ++i) {
    const std::string node = absl::StrCat(dir, "/nodes/exdev", i);
    REQUIRE(mknod(node.c_str(), S_IFCHR | 0666, makedev(major_number, i)) == 0);
    const std::string file = absl::StrCat(dir, "/files/gpu", i, ".txt");
    std::ofstream(file) << "gpu " << i << "\n";
    absl::StrAppend(&spec, "- name: \"", i, "\"\n  containerEdits:\n    env: [EXDEV_", i, "=", i,
                    "]\n    deviceNodes: [{path: /dev/exdev", i, ", hostPath: ", node,
                    "}]\n    mounts: [{hostPath: ", file, ", containerPath: /mnt/gpu", i,
                    ".txt, options: [ro, nosuid, nodev, bind]}]\n");
  }
  return spec;
}

std::string GpuJob(const std::string& image) {
  return absl::StrCat(R"(displayName: gpus-in-image
workerPools:
- name: chief
  replicaCount: 1
  image: )",
                      image, R"(
  command: [/bin/sh, -c, 'ls /dev/exdev* /mnt/gpu*.txt; cat /mnt/gpu*.txt; echo "visible=$CUDA_VISIBLE_DEVICES env=${EXDEV_0:-.}${EXDEV_1:-.}${EXDEV_2:-.}${EXDEV_3:-.}"; for d in /dev/exdev*; do cat $d; done; echo end']
  resources: {cpu: 0.5, memoryMb: 64, gpus: 2}
scheduling: {maxInternalRetries: 0}
)");
}

TEST_CASE("a replica in an image gets exactly its two GPUs of four, through the CDI spec",
          "[integration][images]") {
  if (const std::string why = ::trainctl::agent::testing::OciTestsUnavailable(); !why.empty()) {
    WARN("images: " << why << "; skipped");
    return;
  }
  const int major_number = ::trainctl::agent::testing::UnusedCharMajor();
  if (major_number < 0) {
    WARN("no unused character device major in 234..254; skipped");
    return;
  }
  ImageRegistry reg;
  REQUIRE(reg.Start());
  const std::string cdi = reg.dir.path() + "/cdi";
  std::filesystem::create_directories(cdi);
  ClusterOptions o = ImageCluster(reg, 1);
  o.agent.gpus = 4;
  o.agent.extra_args.insert(o.agent.extra_args.end(),
                            {"--cdi-dirs", cdi, "--cdi-gpu-kind", "example.com/gpu"});
  MiniCluster c(o);

  // No spec yet: the node cannot give the GPUs, and says so.
  std::string id = c.Submit(GpuJob(reg.image));
  v1::Job job = c.WaitForEnd(id, std::chrono::seconds(60));
  INFO(c.Cli({"describe", id}).out);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(absl::StrContains(job.error().message(), "CDI"));
  CHECK(absl::StrContains(job.error().message(), "example.com/gpu="));

  std::ofstream(cdi + "/example.yaml") << WriteDevices(reg.dir.path(), major_number);
  // A host job holds two of the GPUs (the first free ones), so that the image's are others.
  const std::string release = reg.dir.path() + "/release";
  const std::string holder = c.Submit(absl::StrCat(
      "displayName: holder\nworkerPools:\n- name: chief\n  replicaCount: 1\n  command: [/bin/sh, "
      "-c, 'while [ ! -e ",
      release, " ]; do sleep 0.05; done']\n  resources: {cpu: 0.5, memoryMb: 32, gpus: 2}\n"));
  v1::Job held = c.WaitForState(holder, v1::JOB_STATE_RUNNING);
  id = c.Submit(GpuJob(reg.image));
  job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED, std::chrono::seconds(60));
  REQUIRE(job.replicas(0).gpu_devices_size() == 2);
  CliResult logs = c.Cli({"logs", id, "-r", "chief-0"});
  const std::string& out = logs.out;
  INFO(out << logs.err);
  std::set<int> mine(job.replicas(0).gpu_devices().begin(), job.replicas(0).gpu_devices().end());
  for (int32_t other : held.replicas(0).gpu_devices()) CHECK(mine.count(other) == 0);
  std::ofstream(release) << "done\n";
  std::string env;
  for (int i = 0; i < 4; ++i) {
    const bool has = mine.count(i) > 0;
    CHECK(absl::StrContains(out, absl::StrCat("/dev/exdev", i, "\n")) == has);
    CHECK(absl::StrContains(out, absl::StrCat("/mnt/gpu", i, ".txt\n")) == has);
    CHECK(absl::StrContains(out, absl::StrCat("gpu ", i, "\n")) == has);
    // Allowed by the device cgroup: opening it reaches the (absent) driver.
    if (has) {
      CHECK(absl::StrContains(out, absl::StrCat("'/dev/exdev", i, "': No such device or address")));
    }
    absl::StrAppend(&env, has ? std::to_string(i) : ".");
  }
  CHECK(absl::StrContains(out, "env=" + env + "\n"));
  CHECK_FALSE(absl::StrContains(out, "Operation not permitted"));
  CHECK(absl::StrContains(out, "end\n"));
  c.WaitForState(holder, v1::JOB_STATE_SUCCEEDED);
}

}  // namespace
}  // namespace trainctl::testing
