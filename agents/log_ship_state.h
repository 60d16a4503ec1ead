// LogShipState: what the agent's log shipper (log_shipper.h) knows of each run's log file, and
// the pure logic of shipping it (AgentService.ShipLogs, proto/trainctl/v1/agent.proto): which
// pieces the next request carries, and what an answer changes. No gRPC and no thread of its own,
// so that tests drive it with real files and made-up answers.
//
// Runs are found by listing <work_dir>/logs/<job>/attempt-<n>/<replica>.restart-<r>.log
// (RunLogPath, run_files.h); anything else there (the log cap's ".dropped" sidecars) is skipped.
// For each run the state holds the offset trainctld's copy ends at (`acked`), once an answer
// said so. A run whose offset is unknown (at the start, and after Resync(): a new stream) gets a
// probe, a piece with no data: the answer says where the copy ends. Then pieces follow from that
// offset: written bytes as plain pieces (data is the file's [offset, next_offset)), a range the
// log cap dropped (agents/shim/log_cap.h) as one gap piece whose data is the marker line
// (ReadLogChunk, log_read.h). A piece is final when the run can write no more (asked before the
// read, so no byte written after it is missed) and the piece reaches the end of the file; an
// ended run with nothing left gets an empty final piece.
//
// Answers: `refused` stops shipping the run for good (this process); `retry` ships it again after
// Options::retry_after; `final` completes it. Any other answer moves `acked` to its offset: the
// copy is where the scheduler says, whatever was sent, so nothing is lost or repeated.
//
// A run whose file is gone (job deletion, log retention) is forgotten at the next Scan(): the
// state stays as large as the logs directory.
//
//   LogShipState state({.work_dir = "/var/lib/trainctl"});
//   state.Scan();
//   bool more = false;
//   std::vector<v1::LogPiece> pieces = state.NextPieces(ended, absl::Now(), &more);
//   ... send them, get `answer` ...
//   absl::StatusOr<LogShipState::Applied> applied = state.Apply(pieces, answer, absl::Now());
//
// Thread-safety: none; one thread (the shipper's) uses it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

class LogShipState {
 public:
  struct Options {
    // The agent's --work-dir; logs are under <work_dir>/logs.
    std::string work_dir;
    // The most bytes of data one request carries (a little more with a gap's marker).
    int64_t max_request_bytes = int64_t{1} << 20;
    // The most probes one request carries.
    int max_probes = 256;
    // How long a run answered with `retry` waits before it is shipped again.
    absl::Duration retry_after = absl::Seconds(5);
  };

  // Whether the run can write no more to its log (ReplicaRuntime::LogFinal).
  using EndedFn = std::function<bool(const std::string& run_id)>;

  // What one run's state is, for tests and logs.
  struct RunView {
    std::string path;
    // The copy's end is known (an answer said so since the last Resync()).
    bool known = false;
    // Where the copy ends, as last answered (0 before any answer).
    int64_t acked = 0;
    bool final = false;
    bool refused = false;
    // The file's size at the last Scan() (or read).
    int64_t file_size = 0;
  };

  // What an answer changed.
  struct Applied {
    // Bytes of plain pieces the copy took.
    int64_t shipped_bytes = 0;
    // Runs refused by this answer (each at most once per process), with the scheduler's reason.
    std::vector<std::pair<std::string, std::string>> refused;
    // A reason the scheduler gave for a `retry` in this answer; "" when none did.
    std::string retry;
  };

  explicit LogShipState(Options options);

  // Lists the logs directory: adds the runs of new files, forgets the runs whose file is gone,
  // and notes the size of each file still to ship. A missing directory holds no runs.
  void Scan();

  // Every run's offset becomes unknown, to be probed again: for a new stream (after a reconnect,
  // a failover, a restart of the scheduler). Runs waiting after a `retry` wait no longer.
  void Resync();

  // The pieces of the next request: probes of the runs whose offset is unknown (at most
  // max_probes), then pieces of the runs with bytes to ship or an end to say, from the run after
  // the last one the previous call shipped, so that one busy log does not starve the others, up
  // to max_request_bytes of data. `ended` is asked, with no lock held, for each run about to be
  // read. Every piece has time_ms (`now`, wall clock) and file_size set. `*more`: something was
  // left for the next request (a budget ran out). Empty when there is nothing to ship now.
  std::vector<trainctl::v1::LogPiece> NextPieces(const EndedFn& ended, absl::Time now, bool* more);

  // Applies the answer to the request that carried `sent`: one LogShipped per piece, in their
  // order. INVALID_ARGUMENT when it does not match them (another count, another run id): the
  // stream is not to be trusted, and the caller leaves it.
  absl::StatusOr<Applied> Apply(
      const google::protobuf::RepeatedPtrField<trainctl::v1::LogPiece>& sent,
      const trainctl::v1::ShipLogsResponse& answer, absl::Time now);

  // Bytes written to the logs and not yet in the copy: over the runs neither final nor refused,
  // the file's size past the offset last acknowledged.
  int64_t BacklogBytes() const;

  size_t size() const { return runs_.size(); }
  std::optional<RunView> Run(const std::string& run_id) const;

 private:
  struct RunState {
    RunView view;
    // Answered `retry`: not shipped before this.
    absl::Time retry_at = absl::InfinitePast();
    // Seen by the Scan() under way.
    bool seen = false;
  };

  // Adds the pieces of `run` from its acked offset to `*pieces`, up to `budget` bytes of data;
  // returns the bytes of data added. `*left`: the budget ran out before the end of the file.
  int64_t AddPieces(const std::string& run_id, RunState& run, bool ended, int64_t now_ms,
                    int64_t budget, std::vector<trainctl::v1::LogPiece>* pieces, bool* left);

  const Options options_;
  // By run id.
  std::map<std::string, RunState> runs_;
  // The last run NextPieces shipped bytes of; the next call starts after it.
  std::string cursor_;
};

}  // namespace trainctl::agent
