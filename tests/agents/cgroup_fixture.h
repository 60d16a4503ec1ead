// Fixtures for tests against the host's real cgroups: RealCgroups detects them for a node name of
// this test process and removes the agent's directories at the end; CgroupLauncher is a
// ProcessLauncher over a temp work dir that uses them. A test that needs controllers the host
// does not give (no cgroups, not root, v2-only CI, ...) skips with a WARN naming what is missing.
//
//   RealCgroups cgroups;
//   std::shared_ptr<const RunCgroups> usable = cgroups.With({CgroupController::kCpu});
//   if (usable == nullptr) return;  // skipped
//   CgroupLauncher f(usable);
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "agents/launcher.h"
#include "agents/run_cgroup.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent::testing {

class RealCgroups {
 public:
  explicit RealCgroups(RunCgroups::Options options = RunCgroups::Options())
      : cgroups_(RunCgroups::Detect(absl::StrCat("test-", getpid()), options)) {}
  RealCgroups(const RealCgroups&) = delete;
  RealCgroups& operator=(const RealCgroups&) = delete;
  ~RealCgroups() {
    std::error_code ignored;
    for (const std::string& dir : cgroups_->AgentDirs()) std::filesystem::remove(dir, ignored);
  }

  // The cgroups when every one of `needed` is usable; else null, after a WARN saying why.
  std::shared_ptr<const RunCgroups> With(std::vector<CgroupController> needed) const {
    for (CgroupController controller : needed) {
      if (!cgroups_->Has(controller)) {
        WARN("skipped: no usable " << ControllerName(controller)
                                   << " cgroup here: " << cgroups_->UnavailableReason(controller));
        SUCCEED("skipped");
        return nullptr;
      }
    }
    return cgroups_;
  }

 private:
  std::shared_ptr<const RunCgroups> cgroups_;
};

// A launcher over a temp work dir with `cgroups` and an RSS watch too slow to ever act, so that
// only the kernel enforces limits. `tweak` may change its options.
class CgroupLauncher {
 public:
  explicit CgroupLauncher(std::shared_ptr<const RunCgroups> cgroups,
                          const std::function<void(ProcessLauncher::Options&)>& tweak = {}) {
    ProcessLauncher::Options options;
    options.work_dir = dir_.path();
    options.run_as = RootReplicas();
    options.memory_check_interval = absl::Hours(1);
    options.cgroups = std::move(cgroups);
    options.on_exited = [this](trainctl::v1::ReplicaExited exited) {
      absl::MutexLock lock(&mu_);
      exited_[exited.run_id()] = std::move(exited);
    };
    if (tweak) tweak(options);
    options_ = options;
    launcher_ = std::make_unique<ProcessLauncher>(std::move(options));
  }
  // Replicas outlive their launcher: stop what is left.
  ~CgroupLauncher() {
    launcher_->StopAll(0, "test over");
    launcher_->WaitUntilIdle(absl::Now() + absl::Seconds(10));
  }

  // What an agent restart does: a new launcher on the same work dir, which has to adopt the
  // runs of the old one (AdoptRecordedRuns).
  void Restart() {
    launcher_.reset();
    launcher_ = std::make_unique<ProcessLauncher>(options_);
  }

  ProcessLauncher& launcher() { return *launcher_; }
  const std::string& work_dir() const { return dir_.path(); }

  // A launch of replica `replica` of job "j-test", attempt 1, with `resources`.
  trainctl::v1::LaunchReplica Launch(const std::string& replica,
                                     const trainctl::v1::Resources& resources,
                                     std::vector<std::string> argv) {
    trainctl::v1::LaunchReplica launch;
    launch.set_job_id("j-test");
    launch.set_attempt(1);
    launch.set_replica_name(replica);
    launch.set_run_id(absl::StrCat("j-test/1/", replica, "/0"));
    for (std::string& arg : argv) launch.add_argv(std::move(arg));
    launch.set_checkpoint_dir(dir_.path() + "/ckpt");
    *launch.mutable_resources() = resources;
    return launch;
  }

  // Launches `launch` and waits until its log says `ready` and the launcher knows its pid (the
  // shim's ready line may be read after the replica printed); false when not in time.
  bool LaunchAndWait(const trainctl::v1::LaunchReplica& launch, const std::string& ready) {
    launcher_->Launch(launch);
    return WaitUntil([&] {
      return absl::StrContains(ReadFile(LogPath(launch.replica_name())), ready) &&
             PidOf(launch.run_id()) > 0;
    });
  }

  std::optional<trainctl::v1::ReplicaExited> WaitExit(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exited_.count(run_id) > 0; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(30))) return std::nullopt;
    return exited_.at(run_id);
  }

  // The pid of a running run; 0 when it does not run.
  int64_t PidOf(const std::string& run_id) const {
    for (const trainctl::v1::KnownRun& known : launcher_->KnownRuns()) {
      if (known.run_id() == run_id) return known.pid();
    }
    return 0;
  }

  std::string LogPath(const std::string& replica) const {
    return absl::StrCat(dir_.path(), "/logs/j-test/attempt-1/", replica, ".restart-0.log");
  }

 private:
  TempDir dir_;
  absl::Mutex mu_;
  std::map<std::string, trainctl::v1::ReplicaExited> exited_ ABSL_GUARDED_BY(mu_);
  ProcessLauncher::Options options_;
  std::unique_ptr<ProcessLauncher> launcher_;
};

// A Resources message.
inline trainctl::v1::Resources Asks(double cpu, int64_t memory_mb = 0) {
  trainctl::v1::Resources resources;
  resources.set_cpu(cpu);
  resources.set_memory_mb(memory_mb);
  return resources;
}

}  // namespace trainctl::agent::testing
