// Two guards of the agent's stream to the scheduler, for trainctld replicas that fail over
// (docs/operators/postgresql-ha.md, "High availability"): pure logic on a caller's clock, so
// tests drive them with a fake one.
//
// AckDeadline: the scheduler answers the Register with a RegisterAck and every Heartbeat with a
// HeartbeatAck. A frozen scheduler (stopped, swapping, a leader that lost its database) keeps the
// connection open, and gRPC's keepalive notices only a dead host. When a message sent on the
// current stream stays unanswered for the timeout (--heartbeat-ack-timeout; by default 3
// heartbeat intervals, at least 3s), the agent leaves the stream and dials again (the next
// address, or the leader). The fence (fence_timer.h) is another, longer clock: it stops replicas;
// this one only leaves a stream.
//
//   AckDeadline ack(std::nullopt);               // the default timeout
//   ack.Restart(absl::Seconds(2));               // a new stream; 2s heartbeats until the ack
//   ack.Sent(1, now);                            // the Register
//   ack.Answered(1);                             // its RegisterAck
//   if (ack.Due(now)) { ...leave the stream... }
//
// EpochFilter: every SchedulerMessage carries its sender's leader_epoch (0 from a trainctld with
// the SQLite store, which has no lease). The agent remembers the highest it has seen in its life;
// a message of a lower epoch comes from a deposed leader that has not noticed yet, and must not
// be applied.
//
// Thread-safety: none; the agent holds its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "absl/time/time.h"

namespace trainctl::agent {

class AckDeadline {
 public:
  // The default timeout: this many heartbeat intervals, and at least kMinDefault.
  static constexpr int kDefaultIntervals = 3;
  static constexpr absl::Duration kMinDefault = absl::Seconds(3);

  // `configured`: --heartbeat-ack-timeout; nullopt: the default; zero: off.
  explicit AckDeadline(std::optional<absl::Duration> configured = std::nullopt)
      : configured_(configured) {}

  // A new stream: forgets the messages sent on the last one; heartbeats every `interval` until
  // SetInterval.
  void Restart(absl::Duration interval);
  // The RegisterAck's heartbeat interval.
  void SetInterval(absl::Duration interval) { interval_ = interval; }
  // A message the scheduler answers (Register, Heartbeat) is sent now (`at`) with `seq`.
  void Sent(uint64_t seq, absl::Time at);
  // The scheduler answered `seq`: it and every message sent before it are answered.
  void Answered(uint64_t seq);

  // The timeout in force; zero: off.
  absl::Duration timeout() const;
  // When the oldest unanswered message runs out of time; InfiniteFuture when off or none waits.
  absl::Time Deadline() const;
  bool Due(absl::Time now) const { return now >= Deadline(); }
  // How long the oldest unanswered message has waited at `now`; zero when none waits.
  absl::Duration Waited(absl::Time now) const;

 private:
  const std::optional<absl::Duration> configured_;
  absl::Duration interval_ = absl::Seconds(2);
  // Messages of this stream not answered yet: seq -> send time.
  std::map<uint64_t, absl::Time> unanswered_;
};

class EpochFilter {
 public:
  // Whether a message of a leader of `epoch` may be applied: not lower than the highest epoch
  // seen. Raises the highest seen.
  bool Accept(int64_t epoch);
  int64_t highest() const { return highest_; }

 private:
  int64_t highest_ = 0;
};

}  // namespace trainctl::agent
