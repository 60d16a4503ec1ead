#include "agents/fence_timer.h"

#include <algorithm>
#include <chrono>
#include <iterator>

namespace trainctl::agent {

absl::Time MonotonicNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

void FenceTimer::Configure(absl::Duration fence_after, absl::Duration grace) {
  fence_after_ = std::max(fence_after, absl::ZeroDuration());
  grace_ = std::max(grace, absl::ZeroDuration());
}

void FenceTimer::Sent(uint64_t seq, absl::Time at) {
  unanswered_[seq] = at;
  while (unanswered_.size() > kMaxUnanswered) unanswered_.erase(unanswered_.begin());
}

bool FenceTimer::Answered(uint64_t seq) {
  auto it = unanswered_.find(seq);
  if (it == unanswered_.end()) return false;
  heard_ = std::max(heard_, it->second);
  // Older messages that were never answered can only prove less.
  unanswered_.erase(unanswered_.begin(), std::next(it));
  const bool ended = fenced_;
  fenced_ = false;
  return ended;
}

absl::Time FenceTimer::Deadline() const {
  if (!armed()) return absl::InfiniteFuture();
  return heard_ + fence_after_;
}

}  // namespace trainctl::agent
