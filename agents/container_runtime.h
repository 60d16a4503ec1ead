// ContainerRuntime is the agent's ReplicaRuntime (replica_runtime.h) on a node that can run
// images: launches without an image go to the ProcessLauncher (launcher.h) it wraps, as on any
// node; a launch with one first has its image pulled into the node's cache (image_cache.h), on a
// thread of its own, and is then launched by the same ProcessLauncher, whose trainctl-shim runs
// `runc run` in the foreground (container_launch.h). So a container replica has everything a host
// replica has: its shim is its monitor, its log, log cap, status file and exit code are the same,
// and it outlives an agent restart.
//
// Pulls: the cache makes one pull of an image per node however many launches wait for it. While
// a launch's image is pulled, on_pull hears of it (an ImagePull when it starts, about every
// Images::progress_every while bytes come, and once the image is ready), and the launch is not
// known to the ProcessLauncher: a Stop ends it at once (reported as stopped by request, never
// started), Fence and StopAll likewise (fenced, node_shutdown). A failed pull is the launch's
// failure: an image that does not exist or whose credentials the registry refused is the user's
// (launch_error_is_user), a registry that cannot be reached or a pull that timed out is
// registry_unavailable, anything else (an unpack, the disk) is the node's.
//
// Pins: each launched run pins its image in the cache until its end is reported, so that no
// eviction takes an image a live replica uses. An adopting runtime (after an agent restart) pins
// the image of every container run it adopts again, from the digest recorded with the container.
//
// Thread-safe, like every ReplicaRuntime. Destroying the runtime cancels the pulls under way
// (ImageCache::CancelPulls: the cache is the node's, and the agent is ending) and waits for their
// threads, which then report nothing and launch nothing.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/container_launch.h"
#include "agents/image_cache.h"
#include "agents/launcher.h"
#include "agents/replica_runtime.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

// Whether this host can run images: the agent runs as root, runc, skopeo and umoci are found, the
// kernel has overlayfs. FAILED_PRECONDITION saying what is missing.
absl::Status CheckImageSupport(const ContainerSettings& settings, const ImageCache::Options& cache);

class ContainerRuntime final : public ReplicaRuntime {
 public:
  struct Images {
    ContainerSettings container;
    std::shared_ptr<ImageCache> cache;
    // How the pulls of launches go; optional. Called on pull threads.
    std::function<void(trainctl::v1::ImagePull)> on_pull;
    absl::Duration progress_every = absl::Seconds(2);
  };

  ContainerRuntime(Options options, Images images);
  ContainerRuntime(const ContainerRuntime&) = delete;
  ContainerRuntime& operator=(const ContainerRuntime&) = delete;
  ~ContainerRuntime() override;

  std::vector<std::string> AdoptRecordedRuns(const std::set<std::string>& reported) override;
  void Launch(const trainctl::v1::LaunchReplica& launch) override;
  absl::Status Stop(const std::string& run_id, int64_t grace_ms,
                    const std::string& reason) override;
  void StopAll(int64_t grace_ms, const std::string& reason) override;
  absl::Status Notice(const trainctl::v1::NoticeReplica& notice) override;
  int Fence(int64_t grace_ms, const std::string& reason) override;
  void Unfence() override;
  void RefuseFencedLaunch(const std::string& run_id, const std::string& reason) override;
  void RejectNewLaunches(const std::string& reason) override;
  void ForgetRun(const std::string& run_id) const override;
  trainctl::v1::LogData ReadLog(const std::string& run_id, int64_t offset,
                                int64_t max_bytes) const override;
  // False while the run's image is pulled or its launch is handed to the launcher; then the
  // launcher's answer.
  bool LogFinal(const std::string& run_id) const override;
  pid_t ProcessGroupOf(const std::string& run_id) const override {
    return inner_->ProcessGroupOf(run_id);
  }
  std::vector<trainctl::v1::KnownRun> KnownRuns() const override;
  int ActiveCount() const override;
  bool WaitUntilIdle(absl::Time deadline) const override;

 private:
  // What the runtime and its pull threads share; a pull thread may outlive the runtime. No
  // callback and no call into the launcher is made with `mu` held: the agent calls the runtime
  // with its own lock held (Fence), and the callbacks take that lock.
  struct Shared {
    absl::Mutex mu;
    // Set by the destructor: pull threads then report nothing and launch nothing.
    bool closed ABSL_GUARDED_BY(mu) = false;
    // Pull threads calling back or into the launcher now; the destructor waits for none.
    int busy ABSL_GUARDED_BY(mu) = 0;
    // Pull threads alive; the destructor cancels their pulls and waits for them to end.
    int threads ABSL_GUARDED_BY(mu) = 0;
    // Launches whose image is being pulled.
    std::map<std::string, trainctl::v1::LaunchReplica> pulling ABSL_GUARDED_BY(mu);
    // Launches handed to the launcher, whose Launch() has not returned yet; a stop that comes
    // meanwhile waits here (grace, reason) and is passed on once it returned.
    std::map<std::string, std::optional<std::pair<int64_t, std::string>>> handing_over
        ABSL_GUARDED_BY(mu);
    // The image each launched run pins.
    std::map<std::string, Image> images ABSL_GUARDED_BY(mu);

    // Whether a pull thread may call back or into the launcher (then Leave() after); false once
    // the runtime is being destroyed.
    bool Enter() ABSL_LOCKS_EXCLUDED(mu);
    void Leave() ABSL_LOCKS_EXCLUDED(mu);
  };

  // The pull of `launch`'s image, then its launch; on a thread of its own.
  static void PullThenLaunch(std::shared_ptr<Shared> shared, std::shared_ptr<ImageCache> cache,
                             Images images, ExitedCallback on_exited, ReplicaRuntime* inner,
                             trainctl::v1::LaunchReplica launch);
  // Ends every pulling launch with the report `mark` shapes, reported from a thread of its own;
  // returns how many.
  int EndPulling(const std::function<void(trainctl::v1::ReplicaExited*)>& mark);

  const Images images_;
  const ExitedCallback on_exited_;
  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  // Launches go straight to it while fenced or rejecting: it refuses them as it should.
  std::atomic<bool> fenced_{false};
  std::atomic<bool> rejecting_{false};
  std::unique_ptr<ProcessLauncher> inner_;
};

}  // namespace trainctl::agent
