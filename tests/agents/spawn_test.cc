#include "agents/spawn.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::TempDir;

void MakeFile(const std::string& path, mode_t mode) {
  std::ofstream(path) << "#!/bin/sh\n";
  chmod(path.c_str(), mode);
}

TEST_CASE("commands are resolved like execvp", "[spawn]") {
  TempDir dir;
  const std::string& d = dir.path();
  mkdir((d + "/bin1").c_str(), 0755);
  mkdir((d + "/bin2").c_str(), 0755);
  mkdir((d + "/bin2/adir").c_str(), 0755);
  MakeFile(d + "/bin1/tool", 0644);  // found first, but not executable
  MakeFile(d + "/bin2/tool", 0755);
  MakeFile(d + "/bin1/plain", 0644);
  MakeFile(d + "/local.sh", 0755);
  const std::string path = d + "/bin1:" + d + "/bin2";

  CHECK(*ResolveCommand("tool", path, d) == d + "/bin2/tool");
  CHECK(ResolveCommand("missing", path, d).status().message() == "command not found: missing");
  CHECK(ResolveCommand("adir", path, d).status().message() == "command not found: adir");
  CHECK(ResolveCommand("plain", path, d).status().message() ==
        "cannot execute " + d + "/bin1/plain: Permission denied");
  CHECK(*ResolveCommand("./local.sh", path, d) == d + "/./local.sh");
  CHECK(*ResolveCommand(d + "/local.sh", "", "/") == d + "/local.sh");
  CHECK(*ResolveCommand("local.sh", ":" + path, d) == d + "/local.sh");  // empty entry: cwd
  CHECK(ResolveCommand("./nope", path, d).status().message() == "command not found: ./nope");
  CHECK(absl::IsInvalidArgument(ResolveCommand("", path, d).status()));
}

TEST_CASE("the environment overlay replaces and appends", "[spawn]") {
  std::vector<std::string> merged =
      MergeEnvironment({"PATH=/bin", "HOME=/root", "EMPTY="}, {{"HOME", "/home/x"}, {"A", "1"}});
  CHECK(merged == std::vector<std::string>{"PATH=/bin", "EMPTY=", "A=1", "HOME=/home/x"});
}

TEST_CASE("a replica inherits only the passed variables of the agent's environment", "[spawn]") {
  const std::vector<std::string> agent = {"PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=x", "LANG=C",
                                          "HOME=/root"};
  CHECK(PassedEnvironment(agent, {"PATH", "LANG", "HOME"}) ==
        std::vector<std::string>{"PATH=/usr/bin", "LANG=C", "HOME=/root"});
  // Without a PATH to pass, a standard one, so that commands still resolve.
  CHECK(PassedEnvironment(agent, {}) == std::vector<std::string>{kDefaultReplicaPath});
  CHECK(PassedEnvironment({"HOME=/root"}, {"HOME"}) ==
        std::vector<std::string>{"HOME=/root", kDefaultReplicaPath});
}

}  // namespace
}  // namespace trainctl::agent
