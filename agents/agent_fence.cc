// Agent: the fence (agent.h, "Fencing"). One thread waits for the fence deadline the
// scheduler's answers keep moving (fence_timer.h) and stops every replica when it passes.
#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

// While fenced, how often runs launched meanwhile are looked for (a launch is rare then: the
// scheduler does not place work on a node it cannot hear).
constexpr absl::Duration kFencedRecheck = absl::Seconds(1);

}  // namespace

void Agent::Answered(uint64_t seq) {
  const bool was_fenced = fence_.Answered(seq);
  // Launches start again only on an answer to a message sent within the fence time: an old
  // answer delivered late proves nothing about now.
  if (fence_.Due(MonotonicNow())) return;
  runtime_->Unfence();
  if (was_fenced) {
    spdlog::info(
        "in touch with the scheduler again after fencing; replicas start again when it "
        "sends them");
  }
}

std::string Agent::FenceReason(absl::Time now) const {
  return absl::StrCat(
      "fenced: no word from the scheduler for ",
      absl::FormatDuration(absl::Trunc(fence_.Silence(now), absl::Milliseconds(100))));
}

void Agent::FenceLoop() {
  absl::MutexLock lock(&mu_);
  while (!worker_exit_) {
    const absl::Time deadline = fence_.Deadline();
    const absl::Time now = MonotonicNow();
    // Wakes for the destructor, and for an answer that moves the deadline.
    auto changed = [this, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return worker_exit_ || fence_.Deadline() != deadline;
    };
    if (now < deadline) {
      mu_.AwaitWithTimeout(absl::Condition(&changed), deadline - now);
      continue;
    }
    const std::string why = FenceReason(now);
    // Lock order: mu_ before the runtime's lock.
    const int stopped = runtime_->Fence(absl::ToInt64Milliseconds(fence_.grace()), why);
    if (stopped > 0 || !fence_.fenced()) {
      spdlog::warn(
          "{}; stopped {} {} (SIGTERM, SIGKILL after {}) so that none runs twice: the "
          "scheduler moves them to other nodes after its lost timeout (fence after {})",
          why, stopped, stopped == 1 ? "replica" : "replicas", absl::FormatDuration(fence_.grace()),
          absl::FormatDuration(fence_.fence_after()));
    }
    fence_.MarkFenced();
    mu_.AwaitWithTimeout(absl::Condition(&changed), kFencedRecheck);
  }
}

}  // namespace trainctl::agent
