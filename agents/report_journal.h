// ReportJournal keeps the agent's unacknowledged reports (ReplicaStarted, ReplicaExited, preflight
// CheckReports) in a file of the work dir, so that an agent that was SIGKILLed, crashed or was
// upgraded before the scheduler acknowledged an exit sends it again from its next start: no exit
// code is lost with the agent process.
//
// The file is a log of records, appended with one write() each:
//   [u32 body length, little endian][u8 kind][u64 id, little endian][payload]
// kind 1: a report, payload = the serialized AgentMessage, id = its journal id (1, 2, ...);
// kind 2: an acknowledgement, no payload: every report with an id <= id is acknowledged.
// Ids increase in the order reports are added, and the scheduler acknowledges a prefix of them
// (report_buffer.h), so "through id" is all an acknowledgement needs to say. When nothing is left
// unacknowledged the file is truncated to empty; when acknowledged records make up most of a
// file that has grown past kCompactBytes, the live records are rewritten to a new file that
// replaces it with a rename.
//
// Nothing is fsynced: the journal must survive the death of the agent process, not of the host (a
// host that dies takes its replicas with it, and the scheduler handles it as lost). A record cut
// short at the end of the file (a full disk) is dropped when the file is read, and so is a file
// that is not a journal (with a warning): the reports it held are then lost, never invented.
//
//   std::vector<ReportJournal::Entry> unacked;
//   auto journal = ReportJournal::Open(work_dir + "/reports.journal", &unacked);
//   for (auto& e : unacked) buffer.Add(std::move(e.report), e.id);   // sent again
//   uint64_t id = (*journal)->Append(report);                        // before it is sent
//   (*journal)->AckThrough(id);                                       // when the Ack came
//
// Thread-compatible: the Agent calls it under its own mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

class ReportJournal {
 public:
  struct Entry {
    uint64_t id = 0;
    trainctl::v1::AgentMessage report;
  };

  // Past this size a journal whose live records are a quarter of it or less is rewritten.
  static constexpr int64_t kCompactBytes = 256 << 10;

  // Opens the journal at `path`, creating it (and nothing else: its directory must exist).
  // Fills `unacked` with the reports it holds that were never acknowledged, oldest first.
  // INTERNAL when the file cannot be opened or written.
  static absl::StatusOr<std::unique_ptr<ReportJournal>> Open(const std::string& path,
                                                             std::vector<Entry>* unacked);

  ReportJournal(const ReportJournal&) = delete;
  ReportJournal& operator=(const ReportJournal&) = delete;
  ~ReportJournal();

  // Appends `report` and returns its id. INTERNAL when the write failed (a full disk): the
  // report is then kept in memory only, by the caller.
  absl::StatusOr<uint64_t> Append(const trainctl::v1::AgentMessage& report);

  // Records that every report with an id <= `id` was acknowledged.
  absl::Status AckThrough(uint64_t id);

  // Reports appended and not acknowledged.
  size_t size() const { return live_.size(); }
  // The file's size now.
  int64_t file_bytes() const { return file_bytes_; }

 private:
  struct Live {
    uint64_t id;
    std::string record;  // The whole record, as written.
  };
  ReportJournal(std::string path, int fd, uint64_t next_id, std::deque<Live> live,
                int64_t file_bytes);
  // Writes `record` at the end of the file.
  absl::Status Write(const std::string& record);
  // Replaces the file with one that holds only the live records.
  absl::Status Compact();

  const std::string path_;
  int fd_;
  uint64_t next_id_;
  std::deque<Live> live_;
  int64_t live_bytes_ = 0;
  int64_t file_bytes_;
};

}  // namespace trainctl::agent
