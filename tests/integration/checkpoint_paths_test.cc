// A checkpoint path through a replica's symbolic link, end to end: one job plants a link to a
// root-owned directory in its checkpoint directory; another job names a path through it. With
// agents on their real defaults (replicas under their project's uid), the second job fails as the
// user's error naming the link, and the directory behind it keeps its owner, mode and entries.
// Skipped when the tests do not run as root (agents then switch no users and give nothing away).
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// A job of team-a with checkpointDir `dir` whose one replica runs `script`.
std::string CheckpointJob(const std::string& dir, const std::string& script) {
  return absl::StrCat(R"(
displayName: ckpt
project: team-a
checkpointDir: )",
                      dir, R"(
scheduling: {maxJobRetries: 0, maxReplicaRestarts: 0}
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, ')",
                      script, R"(']
  resources: {cpu: 0.1}
)");
}

struct Entries {
  uid_t uid;
  mode_t mode;
  int count;
};

Entries EntriesOf(const std::string& dir) {
  struct stat st {};
  REQUIRE(stat(dir.c_str(), &st) == 0);
  int count = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++count;
  return {st.st_uid, st.st_mode & 07777, count};
}

TEST_CASE("a checkpoint path through a replica's symbolic link is refused on the node",
          "[integration][run_as][security]") {
  if (geteuid() != 0) {
    WARN("not root: agents switch no users, skipped");
    return;
  }
  std::string base = "/tmp/trainctl-ckpt-XXXXXX";
  REQUIRE(mkdtemp(base.data()) != nullptr);
  REQUIRE(chmod(base.c_str(), 0755) == 0);  // nobody reaches its checkpoint directories
  const std::string root = base + "/ckpt";
  const std::string target = base + "/root-owned";
  REQUIRE(std::filesystem::create_directories(target));
  REQUIRE(chmod(target.c_str(), 0755) == 0);
  {
    ClusterOptions options;
    options.agents = 1;
    options.agent.root_replicas = false;  // the agent's real defaults: a project's own uid
    options.daemon_args = {"--checkpoint-allowed-roots", root};
    MiniCluster c(options);

    // Job A plants the link where it may write: its own checkpoint directory.
    const std::string a = c.Submit(CheckpointJob(
        root + "/teama", absl::StrCat("ln -s ", target, " \"$TRAINCTL_CHECKPOINT_DIR/esc\"")));
    REQUIRE(c.WaitForEnd(a).state() == v1::JOB_STATE_SUCCEEDED);
    REQUIRE(std::filesystem::is_symlink(root + "/teama/esc"));
    // Its log: the replica's user's and root's alone, in directories no one else lists.
    const std::string logs = absl::StrCat(c.AgentWorkDir(0), "/logs/", a);
    const Entries log = EntriesOf(logs + "/attempt-1");
    CHECK(log.mode == 0700);
    CHECK(EntriesOf(logs).mode == 0700);
    struct stat st {};
    REQUIRE(stat((logs + "/attempt-1/chief-0.restart-0.log").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    // The replica's user (the project's own uid) owns both its checkpoint directory and its log.
    const uid_t replica_uid = EntriesOf(root + "/teama").uid;
    CHECK(replica_uid != 0);
    CHECK(st.st_uid == replica_uid);
    const Entries before = EntriesOf(target);

    for (const std::string& dir : {root + "/teama/esc", root + "/teama/esc/sub"}) {
      INFO(dir);
      const std::string b = c.Submit(CheckpointJob(dir, "touch \"$TRAINCTL_CHECKPOINT_DIR/x\""));
      const v1::Job ended = c.WaitForEnd(b);
      CHECK(ended.state() == v1::JOB_STATE_FAILED);
      CHECK(ended.error().reason() == "USER_ERROR");
      INFO(ended.error().message());
      CHECK(absl::StrContains(
          ended.error().message(),
          absl::StrCat("checkpointDir ", dir,
                       ": \"esc\" is a symbolic link; trainctl follows none beneath the allowed "
                       "root ",
                       root)));
      const Entries after = EntriesOf(target);
      CHECK(after.uid == before.uid);
      CHECK(after.mode == before.mode);
      CHECK(after.count == before.count);
    }
  }
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace trainctl::testing
