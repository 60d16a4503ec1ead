// `trainctl node prepull` against real agents that run images: two agents pull the image of the
// test registry (image_registry.h) once each and answer with its digest and size; a job in the
// image then finds it on its node (its preflight checks the node's container runtime); a missing
// image fails on every node, naming it; `--node` asks that node alone. Needs root and the container
// tools (deploy/install-deps.sh): skipped with a warning without them.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/agents/oci_registry_fixture.h"
#include "tests/integration/image_registry.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// Long enough for a cold pull on a loaded machine; the CLI waits as long as trainctld does.
constexpr std::chrono::seconds kPrepullCliTimeout(180);

// The rows of a prepull's table by node: each row's cells after the node (DIGEST, SIZE as two
// words, ERROR as the rest).
std::map<std::string, std::string> PrepullRowsByNode(const std::string& table) {
  std::map<std::string, std::string> rows;
  for (absl::string_view line : absl::StrSplit(table, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "node-")) continue;
    const size_t space = line.find(' ');
    if (space == absl::string_view::npos) continue;
    rows[std::string(line.substr(0, space))] = std::string(line.substr(space));
  }
  return rows;
}

TEST_CASE("node prepull: every node that runs images pulls once, a job then finds it there",
          "[integration][images][prepull]") {
  if (const std::string why = ::trainctl::agent::testing::OciTestsUnavailable(); !why.empty()) {
    WARN("images: " << why << "; skipped");
    return;
  }
  ImageRegistry reg;
  REQUIRE(reg.Start());
  ClusterOptions o = ImageCluster(reg, 2);
  MiniCluster c(o);
  for (const char* node : {"node-0", "node-1"}) {
    CHECK(c.GetNode(node).labels().at("trainctl.io/images") == "true");
  }

  // Both nodes answer with the digest and a size.
  CliResult pulled = c.Cli({"node", "prepull", reg.image}, kPrepullCliTimeout);
  INFO(pulled.out << pulled.err);
  CHECK(pulled.exit_code == 0);
  CHECK(absl::StartsWith(pulled.out, "NODE"));
  std::map<std::string, std::string> rows = PrepullRowsByNode(pulled.out);
  REQUIRE(rows.size() == 2);
  std::string digest;
  for (const auto& [node, row] : rows) {
    INFO(node << ":" << row);
    const std::vector<std::string> cells = absl::StrSplit(row, ' ', absl::SkipEmpty());
    REQUIRE(cells.size() == 4);  // DIGEST, SIZE (number and unit), ERROR
    CHECK(absl::StartsWith(cells[0], "sha256:"));
    if (digest.empty()) digest = cells[0];
    CHECK(cells[0] == digest);  // The same image on both.
    CHECK(cells[1] != "-");
    CHECK((cells[2] == "B" || cells[2] == "kB" || cells[2] == "MB" || cells[2] == "GB"));
    CHECK(cells[3] == "-");
  }
  // The JSON has the bytes.
  CliResult json = c.Cli({"node", "prepull", reg.image, "-o", "json"}, kPrepullCliTimeout);
  INFO(json.out << json.err);
  CHECK(json.exit_code == 0);
  CHECK(absl::StrContains(json.out, digest));
  CHECK(absl::StrContains(json.out, "\"bytes\""));
  // One copy per agent, for two prepulls.
  for (int i = 0; i < 2; ++i) {
    const std::string log = c.AgentLog(i);
    INFO("node-" << i << ": " << log);
    CHECK(Occurrences(log, " copied in ") == 1);
    CHECK(Occurrences(log, "prepulled " + reg.image) == 2);
  }

  // A job in the image finds it on its node: no pull.
  const std::string id = c.Submit(absl::StrCat(
      "displayName: after-prepull\nworkerPools:\n- name: chief\n  replicaCount: 1\n  image: ",
      reg.image,
      "\n  command: [/bin/sh, -c, 'echo in-image']\n  resources: {cpu: 0.5, memoryMb: 64}\n"));
  v1::Job job = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED, std::chrono::seconds(120));
  REQUIRE(job.replicas_size() == 1);
  const std::string node = job.replicas(0).node();
  CliResult events = c.Cli({"events", id});
  INFO(events.out << events.err);
  CHECK(absl::StrContains(events.out, "ImagePulled"));
  CHECK(absl::StrContains(events.out, absl::StrCat("was on ", node, " already")));
  for (int i = 0; i < 2; ++i) CHECK(Occurrences(c.AgentLog(i), " copied in ") == 1);
  // Its preflight checked the node's container runtime (a launch with an image).
  const std::string node_log = c.AgentLog(node == "node-0" ? 0 : 1);
  bool runtime_checked = false;
  for (absl::string_view line : absl::StrSplit(node_log, '\n')) {
    runtime_checked = runtime_checked ||
                      (absl::StrContains(line, absl::StrCat("preflight check for ", id, "/")) &&
                       absl::StrContains(line, "item container-runtime passed: runc version"));
  }
  CHECK(runtime_checked);

  // A missing image: each node says so, naming it, and the command fails.
  const std::string missing = reg.registry->host() + "/test/nothere:1";
  CliResult failed = c.Cli({"node", "prepull", missing}, kPrepullCliTimeout);
  INFO(failed.out << failed.err);
  CHECK(failed.exit_code == 1);
  rows = PrepullRowsByNode(failed.out);
  REQUIRE(rows.size() == 2);
  for (const auto& [name, row] : rows) {
    INFO(name << ":" << row);
    CHECK(absl::StartsWith(absl::StripLeadingAsciiWhitespace(row), "-"));
    CHECK(absl::StrContains(row, "test/nothere:1"));
  }

  // --node asks that node alone.
  const int asked_before = Occurrences(c.AgentLog(0), "prepulling ");
  CliResult one = c.Cli({"node", "prepull", reg.image, "--node", "node-1"}, kPrepullCliTimeout);
  INFO(one.out << one.err);
  CHECK(one.exit_code == 0);
  rows = PrepullRowsByNode(one.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows.count("node-1") == 1);
  CHECK(absl::StrContains(rows["node-1"], digest));
  CHECK(Occurrences(c.AgentLog(0), "prepulling ") == asked_before);
  CHECK(Occurrences(c.AgentLog(1), " copied in ") == 1);
}

}  // namespace
}  // namespace trainctl::testing
