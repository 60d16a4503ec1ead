// StragglerWatch: which ranks of a gang advance slower than the others, from the training steps
// they report (ReportProgress.step, `trainctl progress --step`, the progress file). Each
// replica's rate is the steps it advanced over the trailing window divided by the window's
// length up to now, so a replica that stops reporting slows down in the eyes of the watch as it
// does in fact, and reports that come in bursts cost at most a burst's share of the window. A
// replica is a straggler when its rate stays below `ratio` times the gang's median rate over a
// whole window; it stops being one when its rate is back at or above that.
//
//   StragglerWatch watch({0.7, absl::Minutes(5)});
//   watch.Report("worker-0", 1200, now);
//   for (const StragglerWatch::Verdict& v : watch.Evaluate(now)) ...  // changes since last call
//
// Only replicas with a history that covers the whole window count (a replica that just started
// or restarted is not judged, nor is it part of the median). A step lower than the replica's
// last (a restart from a checkpoint) starts its history afresh; a report older than the last is
// ignored. Memory: at most kMaxSamples + 2 samples per replica.
//
// Pure: no clock of its own, no I/O. Not thread-safe (the core's turn owns it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace trainctl::sched {

struct StragglerOptions {
  // A rank slower than ratio × the gang's median step rate is a straggler (trainctld
  // --straggler-ratio, 0 < ratio < 1).
  double ratio = 0.7;
  // Over which rates are measured, and how long a rank must stay slow (--straggler-window).
  absl::Duration window = absl::Minutes(5);
};

class StragglerWatch {
 public:
  // Samples kept per replica: one per window / kMaxSamples, and the newest.
  static constexpr size_t kMaxSamples = 64;

  explicit StragglerWatch(StragglerOptions options) : options_(options) {}

  // `replica` reported `step` at `t`.
  void Report(const std::string& replica, int64_t step, absl::Time t);
  // The replica's run ended (a restart, a move, the gang's restart): its history goes.
  void Forget(const std::string& replica);

  // A replica that became a straggler, or stopped being one, since the last Evaluate.
  struct Verdict {
    std::string replica;
    bool straggling = false;
    // Steps per second over the window, and the gang's median.
    double rate = 0;
    double median = 0;
  };
  std::vector<Verdict> Evaluate(absl::Time now);

  // The replicas now judged stragglers.
  const std::map<std::string, bool>& straggling() const { return straggling_; }
  // The replica's rate over the window ending at `now`; nullopt when its history does not cover
  // the window.
  std::optional<double> RateOf(const std::string& replica, absl::Time now) const;
  bool empty() const { return samples_.empty(); }

 private:
  struct Sample {
    absl::Time time;
    int64_t step = 0;
  };

  StragglerOptions options_;  // not const: a watch is replaced by a fresh one (assignment)
  std::map<std::string, std::deque<Sample>> samples_;
  // Replica -> true while it is judged a straggler; absent otherwise.
  std::map<std::string, bool> straggling_;
};

}  // namespace trainctl::sched
