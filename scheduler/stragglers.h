// Stragglers: the core's part that watches the step rates of gang jobs' ranks (StragglerWatch,
// straggler_watch.h) and tells when one falls behind. Fed with every step a RUNNING replica of a
// job with more than one replica reports; each watched job is judged every window / 30. A rank
// that becomes a straggler gets a `StragglerDetected` event naming it, its node and its GPUs,
// and a note (Replica::straggler, shown by `describe`); one that catches up a
// `StragglerRecovered` event, and its note goes. Under scheduling.stragglerAction REPORT (the
// default) that is all; under REPLACE each check hands the job's stragglers to the caller's
// `replace` (straggler_replace.h: the job stops using the node, and its replicas there move), and
// one that found no room is handed again at the next check, with `tell` false.
//
// In memory only: a restarted trainctld judges again after a window of fresh reports. A job that
// is no longer RUNNING, or runs another attempt or gang generation (a retry, a gang restart), is
// dropped with its notes; a replica that is not running (an in-place restart, a move) is not
// judged until a window of its new run's reports.
//
// Not thread-safe: the core's turn owns it.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/job_table.h"
#include "scheduler/straggler_replace.h"
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
  // What a REPLACE job's straggler `r`, at `ratio` of its gang's median step rate, is handed to;
  // `tell` false once a kNoRoom was told for it.
  using ReplaceFn = std::function<ReplaceOutcome(Job* job, Replica* r, double ratio, bool tell)>;

  // Judges the watched jobs that are due; see the file comment. `replace` empty: only reported.
  void Check(JobTable* jobs, absl::Time now, Effects* fx, const ReplaceFn& replace = nullptr);
  // How many replicas are judged stragglers now, by project (for /metrics).
  std::map<std::string, int> CountByProject(const JobTable& jobs) const;

 private:
  struct Watched {
    explicit Watched(StragglerOptions o) : watch(o) {}
    StragglerWatch watch;
    int32_t attempt = 0;
    int64_t generation = 0;  // Job::gang_generation
    absl::Time next_check = absl::InfinitePast();
    // Each straggler's rate over the gang's median when it was judged one.
    std::map<std::string, double> ratio;
    // The stragglers a REPLACE found no room for, told so already.
    std::set<std::string> told_no_room;
  };

  // Hands the job's stragglers to `replace` until one is replaced.
  static void Replace(Job* job, Watched* w, const ReplaceFn& replace);
  // Clears the notes of a dropped job's replicas.
  static void ClearNotes(Job* job, absl::Time now, Effects* fx);

  const StragglerOptions options_;
  std::map<std::string, Watched> jobs_;
};

}  // namespace trainctl::sched
