// AckDeadline and EpochFilter (leader_guard.h).
#include "agents/leader_guard.h"

#include <algorithm>

namespace trainctl::agent {

void AckDeadline::Restart(absl::Duration interval) {
  unanswered_.clear();
  interval_ = interval;
}

void AckDeadline::Sent(uint64_t seq, absl::Time at) {
  if (timeout() == absl::ZeroDuration()) return;  // off: nothing to remember
  unanswered_.emplace(seq, at);
}

void AckDeadline::Answered(uint64_t seq) {
  unanswered_.erase(unanswered_.begin(), unanswered_.upper_bound(seq));
}

absl::Duration AckDeadline::timeout() const {
  if (configured_) return *configured_;
  return std::max(kDefaultIntervals * interval_, kMinDefault);
}

absl::Time AckDeadline::Deadline() const {
  const absl::Duration t = timeout();
  if (t == absl::ZeroDuration() || unanswered_.empty()) return absl::InfiniteFuture();
  return unanswered_.begin()->second + t;
}

absl::Duration AckDeadline::Waited(absl::Time now) const {
  if (unanswered_.empty()) return absl::ZeroDuration();
  return now - unanswered_.begin()->second;
}

bool EpochFilter::Accept(int64_t epoch) {
  if (epoch < highest_) return false;
  highest_ = epoch;
  return true;
}

}  // namespace trainctl::agent
