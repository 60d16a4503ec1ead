// A registry on loopback holding one small image, for the integration tests of replicas in
// images: Debian's docker-registry and a busybox image built offline with buildah
// (tests/agents/oci_registry_fixture.h), whose /etc/os-release names it and whose environment
// sets IMAGE_VAR=from-image.
//
//   if (!OciTestsUnavailable().empty()) { WARN(...); return; }
//   ImageRegistry reg;
//   REQUIRE(reg.Start());
//   ... "--insecure-registry", reg.registry->host() ... image: reg.image ...
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "tests/agents/oci_registry_fixture.h"
#include "tests/agents/test_util.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {

struct ImageRegistry {
  ::trainctl::agent::testing::TempDir dir;
  std::unique_ptr<::trainctl::agent::testing::TestRegistry> registry;
  // "127.0.0.1:PORT/test/busy:1".
  std::string image;

  // Starts the registry and pushes the image; false (with the reason as an INFO) on failure.
  bool Start() {
    using ::trainctl::agent::testing::ImageBuilder;
    using ::trainctl::agent::testing::ImageSpec;
    using ::trainctl::agent::testing::TestRegistry;
    absl::StatusOr<std::unique_ptr<TestRegistry>> started = TestRegistry::Start(dir.path());
    INFO((started.ok() ? "" : started.status().ToString()));
    if (!started.ok()) return false;
    registry = *std::move(started);
    ImageBuilder builder(dir.path() + "/buildah");
    ImageSpec spec;
    spec.files["/etc/os-release"] = "ID=trainctl-test\nPRETTY_NAME=\"trainctl test image\"\n";
    spec.env = {"IMAGE_VAR=from-image"};
    image = registry->host() + "/test/busy:1";
    absl::StatusOr<std::string> digest = builder.BuildAndPush(spec, image);
    INFO((digest.ok() ? "" : digest.status().ToString()));
    return digest.ok();
  }
};

// A cluster of `agents` agents that pull from `reg` over plain HTTP (--insecure-registry).
inline ClusterOptions ImageCluster(const ImageRegistry& reg, int agents) {
  ClusterOptions o;
  o.agents = agents;
  o.agent.extra_args = {"--insecure-registry", reg.registry->host()};
  return o;
}

// How many times `what` occurs in `text` (an agent's log lines, e.g. " copied in ": one per pull).
inline int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace trainctl::testing
