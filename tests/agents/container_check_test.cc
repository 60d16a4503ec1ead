// The check item container-runtime: with the real runc it passes; a runc that fails, is missing
// or hangs, an image dir that cannot be written, and a kernel without overlayfs each fail it,
// naming the problem and its fix.
#include "agents/container_check.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "agents/spawn.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::TempDir;

// A runtime check of `runc` on `dir`'s images with a filesystems list that has overlayfs.
class ContainerCheckFixture {
 public:
  ContainerCheckFixture() {
    config_.image_dir = dir_.path() + "/images";
    config_.filesystems = dir_.path() + "/filesystems";
    std::ofstream(config_.filesystems) << "nodev\tsysfs\n\text4\nnodev\toverlay\n";
  }
  ContainerCheckConfig& config() { return config_; }
  const std::string& dir() const { return dir_.path(); }

 private:
  TempDir dir_;
  ContainerCheckConfig config_;
};

TEST_CASE("container-runtime passes with the real runc", "[container_check]") {
  if (!ResolveCommand("runc", SearchPathOf(CurrentEnvironment()), "/").ok()) {
    WARN("runc is not installed; skipped");
    return;
  }
  ContainerCheckFixture f;
  const CheckResult result = CheckContainerRuntime(f.config());
  INFO(result.message);
  CHECK(result.item == "container-runtime");
  CHECK(result.passed);
  CHECK(absl::StartsWith(result.measured, "runc version "));
  CHECK(absl::StrContains(result.measured, "image dir " + f.config().image_dir + " writable"));
  CHECK(absl::StrContains(result.measured, "overlayfs present"));
  CHECK(result.message == result.measured);
  CHECK(result.threshold == "`runc --version` exits 0 within 5s, image dir writable, overlayfs");
  // The image dir was made, and the probe left nothing in it.
  CHECK(std::filesystem::is_directory(f.config().image_dir));
  CHECK(std::filesystem::is_empty(f.config().image_dir));
}

TEST_CASE("container-runtime fails naming a runc that does not work", "[container_check]") {
  ContainerCheckFixture f;
  SECTION("it exits non-zero") {
    f.config().runc = "/bin/false";
    const CheckResult result = CheckContainerRuntime(f.config());
    CHECK_FALSE(result.passed);
    // (GNU false prints its version, and that line is quoted.)
    CHECK(absl::StartsWith(result.message, "`/bin/false --version` failed: exit status 1"));
    CHECK(absl::EndsWith(result.message,
                         "(install runc, apt-get install runc, or point --runc at a working one)"));
    CHECK(absl::StrContains(result.measured, "/bin/false not working"));
  }
  SECTION("it is missing") {
    f.config().runc = "no-such-runc";
    const CheckResult result = CheckContainerRuntime(f.config());
    CHECK_FALSE(result.passed);
    CHECK(absl::StartsWith(result.message, "`no-such-runc --version` failed: not started: "));
    CHECK(absl::StrContains(result.message, "no-such-runc"));
    CHECK(absl::StrContains(result.message, "point --runc at a working one"));
  }
  SECTION("it hangs past the timeout") {
    const std::string hang = f.dir() + "/hang.sh";
    std::ofstream(hang) << "#!/bin/sh\nexec sleep 30\n";
    chmod(hang.c_str(), 0755);
    f.config().runc = hang;
    f.config().timeout = absl::Milliseconds(200);
    const CheckResult result = CheckContainerRuntime(f.config());
    CHECK_FALSE(result.passed);
    CHECK(absl::StrContains(result.message, "--version` failed: timed out after 200ms"));
  }
}

TEST_CASE("container-runtime fails naming the image dir and overlayfs", "[container_check]") {
  ContainerCheckFixture f;
  f.config().runc = "/bin/true";
  REQUIRE(CheckContainerRuntime(f.config()).passed);

  // A file where the dir's parent should be: not even root makes it.
  std::ofstream(f.dir() + "/file") << "x";
  f.config().image_dir = f.dir() + "/file/images";
  CheckResult result = CheckContainerRuntime(f.config());
  CHECK_FALSE(result.passed);
  CHECK(
      absl::StartsWith(result.message, "image dir " + f.config().image_dir + " is not writable: "));
  CHECK(absl::EndsWith(result.message,
                       "(make it writable by the agent, free its file system, or point "
                       "--image-dir elsewhere)"));

  f.config().image_dir = f.dir() + "/images";
  std::ofstream(f.config().filesystems) << "nodev\tsysfs\n\text4\n";
  result = CheckContainerRuntime(f.config());
  CHECK_FALSE(result.passed);
  CHECK(result.message ==
        "the kernel has no overlayfs (not in " + f.config().filesystems + "; modprobe overlay)");
  CHECK(absl::StrContains(result.measured, "no overlayfs"));

  // Every problem at once, each named.
  f.config().runc = "/bin/false";
  f.config().image_dir = f.dir() + "/file/images";
  result = CheckContainerRuntime(f.config());
  CHECK_FALSE(result.passed);
  CHECK(absl::StrContains(result.message, "`/bin/false --version` failed"));
  CHECK(absl::StrContains(result.message, "; image dir "));
  CHECK(absl::StrContains(result.message, "; the kernel has no overlayfs"));
}

}  // namespace
}  // namespace trainctl::agent
