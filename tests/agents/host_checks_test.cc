#include "agents/host_checks.h"

#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/agents/fake_host_probe.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::FakeHostProbe;
using ::trainctl::agent::testing::kGb;

HostCheckConfig Config() {
  HostCheckConfig config;
  config.cache.path = "/work";
  return config;
}

TEST_CASE("each item passes or fails with its message", "[host_checks]") {
  struct Row {
    const char* what;
    std::function<void(FakeHostProbe&, HostCheckConfig&, CheckRequest&)> setup;
    const char* item;
    bool passed;
    const char* line;
  };
  const std::vector<Row> rows = {
      {"R20 every hostname resolves", [](auto&, auto&, auto&) {}, "dns", true,
       "item dns passed: 2 of 2 hostnames resolve"},
      {"R20 a hostname does not resolve",
       [](auto&, auto&, CheckRequest& r) { r.hostnames.push_back("ghost"); }, "dns", false,
       "item dns failed: 1 of 3 hostnames do not resolve: ghost: Name or service not known"},
      {"R20 root has room", [](auto&, auto&, auto&) {}, "disk-size root", true,
       "item disk-size root passed: 120.0 GB free > 32 GB"},
      {"R20 root is short", [](FakeHostProbe& p, auto&, auto&) { p.free_bytes["/"] = 32 * kGb; },
       "disk-size root", false, "item disk-size root failed: 32.0 GB free, need > 32 GB"},
      {"R20 shm has room", [](auto&, auto&, auto&) {}, "disk-size shm", true,
       "item disk-size shm passed: 8.0 GB free > 1 GB"},
      {"R20 shm is short",
       [](FakeHostProbe& p, auto&, auto&) { p.free_bytes["/dev/shm"] = kGb / 2; }, "disk-size shm",
       false, "item disk-size shm failed: 0.5 GB free, need > 1 GB"},
      {"R20 the shm threshold is configurable",
       [](auto&, HostCheckConfig& c, auto&) { c.shm.min_free_gb = 10; }, "disk-size shm", false,
       "item disk-size shm failed: 8.0 GB free, need > 10 GB"},
      {"R20 cache has room", [](auto&, auto&, auto&) {}, "disk-size cache", true,
       "item disk-size cache passed: 500.0 GB free > 32 GB"},
      {"R20 cache cannot be read", [](auto&, HostCheckConfig& c, auto&) { c.cache.path = "/gone"; },
       "disk-size cache", false,
       "item disk-size cache failed: cannot read the free space of /gone: statvfs /gone: no such "
       "file"},
      {"R20 ulimit passes on InfiniBand",
       [](auto&, HostCheckConfig& c, auto&) { c.infiniband = true; }, "ulimit", true,
       "item ulimit passed: memlock unlimited > 16000 KiB; nofile 1048576 > 1000000; stack 8192 "
       "KiB > 8000 KiB; nproc unlimited > 1000000"},
      {"R20 ulimit fails on InfiniBand",
       [](FakeHostProbe& p, HostCheckConfig& c, auto&) {
         c.infiniband = true;
         p.limits[RLIMIT_MEMLOCK] = 64 * 1024;
         p.limits[RLIMIT_NOFILE] = 1024;
       },
       "ulimit", false,
       "item ulimit failed: memlock 64 KiB, need > 16000 KiB; nofile 1024, need > 1000000"},
      {"R20 ulimit thresholds are configurable",
       [](FakeHostProbe& p, HostCheckConfig& c, auto&) {
         c.infiniband = true;
         c.min_nproc = 5000;
         p.limits[RLIMIT_NPROC] = 4096;
       },
       "ulimit", false, "item ulimit failed: nproc 4096, need > 5000"},
      {"R20 enough GPUs", [](auto&, auto&, CheckRequest& r) { r.gpus_needed = 8; }, "gpu-check",
       true, "item gpu-check passed: 8 GPUs detected, 8 needed"},
      {"R20 too few GPUs",
       [](FakeHostProbe& p, auto&, CheckRequest& r) {
         p.gpus = FakeHostProbe::Gpus(7);
         r.gpus_needed = 8;
       },
       "gpu-check", false, "item gpu-check failed: 7 GPUs detected, need >= 8 GPUs"},
      {"R20 GPUs cannot be counted",
       [](FakeHostProbe& p, auto&, CheckRequest& r) {
         p.gpus = absl::InternalError("nvidia-smi failed");
         r.gpus_needed = 1;
       },
       "gpu-check", false, "item gpu-check failed: cannot list GPUs: nvidia-smi failed"},
      {"R20 the replica's own GPUs are present",
       [](auto&, auto&, CheckRequest& r) {
         r.gpu_devices = {4, 5, 6, 7};
       },
       "gpu-check", true, "item gpu-check passed: GPUs 4-7 present, 8 GPUs detected"},
      {"R20 one of the replica's GPUs is missing",
       [](FakeHostProbe& p, auto&, CheckRequest& r) {
         p.gpus = std::vector<int32_t>{0, 1, 2, 4, 5, 6, 7};
         r.gpu_devices = {2, 3};
         r.gpus_needed = 1;  // the devices decide, not the count
       },
       "gpu-check", false,
       "item gpu-check failed: GPU 3 of GPUs 2-3 is missing; 7 GPUs detected: 0-2,4-7"},
      {"R20 no GPUs needed passes without GPUs",
       [](FakeHostProbe& p, auto&, auto&) { p.gpus = absl::InternalError("no driver"); },
       "gpu-check", true, "item gpu-check passed: no GPUs needed"},
  };
  for (const Row& row : rows) {
    SECTION(row.what) {
      FakeHostProbe probe;
      HostCheckConfig config = Config();
      CheckRequest request{{"worker-0", "worker-1"}, 0};
      row.setup(probe, config, request);
      std::vector<CheckResult> results = RunChecks(config, probe, request);
      const CheckResult* found = nullptr;
      for (const CheckResult& r : results) {
        if (r.item == row.item) found = &r;
      }
      REQUIRE(found != nullptr);
      CHECK(found->passed == row.passed);
      CHECK(FormatCheckResult(*found) == row.line);
    }
  }
}

TEST_CASE("items run in order, ulimit only with InfiniBand", "[host_checks]") {
  FakeHostProbe probe;
  HostCheckConfig config = Config();
  auto items = [&] {
    std::vector<std::string> names;
    for (const CheckResult& r : RunChecks(config, probe, {{"worker-0"}, 1})) {
      names.push_back(r.item);
      CHECK(r.passed);
    }
    return names;
  };
  CHECK(items() == std::vector<std::string>{"dns", "disk-size root", "disk-size shm",
                                            "disk-size cache", "gpu-check"});
  config.infiniband = true;
  CHECK(items() == std::vector<std::string>{"dns", "disk-size root", "disk-size shm",
                                            "disk-size cache", "ulimit", "gpu-check"});
}

TEST_CASE("a failed dns item measures the hostnames that failed", "[host_checks]") {
  FakeHostProbe probe;
  CheckResult dns = CheckDns({"a", "worker-0", "b"}, probe);
  CHECK_FALSE(dns.passed);
  CHECK(dns.measured == "a,b");
  CHECK(CheckDns({}, probe).passed);
}

TEST_CASE("the real probe checks this host", "[host_checks]") {
  RealHostProbe probe;
  CHECK(CheckDns({"localhost"}, probe).passed);
  CHECK(CheckDiskSize("root", {"/", 0}, probe).passed);
  CheckResult huge = CheckDiskSize("root", {"/", 1e9}, probe);
  CHECK_FALSE(huge.passed);
  CHECK(huge.threshold == "> 1e+09 GB");
  CHECK(probe.SoftLimit(RLIMIT_NOFILE).ok());
}

}  // namespace
}  // namespace trainctl::agent
