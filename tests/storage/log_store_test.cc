// LogStore's contract (storage/log_store.h, storage/log_rules.h) on both backends: FileLogStore,
// and PgLogStore when the [backend] tests run again on PostgreSQL (tests/storage/test_store.h).
// Pieces taken only where the copy ends, probes, gaps and reads across them, final copies,
// another node refused, malformed pieces, OffsetSince, TailOffset, DeleteJob, Jobs() and a
// reopen; and, on PostgreSQL alone, the schema 17 migration and a lost connection.
#include "storage/log_store.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "storage/log_rules.h"
#include "tests/storage/log_testing.h"

namespace trainctl::storage {
// Named, not anonymous: the test target is a unity build.
namespace log_store_test {

using namespace log_testing;

const std::string kRun = "j-1/1/worker-0/0";

std::map<std::string, LogJobUsage> JobsOf(LogStore& store) {
  absl::StatusOr<std::vector<LogJobUsage>> jobs = store.Jobs();
  INFO(jobs.status().ToString());
  REQUIRE(jobs.ok());
  std::map<std::string, LogJobUsage> out;
  for (const LogJobUsage& job : *jobs) out[job.job_id] = job;
  return out;
}

int64_t Tail(LogStore& store, const std::string& run_id, int lines) {
  absl::StatusOr<int64_t> offset = store.TailOffset(run_id, lines);
  INFO(offset.status().ToString());
  REQUIRE(offset.ok());
  return *offset;
}

int64_t Since(LogStore& store, const std::string& run_id, int64_t since_ms) {
  absl::StatusOr<int64_t> offset = store.OffsetSince(run_id, since_ms);
  INFO(offset.status().ToString());
  REQUIRE(offset.ok());
  return *offset;
}

TEST_CASE("log pieces taken in order are read back, sliced at any offset", "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  LogRunState st = Take(*store, Piece(kRun, 0, "hello ", 100));
  CHECK(st.job_id == "j-1");
  CHECK(st.node == "node-a");
  CHECK(st.stored == 6);
  CHECK(st.file_size == 6);
  CHECK(st.last_ms == 100);
  CHECK_FALSE(st.final);
  CHECK(st.bytes > 6);
  Take(*store, Piece(kRun, 6, "world\n", 200));
  st = Take(*store, Piece(kRun, 12, "bye\n", 300));
  CHECK(st.stored == 16);
  CHECK(st.last_ms == 300);
  CHECK(st.bytes > 16);
  std::optional<LogRunState> state = StateOf(*store, kRun);
  REQUIRE(state.has_value());
  CHECK(Same(*state, st));

  const std::string text = "hello world\nbye\n";
  for (int64_t offset = 0; offset <= 16; ++offset) {
    for (int64_t max = 1; max <= 17; ++max) {
      LogSlice slice = ReadOk(*store, kRun, offset, max);
      const std::string want = text.substr(offset, std::min<int64_t>(max, 16 - offset));
      INFO("offset " << offset << " max " << max);
      CHECK(slice.data == want);
      CHECK(slice.next_offset == offset + static_cast<int64_t>(want.size()));
      CHECK(slice.state.stored == 16);
    }
  }
  LogSlice past = ReadOk(*store, kRun, 100);
  CHECK(past.data.empty());
  CHECK(past.next_offset == 100);
  CHECK(ReadAll(*store, kRun, 0, 5) == text);

  const std::string other = "j-1/1/worker-0/1";
  CHECK_FALSE(StateOf(*store, other).has_value());
  CHECK(store->Read(other, 0, 10).status().code() == absl::StatusCode::kNotFound);
  CHECK(store->OffsetSince(other, 0).status().code() == absl::StatusCode::kNotFound);
  CHECK(store->TailOffset(other, 1).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a log piece not where the copy ends is not written, and only raises file_size",
          "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  Take(*store, Piece(kRun, 0, "abc"));
  v1::LogPiece ahead = Piece(kRun, 10, "xyz");
  LogRunState st = Take(*store, ahead);
  CHECK(st.stored == 3);
  CHECK(st.file_size == 13);
  st = Take(*store, Piece(kRun, 0, "abc"));  // again: not taken twice
  CHECK(st.stored == 3);
  CHECK(st.file_size == 13);
  st = Take(*store, Piece(kRun, 1, "bcd"));
  CHECK(st.stored == 3);
  st = Take(*store, Probe(kRun, 3, 20));
  CHECK(st.stored == 3);
  CHECK(st.file_size == 20);
  st = Take(*store, Probe(kRun, 0, 5));
  CHECK(st.file_size == 20);
  CHECK(ReadAll(*store, kRun) == "abc");
  st = Take(*store, Piece(kRun, 3, "defg"));
  CHECK(st.stored == 7);
  CHECK(st.file_size == 20);
  CHECK(ReadAll(*store, kRun) == "abcdefg");
  CHECK(StateOf(*store, kRun)->file_size == 20);
}

TEST_CASE("a probe of a run never seen makes an empty copy that tells the file size",
          "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  LogRunState st = Take(*store, Probe(kRun, 0, 42), "node-b");
  CHECK(st.stored == 0);
  CHECK(st.file_size == 42);
  std::optional<LogRunState> state = StateOf(*store, kRun);
  REQUIRE(state.has_value());
  CHECK(state->node == "node-b");
  CHECK(state->file_size == 42);
  LogSlice slice = ReadOk(*store, kRun, 0);
  CHECK(slice.data.empty());
  CHECK(slice.next_offset == 0);
  CHECK(Tail(*store, kRun, 3) == 0);
  CHECK(Since(*store, kRun, 0) == 0);
  // A piece past the start of a new run is not taken either.
  st = Take(*store, Piece("j-1/1/worker-1/0", 5, "late"));
  CHECK(st.stored == 0);
  CHECK(st.file_size == 9);
  CHECK(JobsOf(*store).count("j-1") == 1);
}

TEST_CASE("a gap is read as its marker whole, and a read of written bytes stops before it",
          "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  const std::string marker = "[1000 bytes dropped]\n";
  Take(*store, Piece(kRun, 0, "line1\n"));
  LogRunState st = Take(*store, GapPiece(kRun, 6, 1006, marker));
  CHECK(st.stored == 1006);
  Take(*store, Piece(kRun, 1006, "line2\nli"));
  Take(*store, Piece(kRun, 1014, "ne3\n"));

  LogSlice slice = ReadOk(*store, kRun, 0);
  CHECK(slice.data == "line1\n");
  CHECK(slice.next_offset == 6);
  slice = ReadOk(*store, kRun, 3);
  CHECK(slice.data == "e1\n");
  CHECK(slice.next_offset == 6);
  for (int64_t at : {6, 500, 1005}) {
    slice = ReadOk(*store, kRun, at, 1);
    CHECK(slice.data == marker);
    CHECK(slice.next_offset == 1006);
  }
  slice = ReadOk(*store, kRun, 1006);
  CHECK(slice.data == "line2\nline3\n");
  CHECK(slice.next_offset == 1018);
  slice = ReadOk(*store, kRun, 1010, 3);
  CHECK(slice.data == "2\nl");
  CHECK(slice.next_offset == 1013);
  CHECK(ReadAll(*store, kRun) == "line1\n" + marker + "line2\nline3\n");

  // A gap of no length is taken but never read.
  st = Take(*store, GapPiece(kRun, 1018, 1018, "[nothing]\n"));
  CHECK(st.stored == 1018);
  slice = ReadOk(*store, kRun, 1018);
  CHECK(slice.data.empty());
  CHECK(slice.next_offset == 1018);
  Take(*store, Piece(kRun, 1018, "end\n"));
  slice = ReadOk(*store, kRun, 1014);
  CHECK(slice.data == "ne3\nend\n");
  CHECK(slice.next_offset == 1022);
}

TEST_CASE("a final piece completes the copy, and nothing is taken after it", "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  Take(*store, Piece(kRun, 0, "a\n", 100));
  LogRunState st = Take(*store, Final(Piece(kRun, 2, "b\n", 200)));
  CHECK(st.final);
  CHECK(st.stored == 4);
  v1::LogPiece after = Piece(kRun, 4, "c\n", 300);
  after.set_file_size(100);
  st = Take(*store, after);
  CHECK(st.final);
  CHECK(st.stored == 4);
  CHECK(st.file_size == 4);
  CHECK(st.last_ms == 200);
  st = Take(*store, Probe(kRun, 4, 100));
  CHECK(st.file_size == 4);
  CHECK(ReadAll(*store, kRun) == "a\nb\n");
  CHECK(StateOf(*store, kRun)->final);

  // Final with no bytes, and a final gap.
  const std::string empty_final = "j-1/1/worker-1/0";
  Take(*store, Piece(empty_final, 0, "x"));
  st = Take(*store, Final(Piece(empty_final, 1, "")));
  CHECK(st.final);
  CHECK(st.stored == 1);
  CHECK(ReadAll(*store, empty_final) == "x");
  const std::string gap_final = "j-1/1/worker-2/0";
  st = Take(*store, Final(GapPiece(gap_final, 0, 50, "[50 bytes dropped]\n")));
  CHECK(st.final);
  CHECK(st.stored == 50);
  LogSlice slice = ReadOk(*store, gap_final, 0);
  CHECK(slice.data == "[50 bytes dropped]\n");
  CHECK(slice.next_offset == 50);
}

TEST_CASE("another node's piece of a run is refused", "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  Take(*store, Piece(kRun, 0, "mine\n"));
  for (const v1::LogPiece& piece : {Piece(kRun, 5, "theirs\n"), Probe(kRun, 5, 100)}) {
    absl::StatusOr<LogRunState> st = store->Append("node-b", "j-1", piece);
    CHECK(st.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(st.status().message().find("node-a") != absl::string_view::npos);
  }
  std::optional<LogRunState> state = StateOf(*store, kRun);
  CHECK(state->node == "node-a");
  CHECK(state->stored == 5);
  CHECK(state->file_size == 5);
}

TEST_CASE("malformed pieces, run ids and reads are refused, and nothing is kept of them",
          "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  auto refused = [&](const std::string& job_id, const v1::LogPiece& piece,
                     const std::string& node = "node-a") {
    absl::StatusOr<LogRunState> st = store->Append(node, job_id, piece);
    INFO(piece.run_id() << " " << st.status().ToString());
    CHECK(st.status().code() == absl::StatusCode::kInvalidArgument);
  };
  v1::LogPiece backwards = Piece(kRun, 5, "");
  backwards.set_next_offset(3);
  refused("j-1", backwards);
  v1::LogPiece short_data = Piece(kRun, 0, "abc");
  short_data.set_next_offset(5);
  refused("j-1", short_data);
  v1::LogPiece negative = Piece(kRun, 0, "abc");
  negative.set_offset(-3);
  negative.set_next_offset(0);
  refused("j-1", negative);
  refused("j-2", Piece(kRun, 0, "abc"));
  refused("j-1", Piece(kRun, 0, "abc"), "");
  refused("j-1", Piece(kRun, 0, std::string(kMaxLogPieceBytes + 1, 'x')));
  for (const std::string bad : {"j-1/1/worker-0", "j-1/01/worker-0/0", "j-1/1/worker-0/0/1",
                                "j-1/1/../0", "j-1/1/a b/0", "j-1/-1/worker-0/0"}) {
    refused("j-1", Piece(bad, 0, "abc"));
    CHECK(store->State(bad).status().code() == absl::StatusCode::kInvalidArgument);
  }
  for (const std::string bad : {"../etc/1/w/0", ".j/1/w/0", "/1/w/0"}) {
    refused(JobOf(bad), Piece(bad, 0, "abc"));
    CHECK(store->DeleteJob(JobOf(bad)).code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK_FALSE(StateOf(*store, kRun).has_value());
  CHECK(JobsOf(*store).empty());

  Take(*store, Piece(kRun, 0, "abc"));
  CHECK(store->Read(kRun, -1, 10).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(store->Read(kRun, 0, 0).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(store->Read("nope", 0, 10).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("OffsetSince finds the first piece read at or after a time", "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  Take(*store, Piece(kRun, 0, "a\n", 100));
  Take(*store, Piece(kRun, 2, "b\n", 200));
  Take(*store, GapPiece(kRun, 4, 10, "[gap]\n", 300));
  Take(*store, Piece(kRun, 10, "c\n", 400));
  CHECK(Since(*store, kRun, 0) == 0);
  CHECK(Since(*store, kRun, 100) == 0);
  CHECK(Since(*store, kRun, 150) == 2);
  CHECK(Since(*store, kRun, 250) == 4);
  CHECK(Since(*store, kRun, 300) == 4);
  CHECK(Since(*store, kRun, 350) == 10);
  CHECK(Since(*store, kRun, 401) == 12);
}

TEST_CASE("TailOffset finds where the last lines start, a gap's marker one line",
          "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  const std::string ended = "j-1/1/worker-0/0";  // "one\ntwo\nthree\nfour\n"
  Take(*store, Piece(ended, 0, "one\ntwo\n"));
  Take(*store, Piece(ended, 8, "three\nfour\n"));
  CHECK(Tail(*store, ended, 0) == 19);
  CHECK(Tail(*store, ended, 1) == 14);
  CHECK(Tail(*store, ended, 2) == 8);
  CHECK(Tail(*store, ended, 3) == 4);
  CHECK(Tail(*store, ended, 4) == 0);
  CHECK(Tail(*store, ended, 5) == 0);

  const std::string open_line = "j-1/1/worker-1/0";  // "one\ntwo\nthree", no last "\n"
  Take(*store, Piece(open_line, 0, "one\ntwo\nthr"));
  Take(*store, Piece(open_line, 11, "ee"));
  CHECK(Tail(*store, open_line, 1) == 8);
  CHECK(Tail(*store, open_line, 2) == 4);
  CHECK(Tail(*store, open_line, 3) == 0);

  // "a\nb" [gap 3..103] "c\nd\n": lines start at 0, 2, 3 (the marker), 103 and 105.
  const std::string gapped = "j-1/1/worker-2/0";
  Take(*store, Piece(gapped, 0, "a\nb"));
  Take(*store, GapPiece(gapped, 3, 103, "[100 bytes dropped]\n"));
  Take(*store, Piece(gapped, 103, "c\nd\n"));
  CHECK(Tail(*store, gapped, 1) == 105);
  CHECK(Tail(*store, gapped, 2) == 103);
  CHECK(Tail(*store, gapped, 3) == 3);
  CHECK(Tail(*store, gapped, 4) == 2);
  CHECK(Tail(*store, gapped, 5) == 0);
  CHECK(Tail(*store, gapped, 6) == 0);

  // A line longer than what a backwards read takes at once.
  const std::string long_line = "j-1/1/worker-3/0";
  Take(*store, Piece(long_line, 0, "first\n" + std::string(200'000, 'x') + "\n"));
  Take(*store, Piece(long_line, 200'007, "y"));
  CHECK(Tail(*store, long_line, 1) == 200'007);
  CHECK(Tail(*store, long_line, 2) == 6);
  CHECK(Tail(*store, long_line, 3) == 0);
}

TEST_CASE("DeleteJob deletes every run of a job and no other's", "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  const std::vector<std::string> doomed = {"j-1/1/w-0/0", "j-1/1/w-1/0", "j-1/2/w-0/3"};
  const std::vector<std::string> kept = {"j-10/1/w-0/0", "j-2/1/w-0/0"};
  for (const std::string& run : doomed) Take(*store, Piece(run, 0, "bytes of " + run + "\n"));
  for (const std::string& run : kept) Take(*store, Piece(run, 0, "bytes of " + run + "\n"));
  CHECK(JobsOf(*store).size() == 3);
  REQUIRE(store->DeleteJob("j-1").ok());
  for (const std::string& run : doomed) {
    CHECK_FALSE(StateOf(*store, run).has_value());
    CHECK(store->Read(run, 0, 10).status().code() == absl::StatusCode::kNotFound);
  }
  for (const std::string& run : kept) CHECK(ReadAll(*store, run) == "bytes of " + run + "\n");
  std::map<std::string, LogJobUsage> jobs = JobsOf(*store);
  CHECK(jobs.size() == 2);
  CHECK(jobs.count("j-1") == 0);
  CHECK(store->DeleteJob("j-1").ok());
  CHECK(store->DeleteJob("j-9").ok());
  // A run of the job shipped again starts a new copy.
  CHECK(Take(*store, Piece(doomed[0], 0, "again\n")).stored == 6);
  CHECK(ReadAll(*store, doomed[0]) == "again\n");
}

TEST_CASE("Jobs sums each job's bytes and latest time, and tells whether every run is final",
          "[backend][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  CHECK(JobsOf(*store).empty());
  Take(*store, Piece("j-1/1/w-0/0", 0, "a\n", 100));
  Take(*store, Piece("j-1/1/w-0/0", 2, "b\n", 300));
  Take(*store, Final(Piece("j-1/1/w-1/0", 0, "c\n", 500)));
  Take(*store, Final(Piece("j-2/1/w-0/0", 0, std::string(1000, 'z'), 50)));
  std::map<std::string, LogJobUsage> jobs = JobsOf(*store);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs["j-1"].bytes ==
        StateOf(*store, "j-1/1/w-0/0")->bytes + StateOf(*store, "j-1/1/w-1/0")->bytes);
  CHECK(jobs["j-1"].bytes >= 6);
  CHECK(jobs["j-1"].last_ms == 500);
  CHECK_FALSE(jobs["j-1"].all_final);
  CHECK(jobs["j-2"].bytes == StateOf(*store, "j-2/1/w-0/0")->bytes);
  CHECK(jobs["j-2"].bytes >= 1000);
  CHECK(jobs["j-2"].last_ms == 50);
  CHECK(jobs["j-2"].all_final);
  Take(*store, Final(Piece("j-1/1/w-0/0", 4, "", 700)));
  jobs = JobsOf(*store);
  CHECK(jobs["j-1"].all_final);
  CHECK(jobs["j-1"].last_ms == 700);
}

TEST_CASE("log copies survive reopening the store, and go on where they ended", "[backend][logs]") {
  TestLogs logs;
  const std::vector<std::string> runs = {"j-1/1/w-0/0", "j-1/1/w-1/0", "j-2/3/w-0/1"};
  std::map<std::string, LogRunState> before;
  std::map<std::string, std::string> text;
  std::map<std::string, LogJobUsage> jobs_before;
  {
    std::unique_ptr<LogStore> store = logs.Open();
    Take(*store, Piece(runs[0], 0, "one\n", 100));
    Take(*store, GapPiece(runs[0], 4, 40, "[36 bytes dropped]\n", 200));
    Take(*store, Piece(runs[0], 40, "two\nthr", 300));
    Take(*store, Piece(runs[1], 0, "done\n", 400));
    Take(*store, Final(Piece(runs[1], 5, "", 500)));
    Take(*store, Piece(runs[2], 0, std::string(70'000, 'q') + "\n", 600));
    for (const std::string& run : runs) {
      before[run] = *StateOf(*store, run);
      text[run] = ReadAll(*store, run);
    }
    jobs_before = JobsOf(*store);
  }
  std::unique_ptr<LogStore> store = logs.Open();
  std::map<std::string, LogJobUsage> jobs = JobsOf(*store);  // before any run is read
  REQUIRE(jobs.size() == jobs_before.size());
  for (auto& [job_id, usage] : jobs_before) {
    CHECK(jobs[job_id].bytes == usage.bytes);
    CHECK(jobs[job_id].last_ms == usage.last_ms);
    CHECK(jobs[job_id].all_final == usage.all_final);
  }
  for (const std::string& run : runs) {
    std::optional<LogRunState> state = StateOf(*store, run);
    REQUIRE(state.has_value());
    INFO(run);
    CHECK(Same(*state, before[run]));
    CHECK(ReadAll(*store, run, 0, 3) == text[run]);
  }
  CHECK(Tail(*store, runs[0], 2) == 40);
  CHECK(Since(*store, runs[0], 250) == 40);
  LogRunState st = Take(*store, Piece(runs[0], 47, "ee\n", 700));
  CHECK(st.stored == 50);
  CHECK(ReadAll(*store, runs[0]) == "one\n[36 bytes dropped]\ntwo\nthree\n");
  st = Take(*store, Piece(runs[1], 5, "more\n"));
  CHECK(st.stored == 5);
  CHECK(st.final);
}

TEST_CASE("appends and reads of many runs at once keep every copy whole", "[backend][logs]") {
  TestLogs logs;
  // A small cache: runs are evicted and read again while others write.
  std::unique_ptr<LogStore> store = logs.Open(/*max_cached_runs=*/2);
  constexpr int kRuns = 6;
  constexpr int kPieces = 30;
  auto data_at = [](int run, int64_t offset) {
    return std::string(10, static_cast<char>('a' + (run + offset / 10) % 26));
  };
  auto run_id = [](int run) {
    return "j-" + std::to_string(run % 3) + "/1/w-" + std::to_string(run) + "/0";
  };
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  // Two shippers per run, each sending the piece where the copy ends as the last answer said.
  for (int t = 0; t < 2 * kRuns; ++t) {
    threads.emplace_back([&, t] {
      const int run = t % kRuns;
      int64_t at = 0;
      while (at < 10 * kPieces && !failed) {
        absl::StatusOr<LogRunState> st = store->Append(
            "node-a", "j-" + std::to_string(run % 3), Piece(run_id(run), at, data_at(run, at), at));
        if (!st.ok()) failed = true;
        if (st.ok()) at = st->stored;
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 200 && !failed; ++i) {
      if (!store->Jobs().ok()) failed = true;
      absl::StatusOr<LogSlice> slice = store->Read(run_id(i % kRuns), 0, 64);
      if (!slice.ok() && !absl::IsNotFound(slice.status())) failed = true;
    }
  });
  for (std::thread& t : threads) t.join();
  CHECK_FALSE(failed);
  for (int run = 0; run < kRuns; ++run) {
    std::string want;
    for (int64_t at = 0; at < 10 * kPieces; at += 10) want += data_at(run, at);
    CHECK(ReadAll(*store, run_id(run), 0, 77) == want);
  }
}

TEST_CASE("a PostgreSQL database at schema 16 gains the log tables when the store opens it",
          "[postgres][logs]") {
  TestStore db;
  db.Open();
  db.Exec("DROP TABLE log_pieces; DROP TABLE log_runs; UPDATE schema_version SET version = 16");
  absl::StatusOr<std::unique_ptr<PgLogStore>> early = PgLogStore::Open(db.location());
  INFO(early.status().ToString());
  CHECK(early.status().code() == absl::StatusCode::kFailedPrecondition);
  std::unique_ptr<Store> main = db.Open();
  CHECK(*main->SchemaVersion() == Store::kSchemaVersion);
  absl::StatusOr<std::unique_ptr<PgLogStore>> store = PgLogStore::Open(db.location());
  REQUIRE(store.ok());
  Take(**store, Piece(kRun, 0, "after the upgrade\n"));
  CHECK(db.QueryInt("SELECT count(*) FROM log_pieces") == 1);
}

TEST_CASE("a lost connection fails the log call as UNAVAILABLE, the next call reconnects",
          "[postgres][logs]") {
  TestLogs logs;
  std::unique_ptr<LogStore> store = logs.Open();
  std::unique_ptr<LogStore> other = logs.Open();  // a second trainctld on the same database
  Take(*store, Piece(kRun, 0, "first\n"));
  CHECK(Take(*other, Piece(kRun, 0, "first\n")).stored == 6);  // taken once
  CHECK(Take(*other, Piece(kRun, 6, "second\n")).stored == 13);
  logs.db.QueryInt(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
      "current_database() AND pid <> pg_backend_pid()");
  CHECK(store->Append("node-a", "j-1", Piece(kRun, 13, "third\n")).status().code() ==
        absl::StatusCode::kUnavailable);
  CHECK(Take(*store, Piece(kRun, 13, "third\n")).stored == 19);
  CHECK(ReadAll(*store, kRun) == "first\nsecond\nthird\n");
  CHECK(logs.db.QueryInt("SELECT count(*) FROM log_pieces") == 3);
}

}  // namespace log_store_test
}  // namespace trainctl::storage
