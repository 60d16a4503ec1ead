// Agent against trainctld replicas (agents/scheduler_link.h, agents/leader_guard.h), with the
// in-process fake scheduler: it leaves a stream whose heartbeats go unanswered, ignores a
// deposed leader, and follows the leader a standby (tests/integration/standby_stub.h) names.
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>

#include "agents/agent.h"
#include "tests/agents/agent_fixture.h"
#include "tests/integration/standby_stub.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::AgentFixture;
using ::trainctl::agent::testing::IsRegister;
using ::trainctl::agent::testing::IsStarted;
using ::trainctl::agent::testing::kWorkload;
using ::trainctl::agent::testing::Launch;
using ::trainctl::v1::AgentMessage;
using ::trainctl::v1::SchedulerMessage;

SchedulerMessage RegisterAck(int64_t epoch) {
  SchedulerMessage m;
  m.mutable_register_ack()->set_heartbeat_interval_ms(100);
  m.set_leader_epoch(epoch);
  return m;
}

bool IsHeartbeat(const AgentMessage& m) { return m.has_heartbeat(); }

TEST_CASE("an agent leaves a stream whose heartbeats go unanswered", "[agent][ha]") {
  AgentFixture f([](Agent::Options& o) { o.heartbeat_ack_timeout = absl::Seconds(1); });
  int stream = 0;
  REQUIRE(f.scheduler().Next(IsRegister, &stream));
  f.scheduler().Send(RegisterAck(0));
  // Answered heartbeats keep the stream, for longer than the timeout.
  const absl::Time until = absl::Now() + absl::Milliseconds(1500);
  while (absl::Now() < until) {
    std::optional<AgentMessage> beat = f.scheduler().Next(IsHeartbeat);
    REQUIRE(beat);
    SchedulerMessage ack;
    ack.mutable_heartbeat_ack()->set_seq(beat->seq());
    f.scheduler().Send(ack);
  }
  CHECK(f.agent().Registered());
  // Unanswered: the agent cancels the stream and registers on a new one.
  const absl::Time quiet = absl::Now();
  REQUIRE(f.scheduler().Next(IsRegister, &stream));
  CHECK(stream == 2);
  const absl::Duration left_after = absl::Now() - quiet;
  CHECK(left_after >= absl::Milliseconds(800));
  CHECK(left_after < absl::Seconds(5));
}

TEST_CASE("an agent ignores the messages of a deposed leader and leaves its stream",
          "[agent][ha]") {
  AgentFixture f;
  int stream = 0;
  REQUIRE(f.scheduler().Next(IsRegister, &stream));
  f.scheduler().Send(RegisterAck(4));
  REQUIRE(f.scheduler().Next(IsHeartbeat));
  // A leader of epoch 3 has not noticed that epoch 4 leads: its launch is not carried out.
  SchedulerMessage stale = Launch("worker-0", {kWorkload, "--exit", "0"});
  stale.set_leader_epoch(3);
  f.scheduler().Send(stale);
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister, &stream);
  REQUIRE(reg);
  CHECK(stream == 2);
  CHECK(reg->register_().runs().empty());
  CHECK(f.agent().ActiveRuns() == 0);
  // The epoch is remembered across streams: epoch 4 is obeyed, epoch 3 still is not.
  f.scheduler().Send(RegisterAck(4));
  SchedulerMessage current = Launch("worker-1", {kWorkload, "--exit", "0"});
  current.set_leader_epoch(4);
  f.scheduler().Send(current);
  std::optional<AgentMessage> started = f.scheduler().Next(IsStarted);
  REQUIRE(started);
  CHECK(started->replica_started().run_id() == "j-agent/1/worker-1/0");
  f.scheduler().Send(stale);
  REQUIRE(f.scheduler().Next(IsRegister, &stream));
  CHECK(stream == 3);
}

TEST_CASE("an agent follows the leader a standby names", "[agent][ha]") {
  std::unique_ptr<trainctl::testing::StandbyStub> standby;
  std::unique_ptr<trainctl::testing::StandbyStub> electing;
  AgentFixture f([&](Agent::Options& o) {
    v1::LeaderInfo leader;
    leader.set_address(o.scheduler);  // the fake scheduler
    leader.set_epoch(2);
    standby = std::make_unique<trainctl::testing::StandbyStub>(leader);
    electing = std::make_unique<trainctl::testing::StandbyStub>(v1::LeaderInfo());
    // The fake scheduler is not in the list: only the standby's answer leads there.
    o.scheduler = electing->address() + "," + standby->address();
  });
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(RegisterAck(2));
  CHECK(testing::WaitUntil([&] { return f.agent().Registered(); }));
  CHECK(electing->calls() >= 1);
  CHECK(standby->calls() >= 1);
}

}  // namespace
}  // namespace trainctl::agent
