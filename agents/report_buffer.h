// ReportBuffer holds the agent's state-changing reports (ReplicaStarted, ReplicaExited,
// CheckReport) until the scheduler acknowledges them, and says which to send next on the current
// stream.
//
// A report is sent once per stream, with a fresh sequence number each time: after a reconnect
// RestartStream() makes every unacknowledged report unsent again, so sequence numbers on one
// stream always increase and an Ack{seq} ("everything up to seq is durable") can only cover
// reports the scheduler has read on that stream.
//
//   buffer.Add(report);
//   while (const AgentMessage* next = buffer.NextUnsent()) { m = *next; m.set_seq(++seq);
//                                                            buffer.MarkSent(m.seq()); ... }
//   buffer.Ack(ack.seq());
//
// Invariants: reports keep the order in which they were added; the sent ones form a prefix.
// Thread-compatible: the Agent guards it with its own mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

class ReportBuffer {
 public:
  // Appends a report: an AgentMessage holding replica_started, replica_exited or check_report;
  // its seq is ignored. `journal_id`: its id in the agent's ReportJournal, 0 when it is not
  // journaled.
  void Add(trainctl::v1::AgentMessage report, uint64_t journal_id = 0);

  // Appends a periodic CheckReport, first dropping every periodic CheckReport not yet sent on the
  // current stream: only the newest periodic result matters, and the buffer must not grow with
  // every interval while the scheduler is out of reach.
  void AddPeriodicCheck(trainctl::v1::AgentMessage report);

  // Forgets what was sent on the previous stream: every report is unsent again.
  void RestartStream();

  // The oldest report not sent on the current stream, or nullptr. Valid until the next call of
  // a non-const method.
  const trainctl::v1::AgentMessage* NextUnsent() const;

  // Records that NextUnsent() was written with sequence number `seq`.
  // REQUIRES: NextUnsent() != nullptr, and `seq` greater than every seq marked before.
  void MarkSent(uint64_t seq);

  // Drops every report sent on the current stream with a sequence number <= `seq`. Returns the
  // largest journal id among them (0 for none): the journal can forget everything up to it.
  uint64_t Ack(uint64_t seq);

  // Runs whose exit report is still unacknowledged, as KnownRun{running = false}.
  std::vector<trainctl::v1::KnownRun> UnackedExits() const;

  bool empty() const { return reports_.empty(); }
  size_t size() const { return reports_.size(); }

 private:
  struct Entry {
    trainctl::v1::AgentMessage report;
    // Sequence number on the current stream; 0 while unsent.
    uint64_t seq = 0;
    uint64_t journal_id = 0;
  };
  std::deque<Entry> reports_;
  // Number of leading entries sent on the current stream.
  size_t sent_ = 0;
};

}  // namespace trainctl::agent
