// FenceTimer: when an agent must fence, that is stop its replicas because the scheduler may
// have given them up (docs/operators/host-health.md, "Network partitions and fencing: no replica
// runs twice"; scheduler/node_health.h, "Fencing").
//
// The scheduler answers a Register with a RegisterAck and every Heartbeat with a HeartbeatAck
// carrying the heartbeat's seq. An answer proves the scheduler heard the agent no earlier than
// when the agent sent that message, so the timer counts from the send time of the newest
// message answered, not from when the answer arrived: a slow answer only brings the fence
// closer, never later. Messages that were not answered prove nothing, whichever way the network
// dropped them. The scheduler's lost timeout counts from when it heard the agent, which is no
// earlier: fencing at fence_after (its lost timeout minus a margin) is ahead of it.
//
//   FenceTimer fence;
//   fence.Sent(1, t0);                                  // the Register
//   fence.Configure(absl::Seconds(12), absl::Seconds(3));
//   fence.Answered(1);                                  // its RegisterAck: armed
//   fence.Deadline();                                   // t0 + 12s
//   if (fence.Due(now)) { ... stop every replica ...; fence.MarkFenced(); }
//
// Times are of a monotonic clock (MonotonicNow), so a step of the wall clock neither fences
// early nor late. Thread-safety: none; the agent holds its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "absl/time/time.h"

namespace trainctl::agent {

// Now on a monotonic clock, as an absl::Time (only differences mean anything).
absl::Time MonotonicNow();

class FenceTimer {
 public:
  // At most this many messages waiting for an answer are remembered; older ones are forgotten,
  // so their answers advance nothing (the fence only comes sooner).
  static constexpr size_t kMaxUnanswered = 1024;

  // From the RegisterAck: fence after `fence_after` without an answer, giving replicas `grace`
  // between SIGTERM and SIGKILL. A zero fence_after (a scheduler that does not fence) disarms.
  void Configure(absl::Duration fence_after, absl::Duration grace);
  // A message that the scheduler answers (Register, Heartbeat) is sent now (`at`) with `seq`.
  void Sent(uint64_t seq, absl::Time at);
  // The scheduler answered the message `seq`. Returns true when this ends a fence (MarkFenced
  // was called since the last answer): the scheduler is back in touch.
  bool Answered(uint64_t seq);

  bool armed() const {
    return fence_after_ > absl::ZeroDuration() && heard_ != absl::InfinitePast();
  }
  absl::Duration fence_after() const { return fence_after_; }
  absl::Duration grace() const { return grace_; }
  // When to fence: the send time of the newest answered message plus fence_after;
  // InfiniteFuture while not armed.
  absl::Time Deadline() const;
  // Armed and the deadline has passed.
  bool Due(absl::Time now) const { return now >= Deadline(); }
  // How long since the newest answered message was sent.
  absl::Duration Silence(absl::Time now) const { return now - heard_; }
  // The agent stopped its replicas; until the next answer, fenced() is true.
  void MarkFenced() { fenced_ = true; }
  bool fenced() const { return fenced_; }

 private:
  absl::Duration fence_after_ = absl::ZeroDuration();
  absl::Duration grace_ = absl::ZeroDuration();
  // The send time of the newest answered message; InfinitePast before any answer.
  absl::Time heard_ = absl::InfinitePast();
  // Messages not answered yet: seq -> send time.
  std::map<uint64_t, absl::Time> unanswered_;
  bool fenced_ = false;
};

}  // namespace trainctl::agent
