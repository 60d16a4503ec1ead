// Several trainctld addresses (trainctl --server a,b): ParseAddressList's errors, LeaderFollow's
// choice of the next address, and Client's following of the leader a standby names, against a
// standby stand-in (tests/integration/standby_stub.h) and addresses nothing listens on.
#include "common/leader_follow.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/client.h"
#include "common/leader_hint.h"
#include "tests/integration/standby_stub.h"

namespace trainctl::cli {
namespace {

using Next = LeaderFollow::Next;

TEST_CASE("ParseAddressList takes HOST:PORT lists and names the flag in its errors", "[leader]") {
  CHECK(*ParseAddressList("a:7070", "--server") == std::vector<std::string>{"a:7070"});
  CHECK(*ParseAddressList("a:7070, b:7071", "--server") ==
        std::vector<std::string>{"a:7070", "b:7071"});
  for (const char* bad : {"", "a:7070,", ",a:7070", "a", "a:0", "a:70700", ":7070"}) {
    absl::StatusOr<std::vector<std::string>> list = ParseAddressList(bad, "TRAINCTL_SERVER");
    INFO(bad);
    REQUIRE_FALSE(list.ok());
    CHECK(list.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(list.status().message()),
               Catch::StartsWith("TRAINCTL_SERVER must be HOST:PORT or a comma-separated list"));
  }
  absl::StatusOr<std::vector<std::string>> twice = ParseAddressList("a:1,b:2,a:1", "--server");
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(std::string(twice.status().message()), Catch::Contains("names a:1 twice"));
}

TEST_CASE("LeaderFollow with one address backs off after every failure", "[leader]") {
  LeaderFollow follow({"a:1"});
  CHECK_FALSE(follow.several());
  CHECK(follow.Failed() == Next::kBackoff);
  CHECK(follow.current() == "a:1");
  CHECK(follow.Redirected("") == Next::kBackoff);     // no leader yet
  CHECK(follow.Redirected("a:1") == Next::kBackoff);  // itself
  CHECK(follow.current() == "a:1");
  CHECK(follow.Redirected("z:9") == Next::kNow);  // a leader elsewhere
  CHECK(follow.current() == "z:9");
  CHECK(follow.Failed() == Next::kBackoff);
  CHECK(follow.current() == "a:1");
}

TEST_CASE("LeaderFollow tries the list in turn and backs off once a round failed", "[leader]") {
  LeaderFollow follow({"a:1", "b:2", "c:3"});
  CHECK(follow.current() == "a:1");
  CHECK(follow.Failed() == Next::kNow);
  CHECK(follow.current() == "b:2");
  CHECK(follow.Redirected("") == Next::kNow);  // a standby that knows no leader: the next
  CHECK(follow.current() == "c:3");
  CHECK(follow.Failed() == Next::kBackoff);  // every address failed in a row
  CHECK(follow.current() == "a:1");
  CHECK(follow.Failed() == Next::kNow);
  follow.Served();  // b serves: a new round starts from it
  CHECK(follow.current() == "b:2");
  CHECK(follow.Failed() == Next::kNow);
  CHECK(follow.Failed() == Next::kNow);
  CHECK(follow.Failed() == Next::kBackoff);
  CHECK(follow.current() == "b:2");
}

TEST_CASE("LeaderFollow follows redirects at once, a few in a row, also off the list", "[leader]") {
  LeaderFollow follow({"a:1", "b:2", "c:3"});
  CHECK(follow.Redirected("c:3") == Next::kNow);
  CHECK(follow.current() == "c:3");
  CHECK(follow.Failed() == Next::kNow);  // the list goes on after the leader's place in it
  CHECK(follow.current() == "a:1");
  CHECK(follow.Redirected("z:9") == Next::kNow);  // a leader not in the list
  CHECK(follow.current() == "z:9");
  CHECK(follow.Failed() == Next::kNow);  // after a:1, the list address tried last
  CHECK(follow.current() == "b:2");

  // Standbys naming each other: kMaxRedirects redirects at once, then a backoff.
  LeaderFollow loop({"a:1", "b:2"});
  std::vector<Next> seen;
  for (int i = 0; i < LeaderFollow::kMaxRedirects + 2; ++i) {
    seen.push_back(loop.Redirected(loop.current() == "a:1" ? "b:2" : "a:1"));
  }
  CHECK(seen == std::vector<Next>{Next::kNow, Next::kNow, Next::kNow, Next::kBackoff, Next::kNow});
}

v1::LeaderInfo LeaderAt(const std::string& address, int64_t epoch) {
  v1::LeaderInfo leader;
  leader.set_address(address);
  leader.set_epoch(epoch);
  return leader;
}

TEST_CASE("Client::Retarget follows the leader a standby names", "[leader]") {
  Client one("127.0.0.1:1");
  const grpc::Status standby = StandbyStatus(LeaderAt("127.0.0.1:2", 3), "127.0.0.1:1");
  CHECK(one.Retarget(standby, nullptr) == Client::Retry::kNow);
  CHECK(one.server() == "127.0.0.1:2");
  // Other errors, and with one address a standby that knows no leader, are reported.
  CHECK(one.Retarget(grpc::Status(grpc::StatusCode::NOT_FOUND, "no job"), nullptr) ==
        Client::Retry::kNo);
  CHECK(one.Retarget(StandbyStatus(v1::LeaderInfo(), "127.0.0.1:2"), nullptr) ==
        Client::Retry::kNo);
  CHECK(one.server() == "127.0.0.1:2");

  // With several, a standby that knows no leader sends the client to the next address.
  Client several(std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"}, "", "");
  CHECK(several.Retarget(StandbyStatus(v1::LeaderInfo(), "127.0.0.1:1"), nullptr) ==
        Client::Retry::kNow);
  CHECK(several.server() == "127.0.0.1:2");
  CHECK(several.Retarget(StandbyStatus(v1::LeaderInfo(), "127.0.0.1:2"), nullptr) ==
        Client::Retry::kAfterBackoff);
  CHECK(several.server() == "127.0.0.1:1");
}

TEST_CASE("Client::FindLeader names every address it asked and what each said", "[leader]") {
  testing::StandbyStub electing{v1::LeaderInfo()};
  Client client(std::vector<std::string>{electing.address(), "127.0.0.1:1"}, "", "");
  absl::Status found = client.FindLeader(std::chrono::milliseconds(1500));
  REQUIRE(found.code() == absl::StatusCode::kUnavailable);
  const std::string message(found.message());
  CHECK_THAT(message, Catch::StartsWith("no trainctld among " + electing.address() +
                                        ",127.0.0.1:1 leads (asked for 1.5s): "));
  CHECK_THAT(message, Catch::Contains(electing.address() + ": trainctld at " + electing.address() +
                                      " is a standby and no trainctld leads"));
  CHECK_THAT(message, Catch::Contains("127.0.0.1:1: cannot be reached ("));
  CHECK(electing.calls() >= 2);  // asked again after a backoff

  // One address: nothing asked (the command's own call finds out).
  Client one(std::vector<std::string>{electing.address()}, "", "");
  const int calls = electing.calls();
  CHECK(one.FindLeader().ok());
  CHECK(electing.calls() == calls);
}

}  // namespace
}  // namespace trainctl::cli
