// FenceTimer: the agent's fence deadline counts from the send time of the newest message the
// scheduler answered, whichever way the network drops messages.
#include "agents/fence_timer.h"

#include <catch2/catch.hpp>

namespace trainctl::agent {
namespace {

const absl::Time kT0 = absl::UnixEpoch() + absl::Hours(1);

absl::Time At(int64_t ms) { return kT0 + absl::Milliseconds(ms); }

// Registered at t0 with a 12s fence and a 3s grace, answered.
FenceTimer Armed() {
  FenceTimer fence;
  fence.Sent(1, At(0));
  fence.Configure(absl::Seconds(12), absl::Seconds(3));
  fence.Answered(1);
  return fence;
}

TEST_CASE("FenceTimer: not armed before a RegisterAck with a fence time, nor with a zero one") {
  FenceTimer fence;
  CHECK(!fence.armed());
  CHECK(fence.Deadline() == absl::InfiniteFuture());
  fence.Sent(1, At(0));
  fence.Configure(absl::ZeroDuration(), absl::ZeroDuration());  // a scheduler that does not fence
  fence.Answered(1);
  CHECK(!fence.armed());
  CHECK(!fence.Due(At(3'600'000)));
}

TEST_CASE("FenceTimer: counts from when the answered message was sent, not when it was answered") {
  FenceTimer fence = Armed();
  CHECK(fence.Deadline() == At(12'000));
  fence.Sent(2, At(2'000));
  fence.Sent(3, At(4'000));
  // The answer to the heartbeat sent at 2s arrives late, at 11s.
  fence.Answered(2);
  CHECK(fence.Deadline() == At(14'000));
  CHECK(!fence.Due(At(13'999)));
  CHECK(fence.Due(At(14'000)));
  CHECK(fence.Silence(At(14'000)) == absl::Seconds(12));
  fence.Answered(3);
  CHECK(fence.Deadline() == At(16'000));
}

TEST_CASE("FenceTimer: heartbeats that get out but are never answered do not move the deadline") {
  // A one-way cut: the agent's messages are sent, nothing comes back.
  FenceTimer fence = Armed();
  for (int i = 1; i <= 10; ++i) fence.Sent(1 + i, At(i * 1'000));
  CHECK(fence.Deadline() == At(12'000));
  CHECK(fence.Due(At(12'000)));
}

TEST_CASE("FenceTimer: an answer to an older message after a newer one moves nothing back") {
  FenceTimer fence = Armed();
  fence.Sent(2, At(2'000));
  fence.Sent(3, At(4'000));
  fence.Answered(3);
  fence.Answered(2);  // forgotten once 3 was answered
  CHECK(fence.Deadline() == At(16'000));
  fence.Answered(99);  // never sent
  CHECK(fence.Deadline() == At(16'000));
}

TEST_CASE("FenceTimer: an answer after a fence ends it, once") {
  FenceTimer fence = Armed();
  fence.Sent(2, At(1'000));
  REQUIRE(fence.Due(At(12'000)));
  fence.MarkFenced();
  CHECK(fence.fenced());
  CHECK(fence.Answered(2));  // in touch again
  CHECK(!fence.fenced());
  CHECK(!fence.Due(At(12'000)));
  fence.Sent(3, At(13'000));
  CHECK(!fence.Answered(3));
}

TEST_CASE("FenceTimer: only the newest unanswered messages are remembered") {
  FenceTimer fence = Armed();
  const uint64_t n = FenceTimer::kMaxUnanswered + 10;
  for (uint64_t i = 0; i < n; ++i) fence.Sent(2 + i, At(1 + static_cast<int64_t>(i)));
  fence.Answered(2);  // forgotten: proves nothing
  CHECK(fence.Deadline() == At(12'000));
  fence.Answered(1 + n);  // the newest
  CHECK(fence.Deadline() == At(12'000 + static_cast<int64_t>(n)));
}

}  // namespace
}  // namespace trainctl::agent
