// ContainerRuntime while images are pulled (container_runtime.h): a launch whose registry hangs is
// pulling, unknown to the launcher; a stop ends it at once as stopped by request, a fence as
// fenced (reported from a thread of its own: the agent fences with its lock held); a registry
// that refuses connections is registry_unavailable, never the user's. Needs root and the
// container tools (skopeo, umoci, runc): skipped with a warning without them.
#include "agents/container_runtime.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tests/agents/oci_registry_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace container_runtime_test {

using ::trainctl::agent::testing::FreeLoopbackPort;
using ::trainctl::agent::testing::OciTestsUnavailable;
using ::trainctl::agent::testing::SilentServer;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;

// A ContainerRuntime on a temporary work dir whose registries `hanging` and `refused` are plain
// HTTP, recording every exit report and pull message.
class Runtime {
 public:
  Runtime(const std::string& hanging, const std::string& refused) {
    ImageCache::Options cache;
    cache.dir = dir_.path() + "/images";
    cache.insecure_registries = {hanging, refused};
    cache.pull_timeout = absl::Seconds(30);
    ContainerRuntime::Images images;
    images.cache = std::make_shared<ImageCache>(cache);
    images.container.runc_root = dir_.path() + "/runc";
    images.container.containers_dir = dir_.path() + "/containers";
    images.on_pull = [this](trainctl::v1::ImagePull pull) {
      absl::MutexLock lock(&mu_);
      pulls_[pull.run_id()] += 1;
    };
    ReplicaRuntime::Options options;
    options.work_dir = dir_.path();
    options.on_exited = [this](trainctl::v1::ReplicaExited e) {
      absl::MutexLock lock(&mu_);
      exited_[e.run_id()] = std::move(e);
    };
    runtime_ = std::make_unique<ContainerRuntime>(std::move(options), std::move(images));
  }

  ContainerRuntime& operator*() { return *runtime_; }
  ContainerRuntime* operator->() { return runtime_.get(); }

  std::optional<trainctl::v1::ReplicaExited> Exited(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    auto it = exited_.find(run_id);
    if (it == exited_.end()) return std::nullopt;
    return it->second;
  }
  int Pulls(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    return pulls_[run_id];
  }

 private:
  TempDir dir_;
  absl::Mutex mu_;
  std::map<std::string, trainctl::v1::ReplicaExited> exited_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> pulls_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ContainerRuntime> runtime_;
};

trainctl::v1::LaunchReplica ImageLaunch(const std::string& job, const std::string& image) {
  trainctl::v1::LaunchReplica launch;
  launch.set_job_id(job);
  launch.set_attempt(1);
  launch.set_replica_name("worker-0");
  launch.set_run_id(job + "/1/worker-0/0");
  launch.add_argv("true");
  launch.set_image(image);
  return launch;
}

TEST_CASE("ContainerRuntime: a stop or a fence ends a launch whose image is being pulled",
          "[image][container]") {
  if (const std::string why = OciTestsUnavailable(); !why.empty()) {
    WARN(why << "; skipped");
    return;
  }
  SilentServer silent;
  REQUIRE(silent.port() != 0);
  const std::string hanging = absl::StrCat("127.0.0.1:", silent.port());
  const std::string refused = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  Runtime runtime(hanging, refused);

  // Pulling: the launcher does not know it; the scheduler hears of the pull.
  const trainctl::v1::LaunchReplica stopped = ImageLaunch("j-stop", hanging + "/test/busy:1");
  runtime->Launch(stopped);
  REQUIRE(WaitUntil([&] { return runtime.Pulls(stopped.run_id()) > 0; }, absl::Seconds(10)));
  CHECK(runtime->ActiveCount() == 1);
  CHECK(runtime->KnownRuns().empty());
  CHECK(runtime->Notice(trainctl::v1::NoticeReplica()).code() != absl::StatusCode::kOk);
  trainctl::v1::NoticeReplica notice;
  notice.set_run_id(stopped.run_id());
  CHECK(absl::IsUnavailable(runtime->Notice(notice)));
  runtime->Launch(stopped);  // Known: ignored.
  REQUIRE(runtime->Stop(stopped.run_id(), 1000, "job cancelled").ok());
  std::optional<trainctl::v1::ReplicaExited> exited = runtime.Exited(stopped.run_id());
  REQUIRE(exited);
  CHECK(exited->launch_failed());
  CHECK(exited->stopped_by_request());
  CHECK_FALSE(exited->launch_error_is_user());
  CHECK(absl::StrContains(exited->launch_error(), "job cancelled"));
  CHECK(runtime->ActiveCount() == 0);

  const trainctl::v1::LaunchReplica fenced = ImageLaunch("j-fence", hanging + "/test/busy:2");
  runtime->Launch(fenced);
  REQUIRE(WaitUntil([&] { return runtime.Pulls(fenced.run_id()) > 0; }, absl::Seconds(10)));
  CHECK(runtime->Fence(0, "no word from the scheduler") == 1);
  REQUIRE(
      WaitUntil([&] { return runtime.Exited(fenced.run_id()).has_value(); }, absl::Seconds(10)));
  CHECK(runtime.Exited(fenced.run_id())->fenced());
  CHECK(runtime.Exited(fenced.run_id())->launch_failed());
  // While fenced, a launch goes to the launcher, which refuses it without a pull.
  const trainctl::v1::LaunchReplica refused_launch = ImageLaunch("j-late", hanging + "/test/x:1");
  runtime->Launch(refused_launch);
  REQUIRE(runtime.Exited(refused_launch.run_id()));
  CHECK(runtime.Exited(refused_launch.run_id())->fenced());
  CHECK(runtime.Pulls(refused_launch.run_id()) == 0);
  runtime->Unfence();

  // A registry that refuses connections: not the user's fault, retried as a stockout.
  const trainctl::v1::LaunchReplica down = ImageLaunch("j-down", refused + "/test/busy:1");
  runtime->Launch(down);
  REQUIRE(WaitUntil([&] { return runtime.Exited(down.run_id()).has_value(); }, absl::Seconds(60)));
  exited = runtime.Exited(down.run_id());
  INFO(exited->launch_error());
  CHECK(exited->launch_failed());
  CHECK(exited->registry_unavailable());
  CHECK_FALSE(exited->launch_error_is_user());
  CHECK(absl::StrContains(exited->launch_error(), refused));
  CHECK(runtime->WaitUntilIdle(absl::Now() + absl::Seconds(10)));
}

}  // namespace container_runtime_test
}  // namespace trainctl::agent
