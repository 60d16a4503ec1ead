// A test double of trainctld's copy of the runs' logs (the scheduler's side of
// AgentService.ShipLogs, server/central_logs.h): in memory, with the protocol's rules. A piece is
// taken only at the copy's end; a probe only asks where that is; a final piece completes the
// copy; runs can be refused or asked to retry. It also counts what the agent sent, so that tests
// can tell that nothing was sent twice.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "absl/synchronization/mutex.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent::testing {

class FakeLogCopy {
 public:
  struct Copy {
    // What a reader of the copy gets: written bytes and gap markers, in order.
    std::string text;
    int64_t stored = 0;
    bool final = false;
    int64_t file_size = 0;
  };

  trainctl::v1::ShipLogsResponse Take(const trainctl::v1::ShipLogsRequest& request) {
    absl::MutexLock lock(&mu_);
    trainctl::v1::ShipLogsResponse response;
    for (const trainctl::v1::LogPiece& piece : request.pieces()) {
      trainctl::v1::LogShipped& out = *response.add_runs();
      out.set_run_id(piece.run_id());
      out.set_offset(piece.offset());
      if (refuse_.count(piece.run_id()) > 0) {
        out.set_refused("the job is gone");
        continue;
      }
      if (retry_.count(piece.run_id()) > 0) {
        out.set_retry("the store is full");
        continue;
      }
      Copy& copy = copies_[piece.run_id()];
      copy.file_size = std::max(copy.file_size, piece.file_size());
      const bool carries = !piece.data().empty() || piece.gap();
      if (carries) ++data_pieces_;
      if (!copy.final && piece.offset() == copy.stored && (carries || piece.final())) {
        if (!piece.gap() &&
            static_cast<int64_t>(piece.data().size()) != piece.next_offset() - piece.offset()) {
          ++malformed_;
        }
        copy.text += piece.data();
        copy.stored = piece.next_offset();
        copy.final = piece.final();
        if (!piece.gap()) taken_bytes_ += static_cast<int64_t>(piece.data().size());
      } else if (carries) {
        ++missed_pieces_;  // sent where the copy does not end: the agent was out of step
      }
      out.set_offset(copy.stored);
      out.set_final(copy.final);
    }
    return response;
  }

  // Sets the copy of `run_id`, as if shipped before.
  void Seed(const std::string& run_id, std::string text, int64_t stored) {
    absl::MutexLock lock(&mu_);
    Copy& copy = copies_[run_id];
    copy.text = std::move(text);
    copy.stored = stored;
  }
  void Refuse(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    refuse_.insert(run_id);
  }
  void SetRetry(const std::string& run_id, bool retry) {
    absl::MutexLock lock(&mu_);
    if (retry) {
      retry_.insert(run_id);
    } else {
      retry_.erase(run_id);
    }
  }
  Copy Get(const std::string& run_id) {
    absl::MutexLock lock(&mu_);
    auto it = copies_.find(run_id);
    return it == copies_.end() ? Copy{} : it->second;
  }
  // Pieces with data or a gap received, and those of them sent at another offset than the
  // copy's end (and so not taken).
  int64_t data_pieces() {
    absl::MutexLock lock(&mu_);
    return data_pieces_;
  }
  int64_t missed_pieces() {
    absl::MutexLock lock(&mu_);
    return missed_pieces_;
  }
  int64_t malformed() {
    absl::MutexLock lock(&mu_);
    return malformed_;
  }
  int64_t taken_bytes() {
    absl::MutexLock lock(&mu_);
    return taken_bytes_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, Copy> copies_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> refuse_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> retry_ ABSL_GUARDED_BY(mu_);
  int64_t data_pieces_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t missed_pieces_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t malformed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t taken_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trainctl::agent::testing
