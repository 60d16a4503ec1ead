#include "cli/retry.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace trainctl::cli {

int64_t NextBackoffMs(int64_t current_ms) {
  if (current_ms <= 0) return kInitialBackoffMs;
  return std::min(current_ms * 2, kMaxBackoffMs);
}

RetryLoop::Time RetryLoop::RealTime() {
  return {[] { return Clock::now(); },
          [](std::chrono::milliseconds pause) { std::this_thread::sleep_for(pause); }};
}

RetryLoop::RetryLoop(Time time) : time_(std::move(time)) {}

RetryLoop::RetryLoop(std::chrono::milliseconds within, AtTheEnd at_the_end, Time time)
    : time_(std::move(time)), end_(time_.now() + within), at_the_end_(at_the_end) {}

std::optional<std::chrono::milliseconds> RetryLoop::NextPause() {
  backoff_ms_ = NextBackoffMs(backoff_ms_);
  auto pause = std::chrono::milliseconds(backoff_ms_);
  if (!end_) return pause;
  const Clock::time_point now = time_.now();
  if (now + pause < *end_) return pause;
  if (at_the_end_ == AtTheEnd::kGiveUp) return std::nullopt;
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(*end_ - now));
}

bool RetryLoop::Run(const std::function<Next()>& attempt,
                    const std::function<void(std::chrono::milliseconds)>& before_pause) {
  while (true) {
    const Next next = attempt();
    if (next == kDone) return true;
    if (next == kNow) {
      if (end_ && at_the_end_ == AtTheEnd::kGiveUp && time_.now() >= *end_) return false;
      continue;
    }
    const std::optional<std::chrono::milliseconds> pause = NextPause();
    if (!pause) return false;
    if (before_pause) before_pause(*pause);
    if (pause->count() > 0) time_.sleep(*pause);
  }
}

}  // namespace trainctl::cli
