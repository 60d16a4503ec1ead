// The agent's check runs: their protos, what counts as an abnormal exit, the configuration as
// Register describes it, the preflight cache, and NodeChecker over a fake host.
#include "agents/node_checks.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/time_util.h"
#include "tests/agents/fake_host_probe.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::FakeHostProbe;
using ::trainctl::agent::testing::kGb;
using ::trainctl::agent::testing::TempDir;

TEST_CASE("a check run holds every item and passes when all do", "[node_checks]") {
  std::vector<CheckResult> results = {
      {"disk-size root", true, "120.0 GB free", "> 32 GB", "120.0 GB free > 32 GB"},
      {"gpu-check", false, "7 GPUs detected", ">= 8 GPUs", "7 GPUs detected, need >= 8 GPUs"},
      {"dns", false, "ghost", "every hostname resolves", "1 of 1 hostnames do not resolve"},
  };
  trainctl::v1::CheckRun run = MakeCheckRun("preflight", results, 1700000000123);
  CHECK(run.phase() == "preflight");
  CHECK(TimestampToMs(run.time()) == 1700000000123);
  CHECK_FALSE(run.passed());
  REQUIRE(run.items_size() == 3);
  CHECK(run.items(1).item() == "gpu-check");
  CHECK_FALSE(run.items(1).passed());
  CHECK(run.items(1).measured() == "7 GPUs detected");
  CHECK(run.items(1).threshold() == ">= 8 GPUs");
  CHECK(run.items(1).message() == "7 GPUs detected, need >= 8 GPUs");
  CHECK(DescribeFailures(run) ==
        "item gpu-check failed: 7 GPUs detected, need >= 8 GPUs; item dns failed: 1 of 1 "
        "hostnames do not resolve");
  CHECK(PreflightError("node-1", run) ==
        "preflight failed on node-1: item gpu-check failed: 7 GPUs detected, need >= 8 GPUs; item "
        "dns failed: 1 of 1 hostnames do not resolve");
  CHECK(MakeCheckRun("periodic", {results[0]}, 1).passed());
}

TEST_CASE("exit checks follow abnormal exits only", "[node_checks]") {
  struct Row {
    const char* what;
    std::function<void(trainctl::v1::ReplicaExited&)> setup;
    bool abnormal;
  };
  const std::vector<Row> rows = {
      {"exit 0 is normal", [](auto& e) { e.set_exit_code(0); }, false},
      {"a non-zero exit code", [](auto& e) { e.set_exit_code(1); }, true},
      {"a terminating signal", [](auto& e) { e.set_signal(9); }, true},
      {"an OOM kill",
       [](auto& e) {
         e.set_signal(9);
         e.set_oom_killed(true);
       },
       true},
      {"a requested stop",
       [](auto& e) {
         e.set_signal(15);
         e.set_stopped_by_request(true);
       },
       false},
      {"the agent's own shutdown",
       [](auto& e) {
         e.set_signal(15);
         e.set_node_shutdown(true);
       },
       false},
      {"a launch that never started", [](auto& e) { e.set_launch_failed(true); }, false},
      {"an adopted run: status unknown", [](auto&) {}, false},
  };
  for (const Row& row : rows) {
    SECTION(row.what) {
      trainctl::v1::ReplicaExited exited;
      row.setup(exited);
      CHECK(IsAbnormalExit(exited) == row.abnormal);
    }
  }
}

TEST_CASE("the check configuration is described for node describe", "[node_checks]") {
  NodeCheckConfig config;
  config.host.cache.path = "/var/lib/trainctl";
  config.gpu_devices = {0, 1};
  std::map<std::string, std::string> described = DescribeCheckConfig(config);
  CHECK(described.at("disk-size root") == "/ > 32 GB");
  CHECK(described.at("disk-size shm") == "/dev/shm > 1 GB");
  CHECK(described.at("disk-size cache") == "/var/lib/trainctl > 32 GB");
  CHECK(described.at("ulimit") == "off (no --infiniband)");
  CHECK(described.at("gpu-check") == "GPUs 0-1");
  config.synthetic_gpus = true;
  CHECK(DescribeCheckConfig(config).at("gpu-check") == "off (synthetic GPUs from --gpus)");
  config = NodeCheckConfig();
  CHECK(DescribeCheckConfig(config).at("gpu-check") == "off (no GPUs)");
  CHECK(described.at("preflight") == "on");
  CHECK(described.at("health-check-interval") == "1m");
  CHECK(described.at("health-check-program") == "none");
  CHECK(described.at("health-check-timeout") == "30s");
  CHECK(described.at("startup-script") == "none");
  CHECK(described.at("startup-script-timeout") == "5m");

  config.host.infiniband = true;
  config.preflight = false;
  config.health_check_interval = absl::ZeroDuration();
  config.health_check_program = "/etc/trainctl/health.sh";
  config.startup_script = "/etc/trainctl/startup.sh";
  described = DescribeCheckConfig(config);
  CHECK(described.at("ulimit") ==
        "memlock > 16000 KiB, nofile > 1000000, stack > 8000 KiB, nproc > 1000000");
  CHECK(described.at("preflight") == "off");
  CHECK(described.at("health-check-interval") == "off");
  CHECK(described.at("health-check-program") == "/etc/trainctl/health.sh");
  CHECK(described.at("startup-script") == "/etc/trainctl/startup.sh");
}

TEST_CASE("the preflight cache is keyed by job attempt and bounded", "[node_checks]") {
  PreflightCache cache(2);
  trainctl::v1::CheckRun run;
  run.set_run_id("j-1/1/worker-0/0");
  cache.Insert("j-1", 1, run);
  REQUIRE(cache.Find("j-1", 1));
  CHECK(cache.Find("j-1", 1)->run_id() == "j-1/1/worker-0/0");
  CHECK_FALSE(cache.Find("j-1", 2));
  CHECK_FALSE(cache.Find("j-2", 1));
  cache.Insert("j-1", 2, run);
  cache.Insert("j-2", 1, run);  // Drops the oldest, (j-1, 1).
  CHECK_FALSE(cache.Find("j-1", 1));
  CHECK(cache.Find("j-1", 2));
  CHECK(cache.Find("j-2", 1));
}

class NodeCheckerFixture {
 public:
  explicit NodeCheckerFixture(const std::string& program_body = "") {
    config_.host.cache.path = "/work";
    config_.gpu_devices = FakeHostProbe::Gpus(8);
    if (!program_body.empty()) {
      config_.health_check_program = dir_.path() + "/health.sh";
      std::ofstream(config_.health_check_program) << "#!/bin/sh\n" << program_body << "\n";
      chmod(config_.health_check_program.c_str(), 0755);
    }
  }
  NodeCheckConfig& config() { return config_; }
  std::shared_ptr<FakeHostProbe> probe() { return probe_; }
  NodeChecker Make() { return NodeChecker(config_, "node-1", dir_.path(), probe_); }

 private:
  TempDir dir_;
  NodeCheckConfig config_;
  std::shared_ptr<FakeHostProbe> probe_ = std::make_shared<FakeHostProbe>();
};

std::vector<std::string> Items(const trainctl::v1::CheckRun& run) {
  std::vector<std::string> items;
  for (const auto& item : run.items()) items.push_back(item.item());
  return items;
}

TEST_CASE("the preflight checks the launch's hosts and GPUs", "[node_checks]") {
  NodeCheckerFixture f;
  trainctl::v1::LaunchReplica launch;
  launch.set_job_id("j-1");
  launch.set_run_id("j-1/1/worker-0/0");
  launch.add_hostnames("worker-0");
  launch.add_hostnames("ghost");
  launch.mutable_resources()->set_gpus(4);
  for (int32_t gpu : {4, 5, 6, 7}) launch.add_gpu_devices(gpu);
  trainctl::v1::CheckRun run = f.Make().RunPreflight(launch);
  CHECK(run.phase() == "preflight");
  CHECK(run.job_id() == "j-1");
  CHECK(run.run_id() == "j-1/1/worker-0/0");
  CHECK_FALSE(run.passed());
  CHECK(Items(run) == std::vector<std::string>{"dns", "disk-size root", "disk-size shm",
                                               "disk-size cache", "gpu-check"});
  CHECK_FALSE(run.items(0).passed());
  CHECK(run.items(4).message() == "GPUs 4-7 present, 8 GPUs detected");

  // It checks the GPUs the replica will get, not how many there are.
  f.probe()->gpus = std::vector<int32_t>{0, 1, 2, 3, 4, 5, 7};
  run = f.Make().RunPreflight(launch);
  CHECK(run.items(4).message() == "GPU 6 of GPUs 4-7 is missing; 7 GPUs detected: 0-5,7");
  // Synthetic GPUs (--gpus N) are not probed.
  f.config().synthetic_gpus = true;
  CHECK(f.Make().RunPreflight(launch).items(4).message() == "no GPUs needed");
  f.config().synthetic_gpus = false;
  f.probe()->gpus = FakeHostProbe::Gpus(8);

  // The thresholds are the node's own.
  f.probe()->resolvable.insert("ghost");
  f.config().host.root.min_free_gb = 1e9;
  run = f.Make().RunPreflight(launch);
  CHECK_FALSE(run.passed());
  CHECK(DescribeFailures(run) == "item disk-size root failed: 120.0 GB free, need > 1e+09 GB");
}

TEST_CASE("a shared preflight is checked again for each replica's own GPUs", "[node_checks]") {
  NodeCheckerFixture f;
  trainctl::v1::LaunchReplica first;
  first.set_job_id("j-1");
  first.set_run_id("j-1/1/worker-0/0");
  first.add_hostnames("worker-0");
  for (int32_t gpu : {0, 1}) first.add_gpu_devices(gpu);
  const trainctl::v1::CheckRun shared = f.Make().RunPreflight(first);
  REQUIRE(shared.passed());

  trainctl::v1::LaunchReplica second = first;
  second.set_run_id("j-1/1/worker-1/0");
  second.clear_gpu_devices();
  for (int32_t gpu : {2, 3}) second.add_gpu_devices(gpu);
  f.probe()->gpus = std::vector<int32_t>{0, 1, 2};
  trainctl::v1::CheckRun run = f.Make().ForReplica(shared, second);
  CHECK(run.run_id() == "j-1/1/worker-1/0");
  CHECK_FALSE(run.passed());
  CHECK(DescribeFailures(run) ==
        "item gpu-check failed: GPU 3 of GPUs 2-3 is missing; 3 GPUs detected: 0-2");

  // A replica without GPUs shares the run as it is.
  second.clear_gpu_devices();
  CHECK(f.Make().ForReplica(shared, second).passed());
}

TEST_CASE("container-runtime: on a node that runs images, for launches with an image",
          "[node_checks]") {
  NodeCheckerFixture f;
  TempDir images;
  CHECK(DescribeCheckConfig(f.config()).at("container-runtime") == "off (the node runs no images)");
  f.config().container_runtime = ContainerCheckConfig{"/bin/false", images.path()};
  CHECK(DescribeCheckConfig(f.config()).at("container-runtime") ==
        "runc /bin/false, image dir " + images.path() + ", timeout 5s");
  const std::vector<std::string> host_items = {"dns", "disk-size root", "disk-size shm",
                                               "disk-size cache", "gpu-check"};
  std::vector<std::string> with_runtime = host_items;
  with_runtime.push_back("container-runtime");

  trainctl::v1::LaunchReplica plain;
  plain.set_job_id("j-1");
  plain.set_run_id("j-1/1/worker-0/0");
  trainctl::v1::LaunchReplica in_image = plain;
  in_image.set_run_id("j-1/1/chief-0/0");
  in_image.set_image("reg:5000/team/app:1");

  // A launch without an image does not need it.
  const trainctl::v1::CheckRun shared = f.Make().RunPreflight(plain);
  CHECK(Items(shared) == host_items);
  CHECK(shared.passed());
  trainctl::v1::CheckRun run = f.Make().RunPreflight(in_image);
  CHECK(Items(run) == with_runtime);
  CHECK_FALSE(run.passed());
  CHECK(absl::StartsWith(DescribeFailures(run),
                         "item container-runtime failed: `/bin/false --version` failed: exit "
                         "status 1"));
  CHECK(absl::EndsWith(DescribeFailures(run), "or point --runc at a working one)"));
  // The attempt's run of a launch without an image gets it for one with an image.
  run = f.Make().ForReplica(shared, in_image);
  CHECK(run.run_id() == "j-1/1/chief-0/0");
  CHECK(Items(run) == with_runtime);
  CHECK_FALSE(run.passed());
  CHECK(f.Make().ForReplica(shared, plain).passed());

  // The periodic set has it, before the health program.
  run = f.Make().RunHealthChecks("periodic", {});
  CHECK(Items(run) == with_runtime);
  CHECK_FALSE(run.passed());
  // Not on a node without images.
  f.config().container_runtime.reset();
  CHECK(Items(f.Make().RunPreflight(in_image)) == host_items);
  CHECK(Items(f.Make().RunHealthChecks("periodic", {})) == host_items);
}

TEST_CASE("health checks run the host items and the health program", "[node_checks]") {
  SECTION("without a program") {
    NodeCheckerFixture f;
    trainctl::v1::CheckRun run = f.Make().RunHealthChecks("periodic", {});
    CHECK(run.phase() == "periodic");
    CHECK(run.passed());
    CHECK(Items(run) == std::vector<std::string>{"dns", "disk-size root", "disk-size shm",
                                                 "disk-size cache", "gpu-check"});
    CHECK(run.items(4).message() == "GPUs 0-7 present, 8 GPUs detected");  // Every GPU offered.
  }
  SECTION("with a failing program") {
    NodeCheckerFixture f("echo \"GPU 3 fell off the bus on $TRAINCTL_NODE\"; exit 1");
    trainctl::v1::CheckRun run = f.Make().RunHealthChecks("exit", {});
    CHECK(run.phase() == "exit");
    CHECK_FALSE(run.passed());
    REQUIRE(run.items_size() == 6);
    CHECK(run.items(5).item() == "health-program");
    CHECK(run.items(5).measured() == "exit status 1");
    CHECK(run.items(5).message() == "GPU 3 fell off the bus on node-1");
  }
  SECTION("a host item failing fails the run") {
    NodeCheckerFixture f("exit 0");
    f.probe()->free_bytes["/dev/shm"] = kGb / 2;
    trainctl::v1::CheckRun run = f.Make().RunHealthChecks("periodic", {});
    CHECK_FALSE(run.passed());
    CHECK(DescribeFailures(run) == "item disk-size shm failed: 0.5 GB free, need > 1 GB");
  }
}

TEST_CASE("the startup script's run has one item", "[node_checks]") {
  NodeCheckerFixture f;
  CHECK_FALSE(f.Make().RunStartupScript({}));
  TempDir dir;
  f.config().startup_script = dir.path() + "/startup.sh";
  std::ofstream(f.config().startup_script) << "#!/bin/sh\necho mounted /data\n";
  chmod(f.config().startup_script.c_str(), 0755);
  std::optional<trainctl::v1::CheckRun> run = f.Make().RunStartupScript({});
  REQUIRE(run);
  CHECK(run->phase() == "startup");
  CHECK(run->passed());
  REQUIRE(run->items_size() == 1);
  CHECK(run->items(0).item() == "startup-script");
  CHECK(run->items(0).measured() == "exit status 0");
  CHECK(run->items(0).message() == "mounted /data");
}

}  // namespace
}  // namespace trainctl::agent
