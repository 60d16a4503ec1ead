// Directories opened beneath a root without following symbolic links (agents/safe_path.h), and
// the run files the launcher makes with it (PrepareRunFiles), against links a replica plants.
#include "agents/safe_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "agents/run_files.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ModeOf;
using ::trainctl::agent::testing::TempDir;

constexpr uid_t kNobody = 65534;

struct DirState {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0;
  int entries = 0;
};

DirState StateOf(const std::string& dir) {
  struct stat st {};
  REQUIRE(stat(dir.c_str(), &st) == 0);
  DirState state{st.st_uid, st.st_gid, st.st_mode & 07777, 0};
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++state.entries;
  }
  return state;
}

void CheckUntouched(const std::string& dir, const DirState& before) {
  const DirState after = StateOf(dir);
  CHECK(after.uid == before.uid);
  CHECK(after.gid == before.gid);
  CHECK(after.mode == before.mode);
  CHECK(after.entries == before.entries);
}

uid_t OwnerOf(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_uid;
}

// A job's checkpoint root with teama/ (job A's directory) holding esc -> `target`, planted as A's
// user when we are root.
struct PlantedChain {
  explicit PlantedChain(const TempDir& dir)
      : root(dir.path() + "/ckpt"), target(dir.path() + "/etc") {
    REQUIRE(std::filesystem::create_directories(root + "/teama"));
    REQUIRE(std::filesystem::create_directories(target));
    REQUIRE(chmod(target.c_str(), 0755) == 0);
    std::filesystem::create_directory_symlink(target, root + "/teama/esc");
    if (geteuid() == 0) {
      REQUIRE(chown((root + "/teama").c_str(), kNobody, kNobody) == 0);
      REQUIRE(lchown((root + "/teama/esc").c_str(), kNobody, kNobody) == 0);
    }
    before = StateOf(target);
  }
  std::string root;
  std::string target;
  DirState before;
};

TEST_CASE("OpenDirBeneath creates and opens directories beneath a root", "[safe_path]") {
  TempDir dir;
  BeneathOptions options;
  options.create_mode = 0700;
  absl::StatusOr<UniqueFd> opened = OpenDirBeneath(dir.path() + "/root", "a//b/./c", options);
  REQUIRE(opened.ok());
  CHECK(opened->get() >= 0);
  CHECK(std::filesystem::is_directory(dir.path() + "/root/a/b/c"));
  CHECK(ModeOf(dir.path() + "/root/a/b") == 0700);
  // Again, with everything there (openat2's path where the kernel has it).
  CHECK(OpenDirBeneath(dir.path() + "/root", "a/b/c", options).ok());
  options.create = false;
  CHECK(absl::IsInternal(OpenDirBeneath(dir.path() + "/root", "a/missing", options).status()));
  CHECK(absl::IsInternal(OpenDirBeneath(dir.path() + "/root", "a/../b", options).status()));
}

TEST_CASE("the root itself may be a symbolic link", "[safe_path]") {
  TempDir dir;
  REQUIRE(std::filesystem::create_directories(dir.path() + "/nfs/ckpt"));
  std::filesystem::create_directory_symlink(dir.path() + "/nfs/ckpt", dir.path() + "/ckpt");
  REQUIRE(OpenDirBeneath(dir.path() + "/ckpt", "run-1", {}).ok());
  CHECK(std::filesystem::is_directory(dir.path() + "/nfs/ckpt/run-1"));
}

TEST_CASE("a symbolic link beneath the root is refused, naming it", "[safe_path]") {
  TempDir dir;
  PlantedChain chain(dir);
  BeneathOptions options;
  options.root_label = "the allowed root";
  for (const char* relative : {"teama/esc", "teama/esc/sub", "teama/esc/sub/deeper"}) {
    INFO(relative);
    absl::Status status = OpenDirBeneath(chain.root, relative, options).status();
    CHECK(absl::IsInvalidArgument(status));
    CHECK(status.message() ==
          "\"esc\" is a symbolic link; trainctl follows none beneath the "
          "allowed root " +
              chain.root);
    CheckUntouched(chain.target, chain.before);
  }
  // A file where a directory should be is the user's error too.
  REQUIRE(close(open((chain.root + "/teama/file").c_str(), O_CREAT | O_WRONLY, 0644)) == 0);
  absl::Status file = OpenDirBeneath(chain.root, "teama/file/sub", options).status();
  CHECK(absl::IsInvalidArgument(file));
  CHECK(file.message() == "\"file\" is not a directory");
}

TEST_CASE("with no root, only links owned by root or the agent's user are followed",
          "[safe_path]") {
  TempDir dir;
  PlantedChain chain(dir);
  // An operator's link (ours) on the way is followed.
  std::filesystem::create_directory_symlink(chain.root, dir.path() + "/operator-link");
  REQUIRE(OpenOwnedByRoot(dir.path() + "/operator-link/teama/run", {}).ok());
  CHECK(std::filesystem::is_directory(chain.root + "/teama/run"));
  if (geteuid() != 0) {
    WARN("not root: the replica's link cannot be given to another user");
    return;
  }
  for (const char* tail : {"/teama/esc", "/teama/esc/sub"}) {
    absl::Status status = OpenOwnedByRoot(chain.root + tail, {}).status();
    CHECK(absl::IsInvalidArgument(status));
    CHECK(status.message() ==
          "\"esc\" is a symbolic link owned by uid 65534; with no allowed root from trainctld "
          "(older than this agent), trainctl follows only links owned by root");
    CheckUntouched(chain.target, chain.before);
  }
}

TEST_CASE("PathBeneath takes a path apart lexically", "[safe_path]") {
  CHECK(PathBeneath("/ckpt/teama/", "/ckpt//teama/run/./x").value() == "run/x");
  CHECK(PathBeneath("/", "/ckpt/run").value() == "ckpt/run");
  CHECK(absl::IsInternal(PathBeneath("/ckpt", "/ckpt").status()));
  CHECK(absl::IsInternal(PathBeneath("/ckpt", "/ckpt2/run").status()));
  CHECK(absl::IsInternal(PathBeneath("/ckpt", "/ckpt/../etc").status()));
}

RunFilesRequest RequestFor(const std::string& work_dir, const std::string& checkpoint_dir,
                           const std::string& checkpoint_root) {
  return {work_dir, {"j-b", 1, "worker-0", 0}, checkpoint_dir, checkpoint_root};
}

TEST_CASE("PrepareRunFiles refuses a checkpoint path through a replica's link", "[run_files]") {
  if (geteuid() != 0) {
    WARN("not root: PrepareRunFiles gives nothing away");
    return;
  }
  TempDir dir;
  PlantedChain chain(dir);
  const RunUser nobody{"nobody", kNobody, kNobody, {kNobody}, "/"};
  for (const std::string& root : {chain.root, std::string()}) {
    for (const char* tail : {"/teama/esc", "/teama/esc/sub"}) {
      const std::string checkpoint_dir = chain.root + tail;
      INFO(checkpoint_dir << " with root \"" << root << "\"");
      absl::StatusOr<int> log =
          PrepareRunFiles(RequestFor(dir.path() + "/work", checkpoint_dir, root), &nobody);
      REQUIRE_FALSE(log.ok());
      CHECK(absl::IsInvalidArgument(log.status()));  // the user's error
      const std::string message(log.status().message());
      CHECK(message.rfind("checkpointDir " + checkpoint_dir + ": \"esc\" is a symbolic link", 0) ==
            0);
      if (!root.empty()) {
        CHECK(message == "checkpointDir " + checkpoint_dir +
                             ": \"esc\" is a symbolic link; trainctl follows none beneath the "
                             "allowed root " +
                             chain.root);
      }
      CheckUntouched(chain.target, chain.before);
    }
  }
  // A directory beneath the root is made and given to the replica's user.
  absl::StatusOr<int> log = PrepareRunFiles(
      RequestFor(dir.path() + "/work", chain.root + "/teama/run/step", chain.root), &nobody);
  REQUIRE(log.ok());
  close(*log);
  CHECK(OwnerOf(chain.root + "/teama/run/step") == kNobody);
  CHECK(OwnerOf(chain.root + "/teama/run") == 0);
}

TEST_CASE("run files get their modes whatever the umask", "[run_files]") {
  TempDir dir;
  const std::string work = dir.path() + "/work";
  const RunFilesRequest request = RequestFor(work, "", "");
  const std::string log_path = RunLogPath(work, request.run);
  REQUIRE(std::filesystem::create_directories(work + "/logs/j-b/attempt-1"));
  REQUIRE(chmod((work + "/logs/j-b").c_str(), 0755) == 0);
  // A log an older agent left readable by everyone.
  REQUIRE(close(open(log_path.c_str(), O_CREAT | O_WRONLY, 0644)) == 0);
  REQUIRE(chmod(log_path.c_str(), 0644) == 0);
  const mode_t old_umask = umask(022);
  absl::StatusOr<int> log = PrepareRunFiles(request);
  umask(old_umask);
  REQUIRE(log.ok());
  close(*log);
  CHECK(ModeOf(log_path) == 0600);
  CHECK(ModeOf(work + "/logs") == 0700);
  CHECK(ModeOf(work + "/logs/j-b") == 0700);
  CHECK(ModeOf(work + "/logs/j-b/attempt-1") == 0700);
  CHECK(ModeOf(work + "/jobs/j-b") == 0711);
  CHECK(ModeOf(RunWorkingDir(work, request.run)) == 0700);
  // A fresh log too.
  const RunFilesRequest next = {work, {"j-b", 2, "worker-0", 0}, "", ""};
  umask(022);
  log = PrepareRunFiles(next);
  umask(old_umask);
  REQUIRE(log.ok());
  close(*log);
  CHECK(ModeOf(RunLogPath(work, next.run)) == 0600);
}

TEST_CASE("a link in the agent's work dir is not followed, and is the host's error",
          "[run_files]") {
  TempDir dir;
  const std::string work = dir.path() + "/work";
  const std::string target = dir.path() + "/elsewhere";
  REQUIRE(std::filesystem::create_directories(work + "/logs"));
  REQUIRE(std::filesystem::create_directories(target));
  std::filesystem::create_directory_symlink(target, work + "/logs/j-b");
  const DirState before = StateOf(target);
  absl::StatusOr<int> log = PrepareRunFiles(RequestFor(work, "", ""));
  REQUIRE_FALSE(log.ok());
  CHECK(absl::IsInternal(log.status()));
  CHECK(std::string(log.status().message()).find("\"j-b\" is a symbolic link") !=
        std::string::npos);
  CheckUntouched(target, before);
}

}  // namespace
}  // namespace trainctl::agent
