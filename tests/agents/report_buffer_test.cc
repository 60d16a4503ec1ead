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

// A CheckReport of `phase`, told apart by its run id.
AgentMessage Check(const std::string& phase, const std::string& run_id) {
  AgentMessage m;
  m.mutable_check_report()->mutable_run()->set_phase(phase);
  m.mutable_check_report()->mutable_run()->set_run_id(run_id);
  return m;
}

// Sends every unsent report with the next seq; returns the run ids in order.
std::string SendAll(ReportBuffer& buffer, uint64_t& seq) {
  std::string sent;
  while (const AgentMessage* next = buffer.NextUnsent()) {
    sent += (next->has_replica_started()  ? next->replica_started().run_id()
             : next->has_replica_exited() ? next->replica_exited().run_id()
                                          : next->check_report().run().run_id()) +
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

TEST_CASE("only the newest unsent periodic check report is kept", "[report_buffer]") {
  ReportBuffer buffer;
  uint64_t seq = 0;
  buffer.AddPeriodicCheck(Check("periodic", "p1"));
  buffer.Add(Started("a"));
  CHECK(SendAll(buffer, seq) == "p1 a ");  // Sent: stays until acked.
  // The scheduler is out of reach: periodic runs pile up, other reports do not give way.
  buffer.AddPeriodicCheck(Check("periodic", "p2"));
  buffer.Add(Check("preflight", "f1"));
  buffer.AddPeriodicCheck(Check("periodic", "p3"));
  buffer.Add(Exited("a"));
  buffer.AddPeriodicCheck(Check("periodic", "p4"));
  CHECK(buffer.size() == 5);
  CHECK(SendAll(buffer, seq) == "f1 a p4 ");
  buffer.RestartStream();
  buffer.AddPeriodicCheck(Check("periodic", "p5"));  // After a reconnect everything is unsent.
  CHECK(SendAll(buffer, seq) == "a f1 a p5 ");
  buffer.Ack(seq);
  CHECK(buffer.empty());
}

}  // namespace
}  // namespace trainctl::agent
