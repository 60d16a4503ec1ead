// Per-peer stream limits: counted by host, released with the last copy of a slot.
#include "server/peer_limits.h"

#include <catch2/catch.hpp>

namespace trainctl::server {
namespace {

TEST_CASE("PeerHost takes the host of gRPC's peer strings", "[peer_limits]") {
  CHECK(PeerHost("ipv4:10.0.0.5:41234") == "10.0.0.5");
  CHECK(PeerHost("ipv6:[::1]:5000") == "::1");
  CHECK(PeerHost("ipv6:%5B::1%5D:5000") == "::1");
  CHECK(PeerHost("unix:/run/trainctl.sock") == "unix:/run/trainctl.sock");
}

TEST_CASE("a host holds at most max streams, any port, until one is released", "[peer_limits]") {
  PeerStreamLimiter limiter("watch streams", "--max-watches-per-peer", 2);
  auto a = limiter.Acquire("ipv4:10.0.0.5:1000");
  auto b = limiter.Acquire("ipv4:10.0.0.5:1001");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto c = limiter.Acquire("ipv4:10.0.0.5:1002");
  CHECK(c.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(c.status().message() ==
        "10.0.0.5 already holds 2 watch streams, the most trainctld's --max-watches-per-peer "
        "allows; close some first");
  // Another host is counted on its own.
  CHECK(limiter.Acquire("ipv4:10.0.0.6:1000").ok());
  // A copy keeps the place; the last copy gives it back.
  PeerStreamLimiter::Slot copy = *a;
  a->reset();
  CHECK(limiter.Count("10.0.0.5") == 2);
  copy.reset();
  CHECK(limiter.Count("10.0.0.5") == 1);
  CHECK(limiter.Acquire("ipv4:10.0.0.5:1003").ok());
}

TEST_CASE("0 means unlimited", "[peer_limits]") {
  PeerStreamLimiter limiter("agent streams", "--max-agent-streams-per-peer", 0);
  std::vector<PeerStreamLimiter::Slot> slots;
  for (int i = 0; i < 1000; ++i) {
    auto s = limiter.Acquire("ipv4:127.0.0.1:1");
    REQUIRE(s.ok());
    slots.push_back(*s);
  }
  CHECK(limiter.Count("127.0.0.1") == 1000);
  slots.clear();
  CHECK(limiter.Count("127.0.0.1") == 0);
}

}  // namespace
}  // namespace trainctl::server
