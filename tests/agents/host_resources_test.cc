#include "agents/host_resources.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

TEST_CASE("MemTotal is read from meminfo", "[host_resources]") {
  CHECK(ParseMemTotalMb("MemTotal:       16310508 kB\nMemFree: 1 kB\n") == 15928);
  CHECK(ParseMemTotalMb("MemFree: 1 kB\nMemTotal: 2048 kB") == 2);
  CHECK_FALSE(ParseMemTotalMb("MemFree: 1 kB\n"));
  CHECK_FALSE(ParseMemTotalMb("MemTotal: lots\n"));
}

TEST_CASE("GPU device nodes are found as /dev/nvidia<N>", "[host_resources]") {
  testing::TempDir dev;
  for (const char* name : {"nvidia0", "nvidia1", "nvidia12", "nvidiactl", "nvidia-uvm", "nvidia"}) {
    close(open((dev.path() + "/" + name).c_str(), O_CREAT | O_WRONLY, 0644));
  }
  CHECK(NvidiaDeviceMinors(dev.path()) == std::vector<int32_t>{0, 1, 12});
  CHECK(NvidiaDeviceMinors(dev.path() + "/missing").empty());
}

TEST_CASE("the host's resources are detected", "[host_resources]") {
  absl::StatusOr<HostResources> host = DetectHostResources();
  REQUIRE(host.ok());
  CHECK(host->cpu >= 1);
  CHECK(host->memory_mb > 0);
}

}  // namespace
}  // namespace trainctl::agent
