// Timers: the one place that knows when the core must look at the queue again by itself.
//
// Parts that wait for a time (a retry's backoff, a restart's delay, a placement timeout, a
// best-effort starvation limit) ask for a wakeup with WakeAt; the core's Tick takes the wakeup
// once it is due and runs a scheduling pass. Only the earliest wakeup is kept: the pass
// re-arms every later one it still needs.
//
// Thread-safety: none; owned by the core.
#pragma once

#include <optional>

#include "absl/time/time.h"

namespace trainctl::sched {

class Timers {
 public:
  // Keeps `t` if it is earlier than the wakeup already asked for.
  void WakeAt(absl::Time t) {
    if (!next_ || t < *next_) next_ = t;
  }
  // True when a wakeup is due at `now`; it is then cleared.
  bool TakeDue(absl::Time now) {
    if (!next_ || now < *next_) return false;
    next_.reset();
    return true;
  }
  // The earliest wakeup asked for, if any.
  std::optional<absl::Time> next() const { return next_; }

 private:
  std::optional<absl::Time> next_;
};

}  // namespace trainctl::sched
