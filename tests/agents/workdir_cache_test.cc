// WorkdirCache (agents/workdir_cache.h): a job's working directory fetched once, checked against
// its digest, unpacked and reused; a mismatch, a failed fetch and what a dead agent left behind.
// The fetch is a function over archives GNU tar builds here.
#include "agents/workdir_cache.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace workdir_cache_test {

using ::trainctl::agent::testing::TempDir;

// The bytes of a tar of a directory holding train.sh with `content`, and their digest.
struct Archive {
  std::string bytes;
  std::string digest;
};

Archive MakeArchive(const std::string& scratch, const std::string& content) {
  const std::string src = scratch + "/src";
  std::filesystem::remove_all(src);
  std::filesystem::create_directories(src);
  std::ofstream(src + "/train.sh") << content;
  const std::string tar = scratch + "/a.tar";
  REQUIRE(std::system(absl::StrCat("tar -C ", src, " -cf ", tar, " .").c_str()) == 0);
  std::ifstream in(tar, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  Archive a{bytes.str(), ""};
  Sha256 hash;
  hash.Update(a.bytes);
  a.digest = "sha256:" + hash.HexDigest();
  return a;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("workdir cache: fetched once per job, then reused until forgotten", "[workdir]") {
  TempDir dir;
  const Archive a = MakeArchive(dir.path(), "echo one\n");
  int fetches = 0;
  WorkdirCache cache(dir.path() + "/workdirs",
                     [&](const std::string& job, const std::string& digest,
                         const std::function<absl::Status(absl::string_view)>& sink) {
                       ++fetches;
                       CHECK(job == "j-1");
                       CHECK(digest == a.digest);
                       // In two pieces, as a stream delivers them.
                       TC_RETURN_IF_ERROR(sink(absl::string_view(a.bytes).substr(0, 700)));
                       return sink(absl::string_view(a.bytes).substr(700));
                     });
  absl::StatusOr<std::string> tree = cache.Prepare("j-1", a.digest, std::nullopt);
  REQUIRE(tree.ok());
  CHECK(*tree == dir.path() + "/workdirs/j-1");
  CHECK(Read(*tree + "/train.sh") == "echo one\n");
  CHECK(Read(*tree + ".digest") == a.digest);
  CHECK_FALSE(std::filesystem::exists(*tree + ".tar.tmp"));
  REQUIRE(cache.Prepare("j-1", a.digest, std::nullopt).ok());
  CHECK(fetches == 1);
  REQUIRE(cache.Forget("j-1").ok());
  CHECK_FALSE(std::filesystem::exists(*tree));
  CHECK_FALSE(std::filesystem::exists(*tree + ".digest"));
  REQUIRE(cache.Prepare("j-1", a.digest, std::nullopt).ok());
  CHECK(fetches == 2);
  // A job id that is not a path component is refused before anything is touched.
  CHECK(cache.Prepare("../j-1", a.digest, std::nullopt).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("workdir cache: bytes that do not match the digest are an internal error", "[workdir]") {
  TempDir dir;
  const Archive a = MakeArchive(dir.path(), "echo one\n");
  const Archive other = MakeArchive(dir.path(), "echo two\n");
  bool damaged = true;
  WorkdirCache cache(dir.path() + "/workdirs",
                     [&](const std::string&, const std::string&,
                         const std::function<absl::Status(absl::string_view)>& sink) {
                       return sink(damaged ? other.bytes : a.bytes);
                     });
  absl::StatusOr<std::string> tree = cache.Prepare("j-1", a.digest, std::nullopt);
  REQUIRE(tree.status().code() == absl::StatusCode::kInternal);
  CHECK(absl::StrContains(tree.status().message(), "hashes to " + other.digest));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/workdirs/j-1"));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/workdirs/j-1.tar.tmp"));
  // The next launch fetches again.
  damaged = false;
  tree = cache.Prepare("j-1", a.digest, std::nullopt);
  REQUIRE(tree.ok());
  CHECK(Read(*tree + "/train.sh") == "echo one\n");
}

TEST_CASE("workdir cache: a failed fetch, another digest, and an agent's leftovers", "[workdir]") {
  TempDir dir;
  const std::string root = dir.path() + "/workdirs";
  std::filesystem::create_directories(root + "/j-7.tmp-Ab12Cd/sub");
  std::ofstream(root + "/j-8.tar.tmp") << "partial";
  const Archive a = MakeArchive(dir.path(), "echo one\n");
  const Archive b = MakeArchive(dir.path(), "echo two\n");
  absl::Status fail = absl::UnavailableError("the scheduler went away");
  WorkdirCache cache(root, [&](const std::string&, const std::string& digest,
                               const std::function<absl::Status(absl::string_view)>& sink) {
    TC_RETURN_IF_ERROR(fail);
    return sink(digest == a.digest ? a.bytes : b.bytes);
  });
  CHECK(cache.Prepare("j-1", a.digest, std::nullopt).status() == fail);
  CHECK_FALSE(std::filesystem::exists(root + "/j-7.tmp-Ab12Cd"));
  CHECK_FALSE(std::filesystem::exists(root + "/j-8.tar.tmp"));
  fail = absl::OkStatus();
  REQUIRE(cache.Prepare("j-1", a.digest, std::nullopt).ok());
  // A tree of another digest (a job cannot change its workdir; a damaged marker can) is replaced.
  absl::StatusOr<std::string> tree = cache.Prepare("j-1", b.digest, std::nullopt);
  REQUIRE(tree.ok());
  CHECK(Read(*tree + "/train.sh") == "echo two\n");
}

}  // namespace workdir_cache_test
}  // namespace trainctl::agent
