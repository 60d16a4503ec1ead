#include "agents/spawn.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
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

// Runs `script` with /bin/sh as `user` (nullopt: as this process) and returns its output.
std::string RunAs(const std::optional<RunUser>& user, const std::string& script) {
  TempDir dir;
  const std::string log = dir.path() + "/out.log";
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  SpawnRequest request;
  request.argv = {"/bin/sh", "-c", script};
  request.env = {kDefaultReplicaPath};
  request.working_dir = "/";  // enterable by any user
  request.output_fd = fd;
  request.user = user;
  absl::StatusOr<pid_t> pid = SpawnProcess(request);
  close(fd);
  REQUIRE(pid.ok());
  int status = 0;
  REQUIRE(waitpid(*pid, &status, 0) == *pid);
  CHECK(WIFEXITED(status));
  return ReadFile(log);
}

TEST_CASE("a replica started for a user runs with its uid, gid and groups only", "[spawn]") {
  if (geteuid() != 0) {
    WARN("not root: cannot switch users, skipped");
    return;
  }
  absl::StatusOr<RunUser> nobody = LookUpRunUser({"nobody", "test"});
  REQUIRE(nobody.ok());
  REQUIRE(nobody->uid != 0);
  std::vector<std::string> lines =
      absl::StrSplit(RunAs(*nobody, "id -u; id -g; id -G"), '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == absl::StrCat(nobody->uid));
  CHECK(lines[1] == absl::StrCat(nobody->gid));
  // Its supplementary groups, as a set: none of root's.
  std::set<std::string> got = absl::StrSplit(lines[2], ' ', absl::SkipEmpty());
  std::set<std::string> want;
  for (gid_t g : nobody->groups) want.insert(absl::StrCat(g));
  want.insert(absl::StrCat(nobody->gid));
  CHECK(got == want);
  // Unset: the caller's own user.
  CHECK(RunAs(std::nullopt, "id -u") == "0\n");
}

TEST_CASE("a user that cannot enter the working directory fails the spawn, naming it", "[spawn]") {
  if (geteuid() != 0) {
    WARN("not root: cannot switch users, skipped");
    return;
  }
  TempDir dir;  // 0700, root's
  absl::StatusOr<RunUser> nobody = LookUpRunUser({"nobody", "test"});
  REQUIRE(nobody.ok());
  SpawnRequest request;
  request.argv = {"/bin/true"};
  request.env = {kDefaultReplicaPath};
  request.working_dir = dir.path();
  request.output_fd = 2;
  request.user = *nobody;
  absl::StatusOr<pid_t> pid = SpawnProcess(request);
  CHECK(pid.status().message() ==
        "cannot enter working directory " + dir.path() + " as user nobody: Permission denied");
}

}  // namespace
}  // namespace trainctl::agent
