// AckDeadline and EpochFilter (agents/leader_guard.h) on a fake clock.
#include "agents/leader_guard.h"

#include <catch2/catch.hpp>

namespace trainctl::agent {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

TEST_CASE("AckDeadline defaults to 3 heartbeat intervals and at least 3s", "[leader_guard]") {
  AckDeadline ack;
  ack.Restart(absl::Seconds(2));
  CHECK(ack.timeout() == absl::Seconds(6));
  ack.SetInterval(absl::Milliseconds(500));
  CHECK(ack.timeout() == absl::Seconds(3));
  ack.SetInterval(absl::Seconds(5));
  CHECK(ack.timeout() == absl::Seconds(15));
  CHECK(AckDeadline(absl::Seconds(4)).timeout() == absl::Seconds(4));
}

TEST_CASE("AckDeadline counts from the oldest unanswered message", "[leader_guard]") {
  AckDeadline ack(absl::Seconds(6));
  ack.Restart(absl::Seconds(2));
  CHECK(ack.Deadline() == absl::InfiniteFuture());  // nothing sent
  ack.Sent(1, kT0);                                 // the Register
  CHECK(ack.Deadline() == kT0 + absl::Seconds(6));
  ack.Answered(1);  // its RegisterAck
  CHECK(ack.Deadline() == absl::InfiniteFuture());

  ack.Sent(2, kT0 + absl::Seconds(2));
  ack.Sent(3, kT0 + absl::Seconds(4));
  CHECK_FALSE(ack.Due(kT0 + absl::Seconds(7)));
  CHECK(ack.Due(kT0 + absl::Seconds(8)));
  CHECK(ack.Waited(kT0 + absl::Seconds(8)) == absl::Seconds(6));
  // An answer to a later heartbeat answers the earlier ones too.
  ack.Answered(3);
  CHECK(ack.Deadline() == absl::InfiniteFuture());
  CHECK(ack.Waited(kT0 + absl::Seconds(8)) == absl::ZeroDuration());

  ack.Sent(4, kT0 + absl::Seconds(6));
  ack.Sent(5, kT0 + absl::Seconds(8));
  ack.Answered(4);
  CHECK(ack.Deadline() == kT0 + absl::Seconds(14));
  // A new stream forgets what the last one waited for.
  ack.Restart(absl::Seconds(2));
  CHECK(ack.Deadline() == absl::InfiniteFuture());
}

TEST_CASE("AckDeadline of zero is off", "[leader_guard]") {
  AckDeadline ack(absl::ZeroDuration());
  ack.Restart(absl::Seconds(2));
  ack.Sent(1, kT0);
  CHECK(ack.timeout() == absl::ZeroDuration());
  CHECK(ack.Deadline() == absl::InfiniteFuture());
  CHECK_FALSE(ack.Due(kT0 + absl::Hours(1)));
}

TEST_CASE("EpochFilter refuses messages of an older leader than one already heard",
          "[leader_guard]") {
  EpochFilter epochs;
  CHECK(epochs.Accept(0));  // the SQLite store: no lease, always 0
  CHECK(epochs.Accept(0));
  CHECK(epochs.highest() == 0);
  CHECK(epochs.Accept(3));
  CHECK(epochs.Accept(4));
  CHECK(epochs.Accept(4));
  CHECK_FALSE(epochs.Accept(3));  // a deposed leader
  CHECK_FALSE(epochs.Accept(0));
  CHECK(epochs.highest() == 4);
  CHECK(epochs.Accept(5));
  CHECK(epochs.highest() == 5);
}

}  // namespace
}  // namespace trainctl::agent
