#include "agents/report_buffer.h"

#include <catch2/catch.hpp>
#include <string>

namespace trainctl::agent {
namespace {

using ::trainctl::v1::AgentMessage;

AgentMessage Started(const std::string& run_id) {
  AgentMessage m;
  m.mutable_replica_started()->set_run_id(run_id);
  return m;
}

AgentMessage Exited(const std::string& run_id) {
  AgentMessage m;
  m.mutable_replica_exited()->set_run_id(run_id);
  return m;
}

// Sends every unsent report with the next seq; returns the run ids in order.
std::string SendAll(ReportBuffer& buffer, uint64_t& seq) {
  std::string sent;
  while (const AgentMessage* next = buffer.NextUnsent()) {
    sent += (next->has_replica_started() ? next->replica_started().run_id()
                                         : next->replica_exited().run_id()) +
            " ";
    buffer.MarkSent(++seq);
  }
  return sent;
}

TEST_CASE("reports stay until acked and are resent after a reconnect", "[report_buffer]") {
  ReportBuffer buffer;
  uint64_t seq = 10;
  CHECK(buffer.NextUnsent() == nullptr);
  buffer.Add(Started("a"));
  buffer.Add(Exited("a"));
  buffer.Add(Started("b"));
  CHECK(SendAll(buffer, seq) == "a a b ");  // seqs 11, 12, 13
  CHECK(buffer.NextUnsent() == nullptr);
  buffer.Ack(11);
  CHECK(buffer.size() == 2);
  buffer.Add(Exited("b"));
  CHECK(SendAll(buffer, seq) == "b ");  // seq 14

  buffer.RestartStream();  // Reconnect: everything unacked goes again, with new seqs.
  ++seq;                   // Register took 15.
  buffer.Ack(14);          // Seqs of the old stream mean nothing now.
  CHECK(buffer.size() == 3);
  CHECK(SendAll(buffer, seq) == "a b b ");  // 16, 17, 18
  REQUIRE(buffer.UnackedExits().size() == 2);
  CHECK(buffer.UnackedExits()[0].run_id() == "a");
  CHECK_FALSE(buffer.UnackedExits()[0].running());
  buffer.Ack(17);
  CHECK(buffer.size() == 1);
  buffer.Ack(100);
  CHECK(buffer.empty());
}

TEST_CASE("an ack never drops a report that was not sent on the stream", "[report_buffer]") {
  ReportBuffer buffer;
  buffer.Add(Started("a"));
  buffer.Ack(1000);
  CHECK(buffer.size() == 1);
  buffer.MarkSent(5);
  buffer.Add(Exited("a"));
  buffer.Ack(1000);
  CHECK(buffer.size() == 1);
  CHECK(buffer.NextUnsent()->has_replica_exited());
}

}  // namespace
}  // namespace trainctl::agent
