// Stragglers: the core's part that watches the step rates of gang jobs' ranks (StragglerWatch,
// straggler_watch.h) and tells when one falls behind. Fed with every step a RUNNING replica of a
// job with more than one replica reports; each watched job is judged every window / 30. A rank
// that becomes a straggler gets a `StragglerDetected` event naming it, its node and its GPUs,
// and a note (Replica::straggler, shown by `describe`); one that catches up a
// `StragglerRecovered` event, and its note goes. Only reported: nothing is stopped or moved.
//
// In memory only: a restarted trainctld judges again after a window of fresh reports. A job that
// is no longer RUNNING, or runs another attempt or gang generation (a retry, a gang restart), is
// dropped with its notes; a replica that is not running (an in-place restart, a move) is not
// judged until a window of its new run's reports.
//
// Not thread-safe: the core's turn owns it.
#pragma once

#include <map>
#include <string>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/job_table.h"
#include "scheduler/straggler_watch.h"

namespace trainctl::sched {

// For a replica of a gang judged hung: which rank stopped advancing first, by the steps the
// running ranks last reported ("worker-2 stopped advancing first, at step 1200; the others
// reached 1250"): in a collective hang every rank stops, and the one that stopped first is the
// likely cause. "" when the ranks report no steps or all reached the same.
std::string FirstToStop(const Job& job);

class Stragglers {
 public:
  explicit Stragglers(StragglerOptions options) : options_(options) {}

  // `r`, a RUNNING replica of `job`, reported `step` at `t`.
  void Step(const Job& job, const Replica& r, int64_t step, absl::Time t);
  // Judges the watched jobs that are due; see the file comment.
  void Check(JobTable* jobs, absl::Time now, Effects* fx);
  // How many replicas are judged stragglers now, by project (for /metrics).
  std::map<std::string, int> CountByProject(const JobTable& jobs) const;

 private:
  struct Watched {
    explicit Watched(StragglerOptions o) : watch(o) {}
    StragglerWatch watch;
    int32_t attempt = 0;
    int64_t generation = 0;  // Job::gang_generation
    absl::Time next_check = absl::InfinitePast();
  };

  // Clears the notes of a dropped job's replicas.
  static void ClearNotes(Job* job, absl::Time now, Effects* fx);

  const StragglerOptions options_;
  std::map<std::string, Watched> jobs_;
};

}  // namespace trainctl::sched
