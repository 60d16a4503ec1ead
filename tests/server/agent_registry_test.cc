// Which stream owns a node's name: a second stream takes a connected node over only from the
// same agent process, or once the first has been silent for the takeover time. And image
// prepulls and stack captures: sent with fresh request ids, matched to their answers, failed at
// their deadline.
#include "server/agent_registry.h"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>

namespace trainctl::server {
namespace {

class FakeChannel : public AgentChannel {
 public:
  void Enqueue(sched::Command cmd) override {
    ++sent;
    last = std::move(cmd).Take();
  }
  void Close(const std::string& why) override { closed = why; }
  int sent = 0;
  v1::SchedulerMessage last;
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

TEST_CASE("prepulls: answered by request id, else failed at the deadline or disconnect",
          "[agent_registry]") {
  AgentRegistry registry(std::chrono::hours(1));
  auto a = std::make_shared<FakeChannel>();
  auto b = std::make_shared<FakeChannel>();
  REQUIRE(registry.Attach("node-a", a, "instance-a").ok());
  REQUIRE(registry.Attach("node-b", b, "instance-b").ok());
  std::map<std::string, v1::ImagePrepulled> answers;
  auto answer_to = [&answers](const std::string& node) {
    return [&answers, node](const v1::ImagePrepulled& r) {
      CHECK(answers.count(node) == 0);  // exactly once
      answers[node] = r;
    };
  };
  v1::PrepullImage req;
  req.set_image("127.0.0.1:5000/x:1");
  req.set_credentials("bob:hunter2");
  const auto now = std::chrono::steady_clock::now();
  registry.RequestPrepull("node-a", req, now + std::chrono::hours(1), answer_to("node-a"));
  registry.RequestPrepull("node-b", req, now + std::chrono::hours(1), answer_to("node-b"));
  registry.RequestPrepull("node-c", req, now + std::chrono::hours(1), answer_to("node-c"));
  registry.RequestPrepull("node-a", req, now - std::chrono::seconds(1), answer_to("late"));
  // Not connected: answered at once, nothing sent.
  CHECK(answers["node-c"].error() == "not connected");
  // Each connected agent got the request with a fresh id, the image and the credentials.
  REQUIRE(a->last.has_prepull_image());
  REQUIRE(b->last.has_prepull_image());
  CHECK(b->last.prepull_image().image() == "127.0.0.1:5000/x:1");
  CHECK(b->last.prepull_image().credentials() == "bob:hunter2");
  const uint64_t b_id = b->last.prepull_image().request_id();
  CHECK(b_id != a->last.prepull_image().request_id());

  v1::ImagePrepulled done;
  done.set_request_id(b_id);
  done.set_digest("sha256:abc");
  done.set_bytes(42);
  registry.CompletePrepull(done);
  CHECK(answers["node-b"].digest() == "sha256:abc");
  CHECK(answers["node-b"].bytes() == 42);
  registry.CompletePrepull(done);  // a repeated answer is dropped

  // The expiry fails the one past its deadline; node-a's first request waits on.
  registry.ExpireRequests();
  CHECK(answers["late"].error() == "no answer before the deadline");
  CHECK(answers.count("node-a") == 0);
  // Its agent goes away: the request fails then.
  CHECK(registry.Detach("node-a", a.get()));
  registry.ExpireRequests();
  CHECK(answers["node-a"].error() == "its agent disconnected before it answered");
  CHECK(answers.size() == 4);
}

TEST_CASE("stack captures: answered by request id, else failed at the deadline or disconnect",
          "[agent_registry]") {
  AgentRegistry registry(std::chrono::hours(1));
  auto a = std::make_shared<FakeChannel>();
  REQUIRE(registry.Attach("node-a", a, "instance-a").ok());
  std::map<std::string, v1::StacksReport> answers;
  auto answer_to = [&answers](const std::string& key) {
    return [&answers, key](const v1::StacksReport& r) {
      CHECK(answers.count(key) == 0);  // exactly once
      answers[key] = r;
    };
  };
  v1::DumpStacks req;
  req.set_run_id("j-1/1/chief-0/0");
  const auto now = std::chrono::steady_clock::now();
  registry.RequestStacks("node-b", req, now + std::chrono::hours(1), answer_to("away"));
  CHECK(answers["away"].stacks().error() == "node node-b is not connected");
  CHECK(answers["away"].stacks().run_id() == "j-1/1/chief-0/0");
  registry.RequestStacks("node-a", req, now + std::chrono::hours(1), answer_to("first"));
  REQUIRE(a->last.has_dump_stacks());
  CHECK(a->last.dump_stacks().run_id() == "j-1/1/chief-0/0");
  const uint64_t first_id = a->last.dump_stacks().request_id();
  registry.RequestStacks("node-a", req, now - std::chrono::seconds(1), answer_to("late"));
  CHECK(a->last.dump_stacks().request_id() != first_id);

  v1::StacksReport done;
  done.set_request_id(first_id);
  done.mutable_stacks()->set_summary("load_batch (train.py:3)");
  registry.CompleteStacks(done);
  CHECK(answers["first"].stacks().summary() == "load_batch (train.py:3)");
  registry.CompleteStacks(done);  // a repeated answer is dropped
  registry.ExpireRequests();
  CHECK(answers["late"].stacks().error() == "no answer before the deadline");
  CHECK(answers.size() == 3);
}

}  // namespace
}  // namespace trainctl::server
