#include "agents/report_buffer.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace trainctl::agent {

void ReportBuffer::Add(trainctl::v1::AgentMessage report, uint64_t journal_id) {
  report.clear_seq();
  reports_.push_back(Entry{std::move(report), 0, journal_id});
}

void ReportBuffer::AddPeriodicCheck(trainctl::v1::AgentMessage report) {
  auto is_periodic = [](const Entry& entry) {
    return entry.report.has_check_report() &&
           entry.report.check_report().run().phase() == "periodic";
  };
  // Only the unsent tail is touched, so the sent entries stay a prefix.
  reports_.erase(std::remove_if(reports_.begin() + static_cast<std::ptrdiff_t>(sent_),
                                reports_.end(), is_periodic),
                 reports_.end());
  Add(std::move(report));
}

void ReportBuffer::RestartStream() {
  for (Entry& entry : reports_) entry.seq = 0;
  sent_ = 0;
}

const trainctl::v1::AgentMessage* ReportBuffer::NextUnsent() const {
  return sent_ < reports_.size() ? &reports_[sent_].report : nullptr;
}

void ReportBuffer::MarkSent(uint64_t seq) {
  if (sent_ >= reports_.size()) return;
  reports_[sent_].seq = seq;
  ++sent_;
}

uint64_t ReportBuffer::Ack(uint64_t seq) {
  uint64_t journal_id = 0;
  while (sent_ > 0 && reports_.front().seq <= seq) {
    journal_id = std::max(journal_id, reports_.front().journal_id);
    reports_.pop_front();
    --sent_;
  }
  return journal_id;
}

std::vector<trainctl::v1::KnownRun> ReportBuffer::UnackedExits() const {
  std::vector<trainctl::v1::KnownRun> out;
  for (const Entry& entry : reports_) {
    if (!entry.report.has_replica_exited()) continue;
    trainctl::v1::KnownRun& run = out.emplace_back();
    run.set_run_id(entry.report.replica_exited().run_id());
    run.set_running(false);
  }
  return out;
}

}  // namespace trainctl::agent
