// ImagePulls: how the pull of a launch's image goes, as its agent reports it
// (AgentMessage.image_pull: when the pull starts, every few seconds while bytes come, and once
// when the image is ready). Best effort: nothing is decided on it, and a lost report changes
// nothing but what the replica's line says.
//
// For a replica whose run is launching (STARTING) it keeps:
//   - the replica's message, what `trainctl get` shows per replica:
//       "pulling image registry:5000/team/train:1.4 (12.3 MB so far)"
//       "image registry:5000/team/train:1.4 ready (sha256:0a1b2c3d4e5f…, cached)"
//   - one ImagePulling event when the run's first report comes, and one ImagePulled event (the
//     digest and the bytes) when the image is ready; never one per progress report;
//   - the launch's liveness: launchTimeout counts from the latest report, so that a large image
//     whose bytes keep coming is not taken for a launch that never happened.
// Reports of unknown runs, stale runs and runs that are not launching are ignored by the caller
// (Core::ImagePull) or here.
//
// Thread-safety: none; owned by the core.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/job_table.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::sched {

class ImagePulls {
 public:
  // How often progress reports of one run may write its job's row; memory always has the
  // latest.
  static constexpr absl::Duration kWriteInterval = absl::Seconds(5);

  // `jobs` (not owned) must outlive it.
  explicit ImagePulls(JobTable* jobs) : jobs_(jobs) {}

  // Applies `pull`, a report about the current run of `job`'s replica `r` on its own node.
  // Ignored unless `r` is STARTING.
  void Report(Job* job, Replica* r, const v1::ImagePull& pull, absl::Time now, Effects* fx);

  // The runs whose pull it follows (for tests).
  size_t size() const { return runs_.size(); }

 private:
  struct Pull {
    bool done = false;
    absl::Time written;
  };
  // Forgets the runs that are no longer launching.
  void Prune();

  JobTable* const jobs_;
  // By run id.
  std::map<std::string, Pull> runs_;
};

// "sha256:0a1b2c3d4e5f…" of "sha256:0a1b2c3d4e5f6789…": the algorithm and 12 hex digits.
std::string ShortDigest(const std::string& digest);

}  // namespace trainctl::sched
