// Which stream owns a node's name: a second stream takes a connected node over only from the
// same agent process, or once the first has been silent for the takeover time.
#include "server/agent_registry.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

namespace trainctl::server {
namespace {

class FakeChannel : public AgentChannel {
 public:
  void Enqueue(sched::Command) override { ++sent; }
  void Close(const std::string& why) override { closed = why; }
  int sent = 0;
  std::string closed;
};

v1::SchedulerMessage Ack() {
  v1::SchedulerMessage msg;
  msg.mutable_ack()->set_seq(1);
  return msg;
}

TEST_CASE("a live node's stream is not taken over by another agent", "[agent_registry]") {
  AgentRegistry registry(std::chrono::hours(1));
  auto real = std::make_shared<FakeChannel>();
  auto rogue = std::make_shared<FakeChannel>();
  REQUIRE(registry.Attach("node-a", real, "instance-1").ok());
  registry.Heard("node-a", real.get());

  absl::Status refused = registry.Attach("node-a", rogue, "rogue");
  CHECK(refused.code() == absl::StatusCode::kAlreadyExists);
  CHECK(std::string(refused.message()) ==
        "node node-a is connected through a live stream of another agent; a second stream "
        "takes a node over only from the same agent, or once the first has been silent for "
        "3600000ms");
  // Nothing of the other agent's identity is echoed to whoever tried.
  CHECK_THAT(std::string(refused.message()), !Catch::Contains("instance-1"));
  CHECK(real->closed.empty());
  registry.Send({"node-a", Ack()});
  CHECK(real->sent == 1);  // commands still go to the real agent
  CHECK(rogue->sent == 0);
  CHECK_FALSE(registry.Detach("node-a", rogue.get()));

  // The same agent reconnecting (its old stream not yet noticed as gone) takes over.
  auto again = std::make_shared<FakeChannel>();
  REQUIRE(registry.Attach("node-a", again, "instance-1").ok());
  CHECK(real->closed == "replaced by a newer connection from the same node");
  registry.Send({"node-a", Ack()});
  CHECK(again->sent == 1);
  CHECK(registry.Detach("node-a", again.get()));
  CHECK_FALSE(registry.IsConnected("node-a"));
}

TEST_CASE("a silent stream's node may be taken over by a restarted agent", "[agent_registry]") {
  AgentRegistry registry(std::chrono::milliseconds(0));  // every stream counts as silent
  auto old_agent = std::make_shared<FakeChannel>();
  auto restarted = std::make_shared<FakeChannel>();
  REQUIRE(registry.Attach("node-a", old_agent, "instance-1").ok());
  REQUIRE(registry.Attach("node-a", restarted, "instance-2").ok());
  CHECK_FALSE(old_agent->closed.empty());
  registry.Send({"node-a", Ack()});
  CHECK(restarted->sent == 1);
  // A stream registering again on itself is no takeover.
  CHECK(registry.Attach("node-a", restarted, "instance-2").ok());
  CHECK(restarted->closed.empty());
}

}  // namespace
}  // namespace trainctl::server
