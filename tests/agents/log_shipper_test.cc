// Tests of the log shipper's logic (agents/log_ship_state.h) on real log files in a temp work
// dir, against an in-memory copy with the scheduler's rules (fake_log_copy.h): the order of
// pieces, resynchronisation on answers, gaps of capped logs, final pieces, refused and retried
// runs, forgotten files, and the size of a request. The transport is log_shipper_stream_test.cc's.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "agents/log_read.h"
#include "agents/log_ship_state.h"
#include "agents/run_files.h"
#include "agents/shim/log_cap.h"
#include "tests/agents/fake_log_copy.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace log_ship_test {

using ::trainctl::agent::testing::FakeLogCopy;
using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::v1::LogPiece;

RunIdParts RunOf(const std::string& replica, int restart = 0) {
  return {"j-ship", 1, replica, restart};
}

// Appends `text` to the file at `path`, as a replica writes (O_APPEND), making its directories.
void Append(const std::string& path, const std::string& text) {
  REQUIRE(MakeDirs(std::filesystem::path(path).parent_path().string()).ok());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
}

// Lines of 64 bytes, "line 000001 xxx...\n", numbered from `first` to `last`.
std::string Lines(int first, int last) {
  std::string text;
  for (int n = first; n <= last; ++n) {
    std::string line = absl::StrFormat("line %06d ", n);
    line.resize(63, 'x');
    text += line + "\n";
  }
  return text;
}

// What a reader gets following next_offset from 0 (the marker in place of a dropped range).
std::string ReaderText(const std::string& path) {
  std::string out;
  int64_t offset = 0;
  while (true) {
    absl::StatusOr<LogChunk> chunk = ReadLogChunk(path, offset, 1 << 20);
    REQUIRE(chunk.ok());
    if (chunk->data.empty()) return out;
    out += chunk->data;
    offset = chunk->next_offset;
  }
}

struct Round {
  std::vector<LogPiece> pieces;
  bool more = false;
  LogShipState::Applied applied;
  int64_t data_bytes = 0;
};

// One request: a scan, the pieces, the copy's answer applied.
Round Ship(LogShipState& state, FakeLogCopy& copy, const LogShipState::EndedFn& ended,
           absl::Time now = absl::Now()) {
  state.Scan();
  Round round;
  round.pieces = state.NextPieces(ended, now, &round.more);
  trainctl::v1::ShipLogsRequest request;
  for (const LogPiece& piece : round.pieces) {
    *request.add_pieces() = piece;
    round.data_bytes += static_cast<int64_t>(piece.data().size());
    // Every piece says when it was read and how large the file was.
    CHECK(piece.time_ms() == absl::ToUnixMillis(now));
    if (!piece.gap()) CHECK(piece.data().size() == uint64_t(piece.next_offset() - piece.offset()));
  }
  absl::StatusOr<LogShipState::Applied> applied =
      state.Apply(request.pieces(), copy.Take(request), now);
  REQUIRE(applied.ok());
  round.applied = *applied;
  return round;
}

// Ships until a request carries nothing; returns how many requests carried something.
int ShipAll(LogShipState& state, FakeLogCopy& copy, const LogShipState::EndedFn& ended) {
  for (int rounds = 0; rounds < 1000; ++rounds) {
    if (Ship(state, copy, ended).pieces.empty()) return rounds;
  }
  FAIL("the shipper never ran out of pieces");
  return -1;
}

LogShipState::Options OptionsOf(const TempDir& dir, int64_t max_request_bytes = int64_t{1} << 20,
                                int max_probes = 256) {
  LogShipState::Options options;
  options.work_dir = dir.path();
  options.max_request_bytes = max_request_bytes;
  options.max_probes = max_probes;
  options.retry_after = absl::Seconds(5);
  return options;
}

const LogShipState::EndedFn kRunning = [](const std::string&) { return false; };
const LogShipState::EndedFn kEnded = [](const std::string&) { return true; };

TEST_CASE("a run's log ships as plain pieces in order after one probe", "[log_ship]") {
  TempDir dir;
  LogShipState state(OptionsOf(dir));
  FakeLogCopy copy;
  const std::string run = MakeRunId(RunOf("w-0"));
  const std::string log = RunLogPath(dir.path(), RunOf("w-0"));
  Append(log, "hello\n");

  Round probe = Ship(state, copy, kRunning);
  REQUIRE(probe.pieces.size() == 1);
  CHECK(probe.pieces[0].run_id() == run);
  CHECK(probe.pieces[0].data().empty());
  CHECK_FALSE(probe.pieces[0].gap());
  CHECK_FALSE(probe.pieces[0].final());
  CHECK(probe.pieces[0].file_size() == 6);
  CHECK(state.Run(run)->known);
  CHECK(state.BacklogBytes() == 6);

  Round first = Ship(state, copy, kRunning);
  REQUIRE(first.pieces.size() == 1);
  CHECK(first.pieces[0].offset() == 0);
  CHECK(first.pieces[0].next_offset() == 6);
  CHECK(first.pieces[0].data() == "hello\n");
  CHECK(first.applied.shipped_bytes == 6);
  CHECK(state.BacklogBytes() == 0);

  CHECK(Ship(state, copy, kRunning).pieces.empty());  // nothing new
  Append(log, "world\n");
  Round second = Ship(state, copy, kRunning);
  REQUIRE(second.pieces.size() == 1);
  CHECK(second.pieces[0].offset() == 6);
  CHECK(second.pieces[0].data() == "world\n");
  CHECK(copy.Get(run).text == "hello\nworld\n");
  CHECK_FALSE(copy.Get(run).final);
  CHECK(copy.missed_pieces() == 0);
}

TEST_CASE("an answer at another offset resynchronises the run", "[log_ship]") {
  TempDir dir;
  LogShipState state(OptionsOf(dir));
  FakeLogCopy copy;
  const std::string run = MakeRunId(RunOf("w-0"));
  const std::string log = RunLogPath(dir.path(), RunOf("w-0"));
  const std::string text = Lines(1, 20);
  Append(log, text);
  // The copy already holds the first 5 lines (an earlier agent shipped them): the probe says so,
  // and shipping continues there.
  copy.Seed(run, text.substr(0, 320), 320);
  Ship(state, copy, kRunning);
  CHECK(state.Run(run)->acked == 320);
  Round rest = Ship(state, copy, kRunning);
  REQUIRE(rest.pieces.size() == 1);
  CHECK(rest.pieces[0].offset() == 320);
  CHECK(copy.Get(run).text == text);

  // The copy lost its end (a scheduler restored from an older state): the piece sent is not
  // taken, the answer names the copy's end, and the next request ships from there.
  copy.Seed(run, text.substr(0, 640), 640);
  Append(log, Lines(21, 22));
  Round missed = Ship(state, copy, kRunning);
  REQUIRE(missed.pieces.size() == 1);
  CHECK(missed.pieces[0].offset() == 1280);
  CHECK(missed.applied.shipped_bytes == 0);
  CHECK(state.Run(run)->acked == 640);
  ShipAll(state, copy, kRunning);
  CHECK(copy.Get(run).text == ReadFile(log));

  // A new stream: every run is probed again, and nothing is sent twice.
  const int64_t missed_before = copy.missed_pieces();
  state.Resync();
  CHECK_FALSE(state.Run(run)->known);
  Append(log, Lines(23, 23));
  Round again = Ship(state, copy, kRunning);
  REQUIRE(again.pieces.size() == 1);
  CHECK(again.pieces[0].data().empty());
  ShipAll(state, copy, kRunning);
  CHECK(copy.Get(run).text == ReadFile(log));
  CHECK(copy.missed_pieces() == missed_before);
}

TEST_CASE("a capped log ships its dropped range as one gap piece", "[log_ship]") {
  TempDir dir;
  constexpr int64_t kLimit = 64 * 1024;
  LogShipState state(OptionsOf(dir));
  FakeLogCopy copy;
  const std::string run = MakeRunId(RunOf("w-0"));
  const std::string log = RunLogPath(dir.path(), RunOf("w-0"));
  Append(log, Lines(1, 4000));  // 256000 bytes, four times the limit
  shim::LogCapper capper;
  REQUIRE(capper.Open(log.c_str(), kLimit));
  capper.Check();
  REQUIRE(capper.active());  // punching holes works on this file system
  const shim::DroppedRange dropped = capper.dropped();
  REQUIRE_FALSE(dropped.empty());

  SECTION("shipped from the start") {
    Ship(state, copy, kEnded);  // the probe
    Round round = Ship(state, copy, kEnded);
    REQUIRE(round.pieces.size() == 3);
    CHECK(round.pieces[0].offset() == 0);
    CHECK(round.pieces[0].next_offset() == dropped.head_end);
    CHECK_FALSE(round.pieces[0].gap());
    CHECK(round.pieces[1].gap());
    CHECK(round.pieces[1].offset() == dropped.head_end);
    CHECK(round.pieces[1].next_offset() == dropped.tail_start);
    CHECK(round.pieces[1].data() ==
          DroppedMarker(dropped.tail_start - dropped.head_end, dropped.limit_bytes));
    CHECK_FALSE(round.pieces[2].gap());
    CHECK(round.pieces[2].offset() == dropped.tail_start);
    CHECK(round.pieces[2].next_offset() == 256000);
    CHECK(round.pieces[2].final());
    CHECK(round.applied.shipped_bytes == 256000 - (dropped.tail_start - dropped.head_end));
    CHECK(copy.Get(run).text == ReaderText(log));  // what a reader of the agent gets
  }
  SECTION("shipped up to the middle before the cap dropped it") {
    const int64_t shipped = dropped.head_end + 640;
    copy.Seed(run, Lines(1, 4000).substr(0, shipped), shipped);
    Ship(state, copy, kEnded);  // the probe
    Round round = Ship(state, copy, kEnded);
    REQUIRE(round.pieces.size() == 2);
    CHECK(round.pieces[0].gap());
    CHECK(round.pieces[0].offset() == shipped);
    CHECK(round.pieces[0].next_offset() == dropped.tail_start);
    // After bytes that are gone, the marker starts a line of its own.
    CHECK(round.pieces[0].data() ==
          "\n" + DroppedMarker(dropped.tail_start - shipped, dropped.limit_bytes));
    CHECK(round.pieces[1].offset() == dropped.tail_start);
    CHECK(round.pieces[1].final());
    const std::string original = Lines(1, 4000);
    CHECK(copy.Get(run).text == original.substr(0, shipped) + round.pieces[0].data() +
                                    original.substr(static_cast<size_t>(dropped.tail_start)));
  }
  FakeLogCopy::Copy got = copy.Get(run);
  CHECK(got.final);
  CHECK(got.stored == 256000);
  CHECK(copy.malformed() == 0);
  CHECK(copy.missed_pieces() == 0);
}

TEST_CASE("a piece is final only when the run ended and it reaches the end of the file",
          "[log_ship]") {
  TempDir dir;
  LogShipState state(OptionsOf(dir, 1000));
  FakeLogCopy copy;
  const std::string run = MakeRunId(RunOf("w-0"));
  const std::string log = RunLogPath(dir.path(), RunOf("w-0"));
  Append(log, Lines(1, 40));  // 2560 bytes: three requests of at most 1000

  bool ended = false;
  const LogShipState::EndedFn ask = [&](const std::string& id) {
    CHECK(id == run);
    return ended;
  };
  ShipAll(state, copy, ask);
  CHECK(copy.Get(run).stored == 2560);
  CHECK_FALSE(copy.Get(run).final);
  CHECK_FALSE(state.Run(run)->final);

  // Ended with nothing left: one empty final piece at the end of the file.
  ended = true;
  Round end = Ship(state, copy, ask);
  REQUIRE(end.pieces.size() == 1);
  CHECK(end.pieces[0].final());
  CHECK(end.pieces[0].data().empty());
  CHECK(end.pieces[0].offset() == 2560);
  CHECK(end.pieces[0].next_offset() == 2560);
  CHECK(end.pieces[0].file_size() == 2560);
  CHECK(copy.Get(run).final);
  CHECK(state.Run(run)->final);
  CHECK(Ship(state, copy, ask).pieces.empty());
  CHECK(state.BacklogBytes() == 0);

  // A run that ended with bytes to ship: only the piece that reaches the end is final.
  const std::string other = MakeRunId(RunOf("w-1"));
  Append(RunLogPath(dir.path(), RunOf("w-1")), Lines(1, 40));
  int finals = 0;
  for (int i = 0; i < 10; ++i) {
    Round round = Ship(state, copy, kEnded);
    CHECK(round.data_bytes <= 1000);
    for (const LogPiece& piece : round.pieces) {
      if (!piece.final()) continue;
      ++finals;
      CHECK(piece.next_offset() == 2560);
    }
  }
  CHECK(finals == 1);
  CHECK(copy.Get(other).final);
  CHECK(copy.Get(other).text == Lines(1, 40));
}

TEST_CASE("a refused run is not shipped again, a retried one after a while", "[log_ship]") {
  TempDir dir;
  LogShipState state(OptionsOf(dir));
  FakeLogCopy copy;
  const std::string refused = MakeRunId(RunOf("w-0"));
  const std::string retried = MakeRunId(RunOf("w-1"));
  Append(RunLogPath(dir.path(), RunOf("w-0")), "a\n");
  Append(RunLogPath(dir.path(), RunOf("w-1")), "b\n");
  copy.Refuse(refused);
  copy.SetRetry(retried, true);

  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  Round first = Ship(state, copy, kRunning, t0);
  REQUIRE(first.applied.refused.size() == 1);
  CHECK(first.applied.refused[0].first == refused);
  CHECK(first.applied.retry == "the store is full");
  CHECK(state.Run(refused)->refused);
  CHECK(state.BacklogBytes() == 2);  // the retried run's bytes; the refused run's never ship

  Append(RunLogPath(dir.path(), RunOf("w-0")), "more\n");
  CHECK(Ship(state, copy, kRunning, t0 + absl::Seconds(1)).pieces.empty());
  state.Resync();  // a new stream changes nothing for a refused run
  copy.SetRetry(retried, false);
  Round later = Ship(state, copy, kRunning, t0 + absl::Seconds(2));
  REQUIRE(later.pieces.size() == 1);  // Resync() ended the retried run's wait
  CHECK(later.pieces[0].run_id() == retried);
  CHECK(later.applied.refused.empty());
  ShipAll(state, copy, kRunning);
  CHECK(copy.Get(retried).text == "b\n");
  CHECK(copy.Get(refused).text.empty());

  // Without a new stream, a retry waits retry_after.
  copy.SetRetry(retried, true);
  Append(RunLogPath(dir.path(), RunOf("w-1")), "c\n");
  Round busy = Ship(state, copy, kRunning, t0 + absl::Seconds(10));
  CHECK(busy.applied.retry == "the store is full");
  copy.SetRetry(retried, false);
  CHECK(Ship(state, copy, kRunning, t0 + absl::Seconds(14)).pieces.empty());
  CHECK(Ship(state, copy, kRunning, t0 + absl::Seconds(16)).pieces.size() == 1);
  CHECK(copy.Get(retried).text == "b\nc\n");
}

TEST_CASE("the runs of vanished log files are forgotten, other files never were runs",
          "[log_ship]") {
  TempDir dir;
  LogShipState state(OptionsOf(dir));
  const std::string logs = dir.path() + "/logs/j-ship";
  Append(RunLogPath(dir.path(), RunOf("w-0")), "a\n");
  Append(RunLogPath(dir.path(), RunOf("w-1", 2)), "b\n");
  Append(RunLogPath(dir.path(), {"j-other", 3, "ps", 0}), "c\n");
  // Sidecars and strangers.
  Append(RunLogPath(dir.path(), RunOf("w-0")) + shim::kDroppedSuffix, "head_end 1\n");
  Append(logs + "/attempt-1/notes.txt", "x");
  Append(logs + "/attempt-1/w-2.restart-x.log", "x");
  Append(logs + "/attempt-1/.restart-0.log", "x");
  Append(logs + "/attempt-01/w-3.restart-0.log", "x");
  Append(logs + "/attempt-x/w-4.restart-0.log", "x");
  Append(logs + "/stray.log", "x");
  REQUIRE(MakeDirs(logs + "/attempt-1/d.restart-0.log").ok());

  state.Scan();
  CHECK(state.size() == 3);
  CHECK(state.Run("j-ship/1/w-0/0"));
  CHECK(state.Run("j-ship/1/w-1/2"));
  CHECK(state.Run("j-other/3/ps/0"));
  CHECK(state.Run("j-ship/1/w-0/0")->file_size == 2);

  std::filesystem::remove(RunLogPath(dir.path(), RunOf("w-1", 2)));
  std::filesystem::remove_all(dir.path() + "/logs/j-other");
  state.Scan();
  CHECK(state.size() == 1);
  CHECK_FALSE(state.Run("j-ship/1/w-1/2"));
  CHECK_FALSE(state.Run("j-other/3/ps/0"));
  std::filesystem::remove_all(dir.path() + "/logs");
  state.Scan();
  CHECK(state.size() == 0);
}

TEST_CASE("a request carries at most its budget of data, and every log gets its turn",
          "[log_ship]") {
  TempDir dir;
  constexpr int64_t kBudget = int64_t{1} << 20;
  LogShipState state(OptionsOf(dir, kBudget, 2));
  FakeLogCopy copy;
  const std::string big = Lines(1, 11200);  // 716800 bytes each
  for (const char* replica : {"w-0", "w-1", "w-2"}) {
    Append(RunLogPath(dir.path(), RunOf(replica)), big);
  }
  // Probes first, a bounded number per request.
  Round probes = Ship(state, copy, kRunning);
  CHECK(probes.pieces.size() == 2);
  CHECK(probes.more);
  Round rest = Ship(state, copy, kRunning);  // the last probe, and the first bytes
  CHECK(rest.pieces.front().data().empty());
  CHECK(rest.data_bytes <= kBudget);
  std::vector<std::string> first_runs;
  for (int i = 0; i < 20; ++i) {
    Round round = Ship(state, copy, kRunning);
    if (round.pieces.empty()) break;
    CHECK(round.data_bytes <= kBudget);
    first_runs.push_back(round.pieces.front().run_id());
  }
  for (const char* replica : {"w-0", "w-1", "w-2"}) {
    CHECK(copy.Get(MakeRunId(RunOf(replica))).text == big);
  }
  // Round robin: a request starts after the run the last one ended with.
  REQUIRE(first_runs.size() >= 2);
  CHECK(first_runs[0] != first_runs[1]);
  CHECK(copy.missed_pieces() == 0);
  CHECK(state.BacklogBytes() == 0);
}

TEST_CASE("an answer that does not match the request is an error", "[log_ship]") {
  TempDir dir;
  LogShipState state(OptionsOf(dir));
  Append(RunLogPath(dir.path(), RunOf("w-0")), "a\n");
  state.Scan();
  bool more = false;
  trainctl::v1::ShipLogsRequest request;
  for (LogPiece& piece : state.NextPieces(kRunning, absl::Now(), &more)) {
    *request.add_pieces() = std::move(piece);
  }
  REQUIRE(request.pieces_size() == 1);
  trainctl::v1::ShipLogsResponse none;
  CHECK(absl::IsInvalidArgument(state.Apply(request.pieces(), none, absl::Now()).status()));
  trainctl::v1::ShipLogsResponse other;
  other.add_runs()->set_run_id("j-x/1/w/0");
  CHECK(absl::IsInvalidArgument(state.Apply(request.pieces(), other, absl::Now()).status()));
  CHECK_FALSE(state.Run("j-ship/1/w-0/0")->known);
}

}  // namespace log_ship_test
}  // namespace trainctl::agent
