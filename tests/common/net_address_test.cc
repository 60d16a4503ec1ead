// Which addresses stay on this machine: the rule for plaintext gRPC.
#include "common/net_address.h"

#include <catch2/catch.hpp>

namespace trainctl {
namespace {

TEST_CASE("the host of an address is found with and without brackets and ports", "[net]") {
  CHECK(HostOf("127.0.0.1:7070") == "127.0.0.1");
  CHECK(HostOf("[::1]:7070") == "::1");
  CHECK(HostOf("::1") == "::1");
  CHECK(HostOf("sched.example:7070") == "sched.example");
  CHECK(HostOf("sched.example") == "sched.example");
}

TEST_CASE("only loopback addresses count as local", "[net]") {
  CHECK(IsLoopbackAddress("127.0.0.1:7070"));
  CHECK(IsLoopbackAddress("127.8.9.10:0"));
  CHECK(IsLoopbackAddress("localhost:7070"));
  CHECK(IsLoopbackAddress("LOCALHOST:7070"));
  CHECK(IsLoopbackAddress("[::1]:7070"));
  CHECK_FALSE(IsLoopbackAddress("0.0.0.0:7070"));
  CHECK_FALSE(IsLoopbackAddress("[::]:7070"));
  CHECK_FALSE(IsLoopbackAddress("10.0.0.1:7070"));
  CHECK_FALSE(IsLoopbackAddress("sched.example:7070"));
  CHECK_FALSE(IsLoopbackAddress("localhost.evil.example:7070"));
  CHECK_FALSE(IsLoopbackAddress(":7070"));  // every interface
  CHECK_FALSE(IsLoopbackAddress("[::ffff:127.0.0.1]:7070"));
}

}  // namespace
}  // namespace trainctl
